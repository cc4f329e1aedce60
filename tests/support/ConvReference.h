// ConvReference.h: the convolution tests' ground truth, straight from the definitions and
// independent of im2col/gemm: a direct cross-correlation loop (gather) and the transposed
// convolution as a scatter-add loop, for 1 to 3 spatial dims, in float64.
#pragma once

#include <doctest/doctest.h>

#include <vector>

#include "nn/Module.h"
#include "tensor/Tensor.h"

namespace convref {

using tensor::Shape;
using tensor::Tensor;

struct Params {
  std::vector<int64_t> stride, pad, dilation, adj;  // per spatial dim (tensor order); empty: 1 / 0
  int64_t groups = 1;
};

namespace detail {
inline int64_t at(const std::vector<int64_t>& v, size_t i, int64_t dflt) { return v.empty() ? dflt : v[i]; }
// Spatial sizes right-aligned into three slots (leading slots 1).
inline std::vector<int64_t> pad3(const Shape& s, size_t from) {
  std::vector<int64_t> r(3, 1);
  const size_t nd = s.size() - from;
  for (size_t i = 0; i < nd; ++i) r[3 - nd + i] = s[from + i];
  return r;
}
inline std::vector<int64_t> pad3v(const std::vector<int64_t>& v, size_t nd, int64_t dflt) {
  std::vector<int64_t> r(3, dflt);
  for (size_t i = 0; i < nd; ++i) r[3 - nd + i] = at(v, i, dflt);
  return r;
}
}  // namespace detail

// x [N x C x s...], w [O x C/groups x k...], b [O] or undefined: y[n, o, p] =
// b[o] + sum_{c, k} w[o, c, k] * x[n, group(o) * C/groups + c, p * stride - pad + k * dilation].
inline Tensor conv(const Tensor& x, const Tensor& w, const Tensor& b, const Params& p) {
  using namespace detail;
  const size_t nd = x.dim() - 2;
  const int64_t N = x.size(0), C = x.size(1), O = w.size(0), G = p.groups, Cg = C / G, Og = O / G;
  const auto in = pad3(x.sizes(), 2), k = pad3(w.sizes(), 2);
  const auto s = pad3v(p.stride, nd, 1), pd = pad3v(p.pad, nd, 0), d = pad3v(p.dilation, nd, 1);
  std::vector<int64_t> out(3);
  for (int i = 0; i < 3; ++i) out[i] = (in[i] + 2 * pd[i] - d[i] * (k[i] - 1) - 1) / s[i] + 1;
  const std::vector<double> xv = x.to_vector<double>(), wv = w.to_vector<double>();
  const std::vector<double> bv = b.defined() ? b.to_vector<double>() : std::vector<double>(O, 0.0);
  std::vector<double> y(N * O * out[0] * out[1] * out[2]);
  size_t idx = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t a = 0; a < out[0]; ++a)
        for (int64_t bb = 0; bb < out[1]; ++bb)
          for (int64_t cc = 0; cc < out[2]; ++cc) {
            double acc = bv[o];
            const int64_t grp = o / Og;
            for (int64_t c = 0; c < Cg; ++c)
              for (int64_t k0 = 0; k0 < k[0]; ++k0)
                for (int64_t k1 = 0; k1 < k[1]; ++k1)
                  for (int64_t k2 = 0; k2 < k[2]; ++k2) {
                    const int64_t i0 = a * s[0] - pd[0] + k0 * d[0];
                    const int64_t i1 = bb * s[1] - pd[1] + k1 * d[1];
                    const int64_t i2 = cc * s[2] - pd[2] + k2 * d[2];
                    if (i0 < 0 || i0 >= in[0] || i1 < 0 || i1 >= in[1] || i2 < 0 || i2 >= in[2]) continue;
                    const int64_t ci = grp * Cg + c;
                    acc += wv[(((o * Cg + c) * k[0] + k0) * k[1] + k1) * k[2] + k2] *
                           xv[(((n * C + ci) * in[0] + i0) * in[1] + i1) * in[2] + i2];
                  }
            y[idx++] = acc;
          }
  Shape shape{N, O};
  for (size_t i = 0; i < nd; ++i) shape.push_back(out[3 - nd + i]);
  return tensor::from_vector<double>(y, shape);
}

// x [N x C x s...], w [C x O/groups x k...] (Torch's transposed layout), b [O] or undefined:
// every input value scatters into the output: y[n, group(c) * O/groups + o, i * stride - pad +
// k * dilation] += x[n, c, i] * w[c, o, k]; output size (in - 1) * stride - 2 pad + dil (k - 1) + 1 + adj.
inline Tensor full_conv(const Tensor& x, const Tensor& w, const Tensor& b, const Params& p) {
  using namespace detail;
  const size_t nd = x.dim() - 2;
  const int64_t N = x.size(0), C = x.size(1), G = p.groups, Og = w.size(1), O = Og * G, Cg = C / G;
  const auto in = pad3(x.sizes(), 2), k = pad3(w.sizes(), 2);
  const auto s = pad3v(p.stride, nd, 1), pd = pad3v(p.pad, nd, 0), d = pad3v(p.dilation, nd, 1),
             adj = pad3v(p.adj, nd, 0);
  std::vector<int64_t> out(3);
  for (int i = 0; i < 3; ++i) out[i] = (in[i] - 1) * s[i] - 2 * pd[i] + d[i] * (k[i] - 1) + 1 + adj[i];
  const std::vector<double> xv = x.to_vector<double>(), wv = w.to_vector<double>();
  const std::vector<double> bv = b.defined() ? b.to_vector<double>() : std::vector<double>(O, 0.0);
  const int64_t P = out[0] * out[1] * out[2];
  std::vector<double> y(N * O * P);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t q = 0; q < P; ++q) y[(n * O + o) * P + q] = bv[o];
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t a = 0; a < in[0]; ++a)
        for (int64_t bb = 0; bb < in[1]; ++bb)
          for (int64_t cc = 0; cc < in[2]; ++cc) {
            const double v = xv[(((n * C + c) * in[0] + a) * in[1] + bb) * in[2] + cc];
            for (int64_t o = 0; o < Og; ++o)
              for (int64_t k0 = 0; k0 < k[0]; ++k0)
                for (int64_t k1 = 0; k1 < k[1]; ++k1)
                  for (int64_t k2 = 0; k2 < k[2]; ++k2) {
                    const int64_t j0 = a * s[0] - pd[0] + k0 * d[0];
                    const int64_t j1 = bb * s[1] - pd[1] + k1 * d[1];
                    const int64_t j2 = cc * s[2] - pd[2] + k2 * d[2];
                    if (j0 < 0 || j0 >= out[0] || j1 < 0 || j1 >= out[1] || j2 < 0 || j2 >= out[2]) continue;
                    const int64_t oo = (c / Cg) * Og + o;
                    y[(n * O + oo) * P + (j0 * out[1] + j1) * out[2] + j2] +=
                        v * wv[(((c * Og + o) * k[0] + k0) * k[1] + k1) * k[2] + k2];
                  }
          }
  Shape shape{N, O};
  for (size_t i = 0; i < nd; ++i) shape.push_back(out[3 - nd + i]);
  return tensor::from_vector<double>(y, shape);
}

// A float64 module on a batch large enough for the batch-parallel paths (per-thread column
// buffers, per-thread partial weight gradients) gives what it gives sample by sample.
inline void expect_batch_matches_samples(nn::Module& m, const Tensor& x) {
  tensor::Generator gen(31);
  const Tensor y = m.forward(x).clone();
  const Tensor gy = tensor::uniform(y.sizes(), -1, 1, gen, x.dtype());
  m.zeroGradParameters();
  const Tensor gx = m.backward(x, gy, 0.75).clone();
  std::vector<Tensor> batched;
  for (auto& g : m.gradParameters()) batched.push_back(g.clone());
  m.zeroGradParameters();
  for (int64_t n = 0; n < x.size(0); ++n) {
    INFO(m.str(), " sample ", n);
    CHECK(tensor::max_abs_diff(m.forward(x[n]), y[n]) < 1e-12);
    CHECK(tensor::max_abs_diff(m.backward(x[n], gy[n], 0.75), gx[n]) < 1e-12);
  }
  const auto summed = m.gradParameters();
  REQUIRE(summed.size() == batched.size());
  for (size_t k = 0; k < summed.size(); ++k) {
    INFO(m.str(), " gradient ", k);
    CHECK(tensor::max_abs_diff(summed[k], batched[k]) < 1e-9);
  }
}

}  // namespace convref

// OpReference.h: naive float64 CPU references for the cuDNN op tests, written from the
// definitions (direct loops), independent of both the nn kernels and cuDNN.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "tensor/Tensor.h"

namespace reference {

using tensor::Shape;
using tensor::Tensor;

struct ConvSpec {
  int nd = 2;
  std::vector<int> pad = {0, 0, 0}, stride = {1, 1, 1}, dilation = {1, 1, 1};
  int groups = 1;
  bool flip = false;  // true convolution (Theano's conv_mode='conv')
};

// x [N x C x (D) x H x W], w [K x C/groups x (kD) x kH x kW] -> y [N x K x ...]
inline Tensor conv(const Tensor& x_in, const Tensor& w_in, const ConvSpec& s) {
  const Tensor x = x_in.cpu().to(tensor::DType::Float64).contiguous();
  const Tensor w = w_in.cpu().to(tensor::DType::Float64).contiguous();
  const int nd = s.nd;
  auto dim = [&](const Tensor& t, int i) { return i < 3 - nd ? 1 : t.size(2 + i - (3 - nd)); };
  auto par = [&](const std::vector<int>& v, int i, int unused_dim_value) {
    return i < 3 - nd ? unused_dim_value : v[i - (3 - nd)];
  };
  const int64_t N = x.size(0), C = x.size(1), K = w.size(0), G = s.groups, Cg = C / G, Kg = K / G;
  int64_t in[3], k[3], out[3], p[3], st[3], dl[3];
  for (int i = 0; i < 3; ++i) {
    in[i] = dim(x, i);
    k[i] = dim(w, i);
    p[i] = par(s.pad, i, 0);
    st[i] = par(s.stride, i, 1);
    dl[i] = par(s.dilation, i, 1);
    out[i] = (in[i] + 2 * p[i] - dl[i] * (k[i] - 1) - 1) / st[i] + 1;
  }
  Shape ys = {N, K};
  for (int i = 3 - nd; i < 3; ++i) ys.push_back(out[i]);
  Tensor y = tensor::zeros(ys, tensor::DType::Float64);
  const double* xp = x.data<double>();
  const double* wp = w.data<double>();
  double* yp = y.data<double>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t kk = 0; kk < K; ++kk) {
      const int64_t g = kk / Kg;
      for (int64_t o0 = 0; o0 < out[0]; ++o0)
        for (int64_t o1 = 0; o1 < out[1]; ++o1)
          for (int64_t o2 = 0; o2 < out[2]; ++o2) {
            double acc = 0;
            for (int64_t c = 0; c < Cg; ++c)
              for (int64_t a = 0; a < k[0]; ++a)
                for (int64_t b = 0; b < k[1]; ++b)
                  for (int64_t e = 0; e < k[2]; ++e) {
                    const int64_t i0 = o0 * st[0] - p[0] + a * dl[0];
                    const int64_t i1 = o1 * st[1] - p[1] + b * dl[1];
                    const int64_t i2 = o2 * st[2] - p[2] + e * dl[2];
                    if (i0 < 0 || i0 >= in[0] || i1 < 0 || i1 >= in[1] || i2 < 0 || i2 >= in[2]) continue;
                    const int64_t wa = s.flip ? k[0] - 1 - a : a, wb = s.flip ? k[1] - 1 - b : b,
                                  we = s.flip ? k[2] - 1 - e : e;
                    acc += xp[(((n * C + g * Cg + c) * in[0] + i0) * in[1] + i1) * in[2] + i2] *
                           wp[(((kk * Cg + c) * k[0] + wa) * k[1] + wb) * k[2] + we];
                  }
            yp[(((n * K + kk) * out[0] + o0) * out[1] + o1) * out[2] + o2] = acc;
          }
    }
  return y;
}

// <a, b> in float64
inline double dot(const Tensor& a, const Tensor& b) {
  const auto x = a.to_vector<double>(), y = b.to_vector<double>();
  double s = 0;
  for (size_t i = 0; i < x.size(); ++i) s += x[i] * y[i];
  return s;
}

struct PoolSpec {
  int nd = 2;
  std::vector<int> k, s, p;
  enum Mode { Max, AvgInc, AvgExc, Sum } mode = Max;
  bool ceil = false;
};

inline int64_t pooled(int64_t in, int k, int s, int p, bool ceil) {
  int64_t o = (ceil ? (in + 2 * p - k + s - 1) / s : (in + 2 * p - k) / s) + 1;
  if (ceil && (o - 1) * s >= in + p) --o;
  return o;
}

// Torch (THNN) semantics; returns y and, for Max, the flat argmax of each output in its plane.
inline Tensor pool(const Tensor& x_in, const PoolSpec& ps, std::vector<int64_t>* argmax = nullptr) {
  const Tensor x = x_in.cpu().to(tensor::DType::Float64).contiguous();
  const int nd = ps.nd;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  int k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, p[3] = {0, 0, 0};
  for (int i = 0; i < nd; ++i) {
    const int d = 3 - nd + i;
    in[d] = x.size(2 + i);
    k[d] = ps.k[i];
    s[d] = ps.s[i];
    p[d] = ps.p[i];
    out[d] = pooled(in[d], k[d], s[d], p[d], ps.ceil);
  }
  Shape ys = {x.size(0), x.size(1)};
  for (int i = 3 - nd; i < 3; ++i) ys.push_back(out[i]);
  Tensor y = tensor::zeros(ys, tensor::DType::Float64);
  const int64_t planes = x.size(0) * x.size(1), isz = in[0] * in[1] * in[2], osz = out[0] * out[1] * out[2];
  if (argmax) argmax->assign(static_cast<size_t>(planes * osz), -1);
  const double* xp = x.data<double>();
  double* yp = y.data<double>();
  for (int64_t pl = 0; pl < planes; ++pl)
    for (int64_t a = 0; a < out[0]; ++a)
      for (int64_t b = 0; b < out[1]; ++b)
        for (int64_t c = 0; c < out[2]; ++c) {
          int64_t st[3] = {a * s[0] - p[0], b * s[1] - p[1], c * s[2] - p[2]}, en[3], pe[3];
          for (int d = 0; d < 3; ++d) {
            pe[d] = std::min<int64_t>(st[d] + k[d], in[d] + p[d]);
            en[d] = std::min<int64_t>(st[d] + k[d], in[d]);
          }
          const int64_t padded = (pe[0] - st[0]) * (pe[1] - st[1]) * (pe[2] - st[2]);
          for (int d = 0; d < 3; ++d) st[d] = std::max<int64_t>(st[d], 0);
          double acc = ps.mode == PoolSpec::Max ? -INFINITY : 0;
          int64_t best = -1;
          for (int64_t i = st[0]; i < en[0]; ++i)
            for (int64_t j = st[1]; j < en[1]; ++j)
              for (int64_t l = st[2]; l < en[2]; ++l) {
                const int64_t idx = (i * in[1] + j) * in[2] + l;
                const double v = xp[pl * isz + idx];
                if (ps.mode == PoolSpec::Max) {
                  if (best < 0 || v > acc) {
                    acc = v;
                    best = idx;
                  }
                } else {
                  acc += v;
                }
              }
          const int64_t real = (en[0] - st[0]) * (en[1] - st[1]) * (en[2] - st[2]);
          if (ps.mode == PoolSpec::AvgInc) acc /= static_cast<double>(padded);
          if (ps.mode == PoolSpec::AvgExc) acc /= static_cast<double>(real);
          const int64_t oi = (a * out[1] + b) * out[2] + c;
          yp[pl * osz + oi] = acc;
          if (argmax) (*argmax)[static_cast<size_t>(pl * osz + oi)] = best;
        }
  return y;
}

}  // namespace reference

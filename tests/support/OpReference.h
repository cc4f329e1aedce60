// OpReference.h: naive float64 CPU references for the cuDNN op tests, written from the
// definitions (direct loops), independent of both the nn kernels and cuDNN.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "tensor/Tensor.h"
#include "tests/support/ConvReference.h"

namespace reference {

using tensor::Shape;
using tensor::Tensor;

struct ConvSpec {
  int nd = 2;
  std::vector<int> pad = {0, 0, 0}, stride = {1, 1, 1}, dilation = {1, 1, 1};
  int groups = 1;
  bool flip = false;  // true convolution (Theano's conv_mode='conv')
};

// x [N x C x (D) x H x W], w [K x C/groups x (kD) x kH x kW] -> y [N x K x ...]: the twin
// tests' direct loop (convref::conv in ConvReference.h), on float64 CPU copies, with the
// kernel flipped first for a true convolution.
inline Tensor conv(const Tensor& x_in, const Tensor& w_in, const ConvSpec& s) {
  const Tensor x = x_in.cpu().to(tensor::DType::Float64).contiguous();
  Tensor w = w_in.cpu().to(tensor::DType::Float64).contiguous();
  if (s.flip) {  // w[k, c, a, b, e] <- w[k, c, kA - 1 - a, kB - 1 - b, kE - 1 - e]
    const int64_t outer = w.size(0) * w.size(1), taps = w.numel() / std::max<int64_t>(outer, 1);
    Tensor flipped = w.clone();
    const double* src = w.data<double>();
    double* dst = flipped.data<double>();
    // the spatial taps of one (k, c) pair are contiguous, and reversing all of them reverses
    // each spatial dim at once
    for (int64_t i = 0; i < outer; ++i) std::reverse_copy(src + i * taps, src + (i + 1) * taps, dst + i * taps);
    w = flipped;
  }
  convref::Params p;
  p.groups = s.groups;
  for (int i = 0; i < s.nd; ++i) {
    p.pad.push_back(s.pad[i]);
    p.stride.push_back(s.stride[i]);
    p.dilation.push_back(s.dilation[i]);
  }
  return convref::conv(x, w, Tensor(), p);
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

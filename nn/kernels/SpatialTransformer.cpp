// SpatialTransformer.cpp: both passes walk the output pixels; each pixel's sample position and
// bilinear cell are computed once and used for all C channels. The forward runs in parallel
// over output rows, the backward over the batch (each sample scatters into its own image
// gradient and sums its own theta gradient, so no two threads write one place).
#include "nn/kernels/SpatialTransformer.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "nn/Buffers.h"

namespace nn {

using tensor::Error;
using tensor::Tensor;

namespace {

constexpr int64_t kParallelGrain = 1 << 15;  // elements below which a pass runs on one thread

template <class T>
T nan() {
  return std::numeric_limits<T>::quiet_NaN();
}

// One output pixel's sample: where it reads and with which weights (Note [Spatial transformer grid]).
template <class T>
struct Cell {
  bool inside = false;  // some corner in the image
  int64_t x0 = 0, y0 = 0;
  T wx0 = 0, wx1 = 0, wy0 = 0, wy1 = 0;                     // weights of columns x0, x0 + 1 and rows y0, y0 + 1
  bool vx0 = false, vx1 = false, vy0 = false, vy1 = false;  // inside the image
};

template <class T>
Cell<T> locate(const T* th, T xs, T ys, int64_t H, int64_t W) {
  const T gx = th[0] * xs + th[1] * ys + th[2];
  const T gy = th[3] * xs + th[4] * ys + th[5];
  const T ix = (gx + 1) / 2 * static_cast<T>(W - 1);
  const T iy = (gy + 1) / 2 * static_cast<T>(H - 1);
  Cell<T> c;
  // no corner inside (a position that overflowed to Inf or NaN included: the comparisons are
  // false); this also keeps the floor below within int64
  if (!(ix > -1 && ix < static_cast<T>(W) && iy > -1 && iy < static_cast<T>(H))) return c;
  c.inside = true;
  c.x0 = static_cast<int64_t>(std::floor(ix));
  c.y0 = static_cast<int64_t>(std::floor(iy));
  c.wx1 = ix - static_cast<T>(c.x0);
  c.wx0 = 1 - c.wx1;
  c.wy1 = iy - static_cast<T>(c.y0);
  c.wy0 = 1 - c.wy1;
  c.vx0 = c.x0 >= 0;
  c.vx1 = c.x0 + 1 < W;
  c.vy0 = c.y0 >= 0;
  c.vy1 = c.y0 + 1 < H;
  return c;
}

template <class T>
bool finite_theta(const T* th) {
  for (int k = 0; k < 6; ++k) {
    if (!std::isfinite(th[k])) return false;
  }
  return true;
}

struct Sizes {
  int64_t N, C, H, W, outH, outW;
};

template <class T>
void forward(const Sizes& s, const T* img, const T* theta, T* out) {
  const int64_t inPlane = s.H * s.W, outPlane = s.outH * s.outW;
  const bool parallel = s.N * s.C * outPlane >= kParallelGrain;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t row = 0; row < s.N * s.outH; ++row) {
    const int64_t n = row / s.outH, i = row % s.outH;
    const T* th = theta + n * 6;
    const T* im = img + n * s.C * inPlane;
    T* o = out + n * s.C * outPlane + i * s.outW;
    if (!finite_theta(th)) {  // Note [Spatial transformer NaN]
      for (int64_t ch = 0; ch < s.C; ++ch) std::fill(o + ch * outPlane, o + ch * outPlane + s.outW, nan<T>());
      continue;
    }
    const T ys = static_cast<T>(spatial_tf_coordinate(i, s.outH));
    for (int64_t j = 0; j < s.outW; ++j) {
      const Cell<T> c = locate(th, static_cast<T>(spatial_tf_coordinate(j, s.outW)), ys, s.H, s.W);
      if (!c.inside) {
        for (int64_t ch = 0; ch < s.C; ++ch) o[ch * outPlane + j] = 0;
        continue;
      }
      const int64_t p00 = c.y0 * s.W + c.x0;
      for (int64_t ch = 0; ch < s.C; ++ch) {
        const T* p = im + ch * inPlane + p00;
        T v = 0;
        if (c.vy0 && c.vx0) v += p[0] * (c.wy0 * c.wx0);
        if (c.vy0 && c.vx1) v += p[1] * (c.wy0 * c.wx1);
        if (c.vy1 && c.vx0) v += p[s.W] * (c.wy1 * c.wx0);
        if (c.vy1 && c.vx1) v += p[s.W + 1] * (c.wy1 * c.wx1);
        o[ch * outPlane + j] = v;
      }
    }
  }
}

template <class T>
void backward(const Sizes& s, const T* img, const T* theta, const T* gradOut, T* gradImg, T* gradTheta) {
  const int64_t inPlane = s.H * s.W, outPlane = s.outH * s.outW;
  const bool parallel = s.N > 1 && s.N * s.C * outPlane >= kParallelGrain;
  const T sx = static_cast<T>(s.W - 1) / 2, sy = static_cast<T>(s.H - 1) / 2;  // d ix / d gx, d iy / d gy
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t n = 0; n < s.N; ++n) {
    const T* th = theta + n * 6;
    const T* im = img + n * s.C * inPlane;
    const T* go = gradOut + n * s.C * outPlane;
    T* gi = gradImg + n * s.C * inPlane;
    if (!finite_theta(th)) {  // Note [Spatial transformer NaN]
      std::fill(gi, gi + s.C * inPlane, nan<T>());
      std::fill(gradTheta + n * 6, gradTheta + n * 6 + 6, nan<T>());
      continue;
    }
    std::fill(gi, gi + s.C * inPlane, T(0));
    double acc[6] = {0, 0, 0, 0, 0, 0};
    for (int64_t i = 0; i < s.outH; ++i) {
      const T ys = static_cast<T>(spatial_tf_coordinate(i, s.outH));
      for (int64_t j = 0; j < s.outW; ++j) {
        const T xs = static_cast<T>(spatial_tf_coordinate(j, s.outW));
        const Cell<T> c = locate(th, xs, ys, s.H, s.W);
        if (!c.inside) continue;
        T dgx, dgy;
        {
          const int64_t p00 = c.y0 * s.W + c.x0;
          T gix = 0, giy = 0;
          for (int64_t ch = 0; ch < s.C; ++ch) {
            const T g = go[ch * outPlane + i * s.outW + j];
            const T* p = im + ch * inPlane + p00;
            T* q = gi + ch * inPlane + p00;
            if (c.vy0 && c.vx0) {
              q[0] += (c.wy0 * c.wx0) * g;
              gix -= p[0] * c.wy0 * g;
              giy -= p[0] * c.wx0 * g;
            }
            if (c.vy0 && c.vx1) {
              q[1] += (c.wy0 * c.wx1) * g;
              gix += p[1] * c.wy0 * g;
              giy -= p[1] * c.wx1 * g;
            }
            if (c.vy1 && c.vx0) {
              q[s.W] += (c.wy1 * c.wx0) * g;
              gix -= p[s.W] * c.wy1 * g;
              giy += p[s.W] * c.wx0 * g;
            }
            if (c.vy1 && c.vx1) {
              q[s.W + 1] += (c.wy1 * c.wx1) * g;
              gix += p[s.W + 1] * c.wy1 * g;
              giy += p[s.W + 1] * c.wx1 * g;
            }
          }
          dgx = gix * sx;
          dgy = giy * sy;
        }
        // grid = theta [x, y, 1]^T, so d theta = d grid [x, y, 1]
        acc[0] += static_cast<double>(dgx * xs);
        acc[1] += static_cast<double>(dgx * ys);
        acc[2] += static_cast<double>(dgx);
        acc[3] += static_cast<double>(dgy * xs);
        acc[4] += static_cast<double>(dgy * ys);
        acc[5] += static_cast<double>(dgy);
      }
    }
    for (int k = 0; k < 6; ++k) gradTheta[n * 6 + k] = static_cast<T>(acc[k]);
  }
}

void check_cpu_float(const std::string& where, const Tensor& t, const char* what) {
  check_float(where, t, what);
  if (!t.is_cpu()) {
    throw Error(where + "expected " + what + " on the CPU, got " + t.description() +
                " (cudnn::spatial_tf computes on CUDA devices)");
  }
}

}  // namespace

double spatial_tf_coordinate(int64_t i, int64_t n) {
  return n > 1 ? -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(n - 1) : 0.0;
}

void check_spatial_tf_arguments(const std::string& where, const Tensor& img, const Tensor& theta, int64_t outH,
                                int64_t outW) {
  if (!img.defined()) throw Error(where + "img is undefined");
  if (!theta.defined()) throw Error(where + "theta is undefined");
  if (img.dim() != 4 || img.size(1) < 1 || img.size(2) < 1 || img.size(3) < 1) {
    throw Error(where + "expected img [N x C x H x W] with C, H, W >= 1, got " + tensor::shape_str(img.sizes()));
  }
  const int64_t N = img.size(0);
  if (theta.sizes() != tensor::Shape{N, 2, 3}) {
    throw Error(where + "expected theta [N x 2 x 3] with N = " + std::to_string(N) + " (img " +
                tensor::shape_str(img.sizes()) + "), got " + tensor::shape_str(theta.sizes()));
  }
  if (outH < 1 || outW < 1) {
    throw Error(where + "expected outH and outW >= 1, got outH " + std::to_string(outH) + ", outW " +
                std::to_string(outW));
  }
  if (img.dtype() != theta.dtype() || img.device() != theta.device()) {
    throw Error(where + "expected img and theta of one dtype on one device, got " + img.description() + " and " +
                theta.description());
  }
}

void check_spatial_tf_gradient(const std::string& where, const Tensor& img, const Tensor& theta,
                               const Tensor& gradOutput) {
  check_spatial_tf_arguments(where, img, theta, 1, 1);
  if (!gradOutput.defined()) throw Error(where + "gradOutput is undefined");
  if (gradOutput.dim() != 4 || gradOutput.size(0) != img.size(0) || gradOutput.size(1) != img.size(1) ||
      gradOutput.size(2) < 1 || gradOutput.size(3) < 1) {
    throw Error(where + "expected gradOutput [N x C x outH x outW] with N = " + std::to_string(img.size(0)) +
                ", C = " + std::to_string(img.size(1)) + " (img " + tensor::shape_str(img.sizes()) +
                ") and outH, outW >= 1, got " + tensor::shape_str(gradOutput.sizes()));
  }
  if (gradOutput.dtype() != img.dtype() || gradOutput.device() != img.device()) {
    throw Error(where + "expected gradOutput of img's dtype and device, got " + gradOutput.description() + " and img " +
                img.description());
  }
}

void spatial_tf_forward(const Tensor& img, const Tensor& theta, int64_t outH, int64_t outW, Tensor& output) {
  const std::string where = "nn::spatial_tf: ";
  check_spatial_tf_arguments(where, img, theta, outH, outW);
  check_cpu_float(where, img, "img");
  const Tensor x = img.contiguous(), th = theta.contiguous();
  const Sizes s{x.size(0), x.size(1), x.size(2), x.size(3), outH, outW};
  ensure(output, {s.N, s.C, outH, outW}, x);
  tensor::dispatch_f32_f64(x.dtype(), "nn::spatial_tf", [&](auto tag) {
    using T = decltype(tag);
    forward<T>(s, x.data<T>(), th.data<T>(), output.data<T>());
  });
}

void spatial_tf_backward(const Tensor& img, const Tensor& theta, const Tensor& gradOutput, Tensor& gradImage,
                         Tensor& gradTheta) {
  const std::string where = "nn::spatial_tf_backward: ";
  check_spatial_tf_gradient(where, img, theta, gradOutput);
  check_cpu_float(where, img, "img");
  const Tensor x = img.contiguous(), th = theta.contiguous(), gy = gradOutput.contiguous();
  const Sizes s{x.size(0), x.size(1), x.size(2), x.size(3), gy.size(2), gy.size(3)};
  ensure(gradImage, x.sizes(), x);
  ensure(gradTheta, {s.N, 2, 3}, x);
  tensor::dispatch_f32_f64(x.dtype(), "nn::spatial_tf_backward", [&](auto tag) {
    using T = decltype(tag);
    backward<T>(s, x.data<T>(), th.data<T>(), gy.data<T>(), gradImage.data<T>(), gradTheta.data<T>());
  });
}

Tensor spatial_tf(const Tensor& img, const Tensor& theta, int64_t outH, int64_t outW) {
  Tensor out;
  spatial_tf_forward(img, theta, outH, outW, out);
  return out;
}

SpatialTfGrads spatial_tf_backward(const Tensor& img, const Tensor& theta, const Tensor& gradOutput) {
  SpatialTfGrads g;
  spatial_tf_backward(img, theta, gradOutput, g.gradImage, g.gradTheta);
  return g;
}

}  // namespace nn

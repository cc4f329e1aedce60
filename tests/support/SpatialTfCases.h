// SpatialTfCases.h: what the spatial transformer tests of both backends share: thetas from
// rows of numbers, the distance of a grid's samples to the sampler's kinks (the pixel grid
// lines), random affine maps whose samples keep away from them, and smooth images (for 16-bit
// comparisons, where a sample's rounded position may move a little).
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "nn/kernels/SpatialTransformer.h"
#include "tensor/Tensor.h"

namespace stftest {

using tensor::DType;
using tensor::Generator;
using tensor::Tensor;

// theta [N x 2 x 3] (float64) from rows of six numbers
inline Tensor thetas(const std::vector<std::vector<double>>& rows) {
  std::vector<double> v;
  for (const auto& r : rows) v.insert(v.end(), r.begin(), r.end());
  return tensor::from_vector<double>(v, {static_cast<int64_t>(rows.size()), 2, 3});
}

// The smallest distance, in pixels, of any sample position to a pixel grid line (1e9 for none).
inline double kink_distance(const Tensor& theta, int64_t H, int64_t W, int64_t outH, int64_t outW) {
  const std::vector<double> t = theta.to_vector<double>();
  double best = 1e9;
  for (int64_t n = 0; n < theta.size(0); ++n) {
    const double* th = t.data() + n * 6;
    for (int64_t i = 0; i < outH; ++i) {
      for (int64_t j = 0; j < outW; ++j) {
        const double x = nn::spatial_tf_coordinate(j, outW), y = nn::spatial_tf_coordinate(i, outH);
        const double ix = (th[0] * x + th[1] * y + th[2] + 1) / 2 * static_cast<double>(W - 1);
        const double iy = (th[3] * x + th[4] * y + th[5] + 1) / 2 * static_cast<double>(H - 1);
        // a size-1 image dim always samples its one pixel with weight 1: no kink there
        if (W > 1) best = std::min(best, std::abs(ix - std::round(ix)));
        if (H > 1) best = std::min(best, std::abs(iy - std::round(iy)));
      }
    }
  }
  return best;
}

// Random affine maps near the identity (rotation, scale, shear; translations up to `spread`,
// which moves part of the grid outside the image when large) whose samples all stay at least
// `margin` pixels away from the kinks. float64.
inline Tensor generic_theta(Generator& gen, int64_t N, int64_t H, int64_t W, int64_t outH, int64_t outW,
                            double spread = 0.3, double margin = 1e-3) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::vector<std::vector<double>> rows;
    for (int64_t n = 0; n < N; ++n) {
      const double a = tensor::uniform({1}, -0.6, 0.6, gen, DType::Float64).item();
      const double s = tensor::uniform({1}, 0.7, 1.2, gen, DType::Float64).item();
      const std::vector<double> e = tensor::uniform({6}, -spread, spread, gen, DType::Float64).to_vector<double>();
      rows.push_back({s * std::cos(a) + 0.2 * e[0], -s * std::sin(a) + 0.2 * e[1], e[2], s * std::sin(a) + 0.2 * e[3],
                      s * std::cos(a) + 0.2 * e[4], e[5]});
    }
    const Tensor th = thetas(rows);
    if (kink_distance(th, H, W, outH, outW) > margin) return th;
  }
  FAIL("no theta away from the kinks in 100 attempts");
  return Tensor();
}

// A smooth image in [-1, 1] (neighbouring pixels differ by at most about 0.3): float64.
inline Tensor smooth_image(int64_t N, int64_t C, int64_t H, int64_t W) {
  std::vector<double> v;
  v.reserve(static_cast<size_t>(N * C * H * W));
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t c = 0; c < C; ++c) {
      for (int64_t y = 0; y < H; ++y) {
        for (int64_t x = 0; x < W; ++x) {
          const double fx = 0.25 + 0.05 * static_cast<double>(c % 3), fy = 0.2 + 0.03 * static_cast<double>(n % 4);
          v.push_back(0.6 * std::sin(fx * static_cast<double>(x) + static_cast<double>(c)) *
                          std::cos(fy * static_cast<double>(y) + 0.5 * static_cast<double>(n)) +
                      0.3 * std::cos(0.15 * static_cast<double>(x + y)));
        }
      }
    }
  }
  return tensor::from_vector<double>(v, {N, C, H, W});
}

}  // namespace stftest

// PoolingReference.h: what the pooling tests compare the modules with, written apart from
// nn/kernels/Pooling: a direct loop over every kernel offset of every output (naive_pool),
// and the PyTorch cases of tests/data/nn/pooling.safetensors (scripts/make_pooling_reference.py).
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "nn/Module.h"
#include "tensor/Safetensors.h"

namespace pooltest {

using tensor::Shape;
using tensor::Tensor;

// Kernel, stride and padding in tensor order ((T,) H, W).
struct Spec {
  std::vector<int64_t> k, d, pad;
  bool max = true;
  bool include_pad = true;
};

// Pools the trailing k.size() dims of x into out_shape. Each output visits all kernel
// offsets: offsets outside the input are skipped for the value; those inside the padded input
// [-pad, in + pad) are counted for the include-pad divisor.
inline Tensor naive_pool(const Tensor& x, const Shape& out_shape, const Spec& s) {
  const int64_t nd = static_cast<int64_t>(s.k.size()), lead = x.dim() - nd;
  Shape in(x.sizes().begin() + lead, x.sizes().end()), out(out_shape.begin() + lead, out_shape.end());
  int64_t planes = 1, in_plane = 1, out_plane = 1, window = 1;
  for (int64_t i = 0; i < lead; ++i) planes *= x.size(i);
  for (int64_t i = 0; i < nd; ++i) {
    in_plane *= in[i];
    out_plane *= out[i];
    window *= s.k[i];
  }
  const std::vector<double> xv = x.contiguous().to_vector<double>();
  std::vector<double> yv(static_cast<size_t>(planes * out_plane));
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t o = 0; o < out_plane; ++o) {
      std::vector<int64_t> oi(nd);
      for (int64_t i = nd - 1, r = o; i >= 0; --i) {
        oi[i] = r % out[i];
        r /= out[i];
      }
      double best = -std::numeric_limits<double>::infinity(), sum = 0;
      int64_t inside = 0, padded = 0;
      for (int64_t w = 0; w < window; ++w) {
        int64_t flat = 0, r = w;
        bool in_input = true, in_padded = true;
        std::vector<int64_t> off(nd);
        for (int64_t i = nd - 1; i >= 0; --i) {
          off[i] = r % s.k[i];
          r /= s.k[i];
        }
        for (int64_t i = 0; i < nd; ++i) {
          const int64_t c = oi[i] * s.d[i] - s.pad[i] + off[i];
          in_input = in_input && c >= 0 && c < in[i];
          in_padded = in_padded && c >= -s.pad[i] && c < in[i] + s.pad[i];
          flat = flat * in[i] + c;
        }
        padded += in_padded;
        if (!in_input) continue;
        const double v = xv[p * in_plane + flat];
        best = std::max(best, v);
        sum += v;
        ++inside;
      }
      yv[p * out_plane + o] = s.max ? best : sum / static_cast<double>(s.include_pad ? padded : inside);
    }
  }
  return tensor::from_vector<double>(yv, out_shape).to(x.dtype());
}

// A PyTorch case: config holds kernel, stride, padding (tensor order), ceil, include_pad.
struct Case {
  std::string name;
  Spec spec;
  bool ceil = false;
  Tensor input, output, gradOutput, gradInput;
};

// The cases whose names start with `prefix` ("max_2d", "avg_inc_3d", ...).
inline std::vector<Case> reference_cases(const std::string& prefix) {
  const auto file = tensor::load_safetensors(std::string(CUDNN_NN_TEST_DATA) + "/nn/pooling.safetensors");
  std::vector<Case> cases;
  for (const auto& [key, t] : file.tensors) {
    const std::string suffix = ".config";
    if (key.rfind(prefix, 0) != 0 || key.size() < suffix.size() ||
        key.compare(key.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    Case c;
    c.name = key.substr(0, key.size() - suffix.size());
    const std::vector<int64_t> cfg = t.to_vector<int64_t>();
    const size_t nd = (cfg.size() - 2) / 3;
    c.spec.k.assign(cfg.begin(), cfg.begin() + nd);
    c.spec.d.assign(cfg.begin() + nd, cfg.begin() + 2 * nd);
    c.spec.pad.assign(cfg.begin() + 2 * nd, cfg.begin() + 3 * nd);
    c.ceil = cfg[3 * nd] != 0;
    c.spec.include_pad = cfg[3 * nd + 1] != 0;
    c.spec.max = c.name.rfind("max", 0) == 0;
    c.input = file.tensors.at(c.name + ".input");
    c.output = file.tensors.at(c.name + ".output");
    c.gradOutput = file.tensors.at(c.name + ".gradOutput");
    c.gradInput = file.tensors.at(c.name + ".gradInput");
    cases.push_back(c);
  }
  REQUIRE_MESSAGE(!cases.empty(), "no reference cases named " << prefix << "*");
  return cases;
}

// The kernels run on one thread below a work threshold and in parallel above it: a batch
// large enough to run in parallel must give exactly what its samples give one by one
// (each small enough to run serially), forward and backward.
inline void expect_batch_matches_samples(nn::Module& m, const Tensor& batch, tensor::Generator& gen) {
  INFO(m.str(), " on ", tensor::shape_str(batch.sizes()));
  const Tensor y = m.forward(batch).clone();
  const Tensor g = tensor::uniform(y.sizes(), -1, 1, gen, batch.dtype());
  const Tensor gx = m.backward(batch, g).clone();
  for (int64_t i = 0; i < batch.size(0); ++i) {
    CHECK(tensor::max_abs_diff(m.forward(batch[i]), y[i]) == 0);
    CHECK(tensor::max_abs_diff(m.backward(batch[i], g[i]), gx[i]) == 0);
  }
}

// Runs forward and backward of `m` on a case and compares with PyTorch.
inline void expect_matches_reference(nn::Module& m, const Case& c) {
  INFO(c.name, ": ", m.str());
  const Tensor y = m.forward(c.input).clone();
  REQUIRE(y.sizes() == c.output.sizes());
  CHECK(tensor::max_abs_diff(y, c.output) <= 1e-12);
  const Tensor gx = m.backward(c.input, c.gradOutput);
  REQUIRE(gx.sizes() == c.input.sizes());
  CHECK(tensor::max_abs_diff(gx, c.gradInput) <= 1e-12);
}

}  // namespace pooltest

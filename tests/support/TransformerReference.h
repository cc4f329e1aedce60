// TransformerReference.h: PyTorch's float64 results for the Transformer modules, written by
// scripts/make_transformer_reference.py into tests/data/nn/transformer_reference.safetensors
// (the script's docstring lists the keys), and the comparison the suites use.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <string>

#include "tensor/Safetensors.h"
#include "tensor/Tensor.h"

namespace testing {

inline std::string transformer_data(const std::string& file) { return std::string(CUDNN_NN_TEST_DATA) + "/nn/" + file; }

// The reference tensor `key` (float64 or int64, CPU); a missing key fails the test by name.
inline tensor::Tensor torch_ref(const std::string& key) {
  static const std::map<std::string, tensor::Tensor> refs =
      tensor::load_safetensors(transformer_data("transformer_reference.safetensors")).tensors;
  auto it = refs.find(key);
  INFO("reference key ", key);
  REQUIRE(it != refs.end());
  return it->second;
}

// Every reference under `prefix` ("mha.self.p."), keyed by the rest of its name: a module's state.
inline std::map<std::string, tensor::Tensor> torch_refs(const std::string& prefix) {
  static const std::map<std::string, tensor::Tensor> refs =
      tensor::load_safetensors(transformer_data("transformer_reference.safetensors")).tensors;
  std::map<std::string, tensor::Tensor> out;
  for (const auto& [k, v] : refs) {
    if (k.rfind(prefix, 0) == 0) out[k.substr(prefix.size())] = v;
  }
  return out;
}

// |got - want| <= tol element-wise with NaN where want has NaN and equal infinities.
inline void expect_matches(const char* what, const tensor::Tensor& got, const tensor::Tensor& want,
                           double tol = 1e-12) {
  INFO(std::string(what), ": got ", got.description(), ", want ", want.description());
  REQUIRE(got.sizes() == want.sizes());
  const auto g = got.to(tensor::DType::Float64).contiguous().to_vector<double>();
  const auto w = want.to(tensor::DType::Float64).contiguous().to_vector<double>();
  double worst = 0;
  size_t bad = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i]) || std::isinf(w[i])) {
      const bool same = std::isnan(w[i]) ? std::isnan(g[i]) : g[i] == w[i];
      if (!same) ++bad;
      continue;
    }
    worst = std::max(worst, std::abs(g[i] - w[i]));
  }
  CHECK(bad == 0);
  CHECK(worst <= tol);
}

}  // namespace testing

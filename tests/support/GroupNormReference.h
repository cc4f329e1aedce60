// GroupNormReference.h: PyTorch's float64 results for nn.GroupNorm and nn.InstanceNorm, written
// by scripts/make_groupnorm_reference.py into tests/data/nn/groupnorm_reference.safetensors
// (the script's docstring lists the cases and keys).
#pragma once

#include <doctest/doctest.h>

#include <map>
#include <string>

#include "tensor/Safetensors.h"
#include "tensor/Tensor.h"

namespace testing {

// The reference tensor `key` (float64, CPU); a missing key fails the test by name.
inline tensor::Tensor groupnorm_ref(const std::string& key) {
  static const std::map<std::string, tensor::Tensor> refs =
      tensor::load_safetensors(std::string(CUDNN_NN_TEST_DATA) + "/nn/groupnorm_reference.safetensors").tensors;
  auto it = refs.find(key);
  INFO("reference key ", key);
  REQUIRE(it != refs.end());
  return it->second;
}

}  // namespace testing

// DecoderNormReference.h: PyTorch's results for nn.RMSNorm and an HF-style SwiGLU MLP, written by
// scripts/make_decoder_norm_reference.py into tests/data/nn/decoder_norm_reference.safetensors
// (the script's docstring lists the cases and keys). Compare with TransformerReference.h's
// expect_matches.
#pragma once

#include <doctest/doctest.h>

#include <map>
#include <string>

#include "tensor/Safetensors.h"
#include "tensor/Tensor.h"

namespace testing {

inline const std::map<std::string, tensor::Tensor>& decoder_norm_refs() {
  static const std::map<std::string, tensor::Tensor> refs =
      tensor::load_safetensors(std::string(CUDNN_NN_TEST_DATA) + "/nn/decoder_norm_reference.safetensors").tensors;
  return refs;
}

// The reference tensor `key` (CPU); a missing key fails the test by name.
inline tensor::Tensor decoder_ref(const std::string& key) {
  auto it = decoder_norm_refs().find(key);
  INFO("reference key ", key);
  REQUIRE(it != decoder_norm_refs().end());
  return it->second;
}

// Every reference under `prefix` ("swiglu.plain."), keyed by the rest of its name.
inline std::map<std::string, tensor::Tensor> decoder_refs(const std::string& prefix) {
  std::map<std::string, tensor::Tensor> out;
  for (const auto& [k, v] : decoder_norm_refs()) {
    if (k.rfind(prefix, 0) == 0) out[k.substr(prefix.size())] = v;
  }
  return out;
}

}  // namespace testing

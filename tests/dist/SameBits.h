// SameBits.h: bit-for-bit comparison of state dicts, for the sharded tests' "exactly as alone".
#pragma once

#include <cstring>
#include <map>
#include <string>

#include "tensor/Tensor.h"

namespace testing {

// Whether two state dicts hold the same names, shapes, dtypes and bits (on any device).
inline bool same_bits(const std::map<std::string, tensor::Tensor>& a, const std::map<std::string, tensor::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [k, t] : a) {
    auto it = b.find(k);
    if (it == b.end() || it->second.sizes() != t.sizes() || it->second.dtype() != t.dtype()) return false;
    const tensor::Tensor x = t.cpu().contiguous(), y = it->second.cpu().contiguous();
    if (std::memcmp(x.raw_data(), y.raw_data(), x.nbytes()) != 0) return false;
  }
  return true;
}

}  // namespace testing

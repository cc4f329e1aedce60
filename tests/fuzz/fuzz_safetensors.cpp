// fuzz_safetensors.cpp: libFuzzer target for tensor::parse_safetensors. Any input must end
// in a file or a tensor::Error, never in a crash, an out-of-bounds access or UB (ASan+UBSan).
// A file that parses must serialize and parse back to the same tensors.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "tensor/Safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tensor::SafetensorsFile file;
  try {
    file = tensor::parse_safetensors(data, size, "fuzz input");
  } catch (const tensor::Error&) {
    return 0;
  }
  const std::vector<uint8_t> again = tensor::serialize_safetensors(file.tensors, file.metadata);
  const tensor::SafetensorsFile back = tensor::parse_safetensors(again.data(), again.size(), "round trip");
  if (back.tensors.size() != file.tensors.size() || back.metadata != file.metadata) std::abort();
  for (const auto& [name, t] : file.tensors) {
    const tensor::Tensor& u = back.tensors.at(name);
    if (u.sizes() != t.sizes() || u.dtype() != t.dtype() || u.nbytes() != t.nbytes()) std::abort();
    if (t.nbytes() && std::memcmp(u.raw_data(), t.raw_data(), t.nbytes()) != 0) std::abort();
  }
  return 0;
}

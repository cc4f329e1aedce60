// fuzz_npy.cpp: libFuzzer target for tensor::parse_npy and parse_npz (Note [Untrusted npy] in
// tensor/Npy.h). Any input must end in tensors or a tensor::Error, never in a crash, an
// out-of-bounds access or UB (ASan+UBSan); an input starting like a zip goes to parse_npz.
#include <cstdint>
#include <cstdlib>

#include "tensor/Npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    if (size >= 2 && data[0] == 'P' && data[1] == 'K') {
      // Note [Untrusted npy]: nothing allocated beyond what the input holds (widened integers: 8x)
      for (const auto& [name, t] : tensor::parse_npz(data, size, "fuzz input")) {
        if (t.nbytes() > size * 8) std::abort();
      }
    } else {
      const tensor::Tensor t = tensor::parse_npy(data, size, "fuzz input");
      if (t.nbytes() > size * 8) std::abort();
    }
  } catch (const tensor::Error&) {
  }
  return 0;
}

// fuzz_model.cpp: libFuzzer target for nn::load_model (structure + weights) from memory.
// Input: a 4-byte little-endian length N, N bytes of the JSON document, then the safetensors
// file (tests/fuzz/corpus/model/ holds seeds in this layout, scripts/make_fuzz_seeds.py
// writes them). Any input must end in a network or a tensor::Error, never in a crash, UB,
// or an allocation past the bound of Note [Untrusted model files] (libFuzzer's -rss_limit_mb
// catches those). A loaded network must describe itself again.
#include <cstdint>
#include <cstring>
#include <string>

#include "convert/ModelFile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  uint32_t n = 0;
  std::memcpy(&n, data, 4);
  if (n > size - 4) return 0;
  const std::string json(reinterpret_cast<const char*>(data + 4), n);
  try {
    nn::ModulePtr net = nn::load_model(json, data + 4 + n, size - 4 - n, "fuzz.json", "fuzz.safetensors");
    (void)nn::describe_model(*net).dump();
    (void)net->str();
  } catch (const tensor::Error&) {
  }
  return 0;
}

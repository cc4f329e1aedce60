// fuzz_json.cpp: libFuzzer target for tensor::Json::parse. Any input must end in a value or
// a tensor::Error, never in a crash or UB; a value must dump and parse back to the same text.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "tensor/DType.h"
#include "tensor/Json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tensor::Json value;
  try {
    value = tensor::Json::parse(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz input");
  } catch (const tensor::Error&) {
    return 0;
  }
  const std::string text = value.dump();
  const std::string again = tensor::Json::parse(text, "round trip").dump();
  if (again != text) std::abort();
  (void)value.dump(2);
  return 0;
}

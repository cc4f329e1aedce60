// ErrorText.h: the message a call throws, for tests that check several errors by their text
// ("(no error)" when it throws nothing), and a substring test for reading them.
#pragma once

#include <functional>
#include <string>

#include "tensor/DType.h"

namespace testing {

inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const tensor::Error& e) {
    return e.what();
  }
  return "(no error)";
}

inline bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace testing

// Format.h: numbers as error messages and printouts show them.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace tensor {

// `v` as an ostream writes it by default (6 significant digits, "inf", "nan"): the text
// messages show a user's settings in, so that 0.1 reads "0.1" rather than to_string's "0.100000".
inline std::string num_str(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// "8x4x3" for join({8, 4, 3}, "x"); "" for no values.
inline std::string join(const std::vector<int64_t>& values, const char* sep) {
  std::string s;
  for (size_t i = 0; i < values.size(); ++i) s += (i ? sep : "") + std::to_string(values[i]);
  return s;
}

// The index of element `flat` of a contiguous tensor of `shape`, one entry per dim (row-major),
// for messages that point at an element: join(unravel({2, 3}, 4), ", ") is "1, 1".
inline std::vector<int64_t> unravel(const std::vector<int64_t>& shape, int64_t flat) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return index;
}

}  // namespace tensor

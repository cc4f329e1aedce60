// Format.h: a number as error messages and printouts show it.
#pragma once

#include <sstream>
#include <string>

namespace tensor {

// `v` as an ostream writes it by default (6 significant digits, "inf", "nan"): the text
// messages show a user's settings in, so that 0.1 reads "0.1" rather than to_string's "0.100000".
inline std::string num_str(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace tensor

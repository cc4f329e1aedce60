// DType.cpp: names of dtypes and devices, shape formatting.
#include "tensor/DType.h"

#include <ostream>

namespace tensor {

const char* name(DType t) {
  switch (t) {
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::Float16: return "float16";
    case DType::BFloat16: return "bfloat16";
    case DType::Int64: return "int64";
    case DType::UInt8: return "uint8";
  }
  return "invalid";
}

DType dtype_from_name(const std::string& s) {
  for (DType t : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Int64,
                  DType::UInt8}) {
    if (s == name(t)) return t;
  }
  throw Error("tensor::dtype_from_name: unknown dtype '" + s +
              "' (known: float32, float64, float16, bfloat16, int64, uint8)");
}

Device Device::parse(const std::string& s) {
  if (s == "cpu") return cpu();
  if (s == "cuda") return cuda(0);
  if (s.rfind("cuda:", 0) == 0 && s.size() > 5) {
    size_t used = 0;
    int index = -1;
    try {
      index = std::stoi(s.substr(5), &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == s.size() - 5 && index >= 0) return cuda(index);
  }
  throw Error("tensor::Device::parse: expected 'cpu', 'cuda' or 'cuda:N', got '" + s + "'");
}

std::string Device::str() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index); }

std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += " x ";
    out += std::to_string(s[i]);
  }
  return out + "]";
}

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

}  // namespace tensor

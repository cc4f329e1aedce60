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

// Note [Checked sizes]
// Every size that decides how much memory to allocate is computed with overflow checks:
// a shape read from a file or a config ([2147483648 x 2147483648] from a model file, a
// conv kernel of 2^40) must end in an Error, never in a wrapped product that allocates a
// small buffer and then writes past it. The checks run once per shape (creation, views,
// resize), not per element. Zero sizes do not hide huge ones: [0 x 2^62 x 2^62] is refused
// as well, because its contiguous strides would overflow.
namespace {
// The product of max(size, 1) over `s`, times `unit`; false when a size is negative or the
// product overflows int64.
bool checked_extent(const Shape& s, int64_t unit, int64_t* extent, int64_t* numel) {
  int64_t e = unit, n = 1;
  for (int64_t d : s) {
    if (d < 0) return false;
    if (__builtin_mul_overflow(e, d == 0 ? int64_t{1} : d, &e)) return false;
    n = d == 0 ? 0 : n * d;  // |n| <= e: cannot overflow once e did not
  }
  *extent = e;
  *numel = n;
  return true;
}

std::string negative_or_overflow(const Shape& s, const char* what) {
  for (int64_t d : s) {
    if (d < 0) return "it has a negative size";
  }
  return std::string(what) + " overflows int64";
}
}  // namespace

int64_t shape_numel(const Shape& s, const char* op) {
  int64_t extent = 0, numel = 0;
  TENSOR_CHECK(checked_extent(s, 1, &extent, &numel), op, ": invalid shape ", shape_str(s), ": ",
               negative_or_overflow(s, "its element count"));
  return numel;
}

size_t shape_nbytes(const Shape& s, DType dtype, const char* op) {
  int64_t extent = 0, numel = 0;
  TENSOR_CHECK(checked_extent(s, static_cast<int64_t>(itemsize(dtype)), &extent, &numel), op, ": invalid shape ",
               shape_str(s), " for ", name(dtype), ": ", negative_or_overflow(s, "its size in bytes"));
  return static_cast<size_t>(numel) * itemsize(dtype);
}

}  // namespace tensor

// DType.h: element types, devices, shapes and the one exception type of the tensor layer.
// Floating types are the ones modules compute in; Int64 and UInt8 hold labels, indices and
// comparison results. `dispatch` turns a runtime DType into a compile-time C++ type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tensor/Half.h"

namespace tensor {

// Every misuse of the tensor layer throws this, with the operation and operands named.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {
template <class... Parts>
std::string concat(const Parts&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}
}  // namespace detail

#define TENSOR_CHECK(cond, ...)                                      \
  do {                                                               \
    if (!(cond)) throw ::tensor::Error(::tensor::detail::concat(__VA_ARGS__)); \
  } while (0)

enum class DType : uint8_t { Float32, Float64, Float16, BFloat16, Int64, UInt8 };

constexpr size_t itemsize(DType t) {
  switch (t) {
    case DType::Float32: return 4;
    case DType::Float64: return 8;
    case DType::Float16: return 2;
    case DType::BFloat16: return 2;
    case DType::Int64: return 8;
    case DType::UInt8: return 1;
  }
  return 0;
}
constexpr bool is_floating(DType t) { return t != DType::Int64 && t != DType::UInt8; }
const char* name(DType t);                 // "float32", ...
DType dtype_from_name(const std::string&);  // inverse of name(); throws on unknown

template <class T> struct dtype_of;
template <> struct dtype_of<float> { static constexpr DType value = DType::Float32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::Float64; };
template <> struct dtype_of<Half> { static constexpr DType value = DType::Float16; };
template <> struct dtype_of<BFloat16> { static constexpr DType value = DType::BFloat16; };
template <> struct dtype_of<int64_t> { static constexpr DType value = DType::Int64; };
template <> struct dtype_of<uint8_t> { static constexpr DType value = DType::UInt8; };
template <class T> inline constexpr DType dtype_v = dtype_of<T>::value;

// The type arithmetic on T is done in: float for the 16-bit types, T otherwise.
template <class T> struct acc_type { using type = T; };
template <> struct acc_type<Half> { using type = float; };
template <> struct acc_type<BFloat16> { using type = float; };
template <class T> using acc_t = typename acc_type<T>::type;

// dispatch(dt, [&](auto tag) { using T = decltype(tag); ... }) calls f with a T{} of dt's type.
template <class F>
decltype(auto) dispatch(DType t, F&& f) {
  switch (t) {
    case DType::Float32: return f(float{});
    case DType::Float64: return f(double{});
    case DType::Float16: return f(Half{});
    case DType::BFloat16: return f(BFloat16{});
    case DType::Int64: return f(int64_t{});
    case DType::UInt8: return f(uint8_t{});
  }
  throw Error("tensor::dispatch: invalid dtype");
}

// Like dispatch, for the two types the CPU reference modules compute in.
template <class F>
decltype(auto) dispatch_f32_f64(DType t, const char* op, F&& f) {
  if (t == DType::Float32) return f(float{});
  if (t == DType::Float64) return f(double{});
  throw Error(detail::concat(op, ": expected float32 or float64, got ", name(t)));
}

struct Device {
  enum class Type : uint8_t { CPU, CUDA };
  Type type = Type::CPU;
  int index = 0;

  static Device cpu() { return {}; }
  static Device cuda(int i = 0) { return {Type::CUDA, i}; }
  static Device parse(const std::string& s);  // "cpu", "cuda", "cuda:1"
  bool is_cpu() const { return type == Type::CPU; }
  bool is_cuda() const { return type == Type::CUDA; }
  std::string str() const;
  friend bool operator==(const Device& a, const Device& b) {
    return a.type == b.type && (a.type == Type::CPU || a.index == b.index);
  }
  friend bool operator!=(const Device& a, const Device& b) { return !(a == b); }
};
std::ostream& operator<<(std::ostream&, const Device&);

using Shape = std::vector<int64_t>;
std::string shape_str(const Shape& s);  // "[8 x 4 x 32 x 32]", "[]" for a scalar
// The element count of `s`. Throws, naming `op` and the shape, when a size is negative or
// when the product of the sizes overflows int64 (zero sizes count as 1 there, so that the
// strides and offsets of an empty tensor fit too). See Note [Checked sizes] in DType.cpp.
int64_t shape_numel(const Shape& s, const char* op = "tensor::shape_numel");
// The bytes a contiguous `dtype` tensor of shape `s` needs, checked as shape_numel, and so
// that every byte offset fits in int64; the error names the shape and the dtype.
size_t shape_nbytes(const Shape& s, DType dtype, const char* op = "tensor::shape_nbytes");

}  // namespace tensor

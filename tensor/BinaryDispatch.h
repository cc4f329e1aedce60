// BinaryDispatch.h: the switch from a run-time kernels::Binary to the compile-time op that the
// CPU and CUDA element functions are templates on, written once for both backends.
#pragma once

#include <type_traits>

#include "tensor/Kernels.h"

namespace tensor::kernels {

// Calls f(std::integral_constant<Binary, op>{}).
template <class F>
void with_binary_op(Binary op, F&& f) {
  switch (op) {
#define TENSOR_BINARY_CASE(X) \
  case Binary::X: return f(std::integral_constant<Binary, Binary::X>{});
    TENSOR_BINARY_CASE(Add) TENSOR_BINARY_CASE(Sub) TENSOR_BINARY_CASE(Mul) TENSOR_BINARY_CASE(Div)
    TENSOR_BINARY_CASE(Max) TENSOR_BINARY_CASE(Min) TENSOR_BINARY_CASE(Pow) TENSOR_BINARY_CASE(Eq)
    TENSOR_BINARY_CASE(Ne) TENSOR_BINARY_CASE(Lt) TENSOR_BINARY_CASE(Le) TENSOR_BINARY_CASE(Gt)
    TENSOR_BINARY_CASE(Ge)
#undef TENSOR_BINARY_CASE
  }
}

}  // namespace tensor::kernels

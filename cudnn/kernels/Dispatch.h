// Dispatch.h: tensor::dispatch for the cudnn backend's kernels, which take floating data only
// (float32, float64, float16, bfloat16). Any other dtype is an error naming the kernel.
#pragma once

#include <string>
#include <type_traits>

#include "tensor/Tensor.h"

namespace cudnn::kernels {

// dispatch_floating(op, t, [&](auto tag) { using T = decltype(tag); ... })
template <class F>
void dispatch_floating(const char* op, const tensor::Tensor& t, F&& f) {
  tensor::dispatch(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, uint8_t>) {
      throw tensor::Error(std::string(op) + ": floating data expected, got " + t.description());
    } else {
      f(tag);
    }
  });
}

}  // namespace cudnn::kernels

// Twin.h: what every cudnn twin shares. cudnn::X derives from Twin<nn::X>: it keeps nn::X's
// constructors (Torch's arguments), configuration, parameters and printing, computes on
// CUDA devices, and calls itself "cudnn.X" (kTypeName, derived from nn::X::kTypeName). A
// twin is built by moving its nn module in (convert() does this), so conversion moves state
// and never re-derives it.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

#include "cudnn/TensorChecks.h"
#include "nn/Module.h"

namespace cudnn {

namespace detail {
// "nn.X" -> "cudnn.X", at compile time (N: the size of "nn.X").
template <size_t N>
constexpr std::array<char, N + 3> twin_type_name(std::string_view nnName) {
  std::array<char, N + 3> name{'c', 'u', 'd', 'n', 'n'};
  for (size_t i = 2; i < N; ++i) name[i + 3] = nnName[i];
  return name;
}
}  // namespace detail

template <class Base>
class Twin : public Base {
  static_assert(Base::kTypeName.starts_with("nn."), "a twin's nn module is named \"nn.X\"");
  static constexpr auto kName = detail::twin_type_name<Base::kTypeName.size()>(Base::kTypeName);

 public:
  using Base::Base;
  explicit Twin(Base&& m) : Base(std::move(m)) {}

  static constexpr std::string_view kTypeName{kName.data(), kName.size()};  // "cudnn.X"
  std::string type_name() const override { return std::string(kTypeName); }
  bool computesOn(tensor::Device d) const override { return d.is_cuda(); }
  nn::Backend backendKind() const override { return nn::Backend::cudnn; }
};

}  // namespace cudnn

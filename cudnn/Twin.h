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

 protected:
  // The start of a compute method: checks that `input` is a floating-point CUDA tensor, on the
  // device of `state` (a parameter; undefined: any), and returns the errors' prefix
  // "cudnn.X::method: ".
  std::string checkCudaInput(const char* method, const Tensor& input, const Tensor& state = Tensor()) const {
    std::string where = this->where(method);
    check_on_device(where, input, state);
    check_cuda(where, input, "input");
    return where;
  }
  // The same for a backward method, with gradOutput a floating-point CUDA tensor too.
  std::string checkCudaGrad(const char* method, const Tensor& input, const Tensor& gradOutput) const {
    std::string where = checkCudaInput(method, input);
    check_cuda(where, gradOutput, "gradOutput");
    return where;
  }
};

}  // namespace cudnn

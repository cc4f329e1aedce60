// Twin.h: what every cudnn twin shares. cudnn::X derives from Twin<nn::X>: it keeps nn::X's
// constructors (Torch's arguments), configuration, parameters and printing, computes on
// CUDA devices, and calls itself "cudnn.X". A twin is built by moving its nn module in
// (convert() does this), so conversion moves state and never re-derives it.
#pragma once

#include <string>
#include <utility>

#include "nn/Module.h"

namespace cudnn {

template <class Base>
class Twin : public Base {
 public:
  using Base::Base;
  explicit Twin(Base&& m) : Base(std::move(m)) {}

  std::string type_name() const override { return "cudnn" + Base::type_name().substr(2); }
  bool computesOn(tensor::Device d) const override { return d.is_cuda(); }
  nn::Backend backendKind() const override { return nn::Backend::cudnn; }
};

// The check every twin makes first: the input is on a CUDA device, where the state is.
void check_on_device(const std::string& where, const tensor::Tensor& input, const tensor::Tensor& state);

}  // namespace cudnn

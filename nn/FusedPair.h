// FusedPair.h: the shape the fused modules share (nn::FusedConvolution, nn::FusedBatchNormalization):
// a Sequential of exactly two children, a module of kind First and the activation after it,
// which cudnn::fuse rewrites such a pair of a Sequential into (Note [Fusion as a rewrite] in
// cudnn/Fuse.cpp). nn computes the two in turn, exactly as a Sequential of them; the twin
// runs them as one operation where it can. Prints on one line, the fusion visible:
//   nn.FusedConvolution(nn.SpatialConvolution(3 -> 8, 3x3, 1,1, 1,1) + nn.ReLU)
// Model files store it with its two children; convert() swaps it and them both ways.
// Self names itself (kTypeName) and its children (kChildren, kChildTypes, for the errors).
#pragma once

#include <string>
#include <vector>

#include "nn/ModuleConfig.h"
#include "nn/ModuleWrapper.h"
#include "nn/PointwiseBase.h"
#include "nn/Sequential.h"

namespace nn {

namespace detail {
// "2 modules (nn.Linear, nn.ReLU)"
std::string describe_children(const std::vector<ModulePtr>& modules);
}  // namespace detail

template <class Self, class First>
class FusedPair : public Sequential {
 public:
  FusedPair(ModulePtr first, ModulePtr activation) : Sequential({std::move(first), std::move(activation)}) {
    checkModules(Self::kTypeName.data() + 3);  // the constructor's name, "FusedConvolution"
  }

  const Tensor& updateOutput(const Tensor& input) override {
    checkModules("updateOutput");
    return Sequential::updateOutput(input);
  }
  std::string type_name() const override { return std::string(Self::kTypeName); }
  // the twins compute the pair as one operation: no addend (Note [Sums in the product's epilogue])
  bool addsInForward() const override { return false; }
  // children: the first module and the activation (model files store them apart)
  static ModulePtr fromConfig(const tensor::Json& config, std::vector<ModulePtr> children) {
    ConfigReader(config, Self::kTypeName).finish();
    if (children.size() != 2) {
      throw Error(std::string(Self::kTypeName) + ": expected " + Self::kChildren + " (2 children), got " +
                  std::to_string(children.size()));
    }
    return std::make_shared<Self>(children[0], children[1]);
  }
  std::string str() const override {
    if (modules.size() != 2 || !modules[0] || !modules[1]) {
      return type_name() + "(" + detail::describe_children(modules) + ")";
    }
    return type_name() + "(" + modules[0]->str() + " + " + modules[1]->str() + ")";
  }

  // The two children, checked ("expected a convolution and an activation, got ..."), seen
  // through a wrapper in the slot (nn/ModuleWrapper.h).
  First& first(const char* method) const {
    checkModules(method);
    return dynamic_cast<First&>(unwrapped(*modules[0]));
  }
  PointwiseBase& activation(const char* method = "activation") const {
    checkModules(method);
    return dynamic_cast<PointwiseBase&>(unwrapped(*modules[1]));
  }

 protected:
  void checkModules(const char* method) const {
    const bool ok = modules.size() == 2 && modules[0] && modules[1] &&
                    dynamic_cast<const First*>(&unwrapped(*modules[0])) &&
                    dynamic_cast<const PointwiseBase*>(&unwrapped(*modules[1]));
    if (!ok) {
      throw Error(where(method) + "expected " + Self::kChildren + " (" + Self::kChildTypes + "), got " +
                  detail::describe_children(modules));
    }
  }
};

}  // namespace nn

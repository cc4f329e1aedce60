// FusedConvolution.h: a convolution and the activation after it, as one module: the unit
// cudnn::fuse rewrites a (convolution, activation) pair of a Sequential into (Note [Fusion as a
// rewrite] in cudnn/Fuse.cpp). Children: modules[0] an nn::ConvolutionBase (any of the
// convolution family), modules[1] an nn::PointwiseBase. nn computes them in turn, exactly as a
// Sequential of the two; its twin cudnn::FusedConvolution runs y = act(conv(x) + bias) as one
// cuDNN operation where it can. Prints on one line, the fusion visible:
//   nn.FusedConvolution(nn.SpatialConvolution(3 -> 8, 3x3, 1,1, 1,1) + nn.ReLU)
// Model files store it with its two children; convert() swaps it and them both ways.
#pragma once

#include "nn/ConvolutionBase.h"
#include "nn/PointwiseBase.h"
#include "nn/Sequential.h"

namespace nn {

class FusedConvolution : public Sequential {
 public:
  FusedConvolution(ModulePtr convolution, ModulePtr activation);

  const Tensor& updateOutput(const Tensor& input) override;
  static constexpr std::string_view kTypeName = "nn.FusedConvolution";
  std::string type_name() const override { return std::string(kTypeName); }
  // children: the convolution and the activation (model files store them apart)
  static ModulePtr fromConfig(const tensor::Json& config, std::vector<ModulePtr> children);
  std::string str() const override;

  // The two children, checked ("expected a convolution and an activation, got ...").
  ConvolutionBase& convolution(const char* method = "convolution") const;
  PointwiseBase& activation(const char* method = "activation") const;

 protected:
  void checkModules(const char* method) const;
};

}  // namespace nn

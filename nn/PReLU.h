// PReLU.h: y = x for x > 0, w x otherwise (Torch's nn.PReLU(nOutputPlane), He et al. 2015),
// w learnable. nOutputPlane = 0: one weight shared by every element of an input of any shape;
// else one weight per channel, the channels being dimension 1 of a batch (rank >= 2) and
// dimension 0 of a vector, as Torch and PyTorch. weight [max(nOutputPlane, 1)] starts at
// 0.25; gradWeight accumulates scale * sum of x gradOutput over x <= 0 (and NaN x: Note [NaN
// and Inf]). Prints its type name, as Torch. Twin: cudnn::PReLU (cudnn/PReLU.h, our kernels).
#pragma once

#include "nn/Module.h"

namespace nn {

class PReLU : public Module {
 public:
  explicit PReLU(int64_t nOutputPlane = 0);

  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  void accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale = 1.0) override;
  void reset();  // every weight 0.25
  static constexpr std::string_view kTypeName = "nn.PReLU";
  std::string type_name() const override { return std::string(kTypeName); }
  tensor::Json config() const override;  // {"nOutputPlane": 0}
  static ModulePtr fromConfig(const tensor::Json& config);

  int64_t nOutputPlane;
  Tensor weight, gradWeight;

  // The input viewed as [outer x channels x inner] (channels = 1 for a shared weight).
  struct Layout {
    int64_t outer, channels, inner;
  };

 protected:
  void visitState(StateVisitor& v) override;
  // Checks the input (floating; with channels, rank >= 1 and nOutputPlane channels) and the
  // weight (and with `gradients` gradWeight: Note [Parameters are checked where they are
  // used] in nn/Buffers.h), and returns the layout. Both backends call it; `dtypes`: float32
  // or float64 only (the nn module; the twin checks its own).
  Layout checkInput(const Tensor& input, const char* method, bool gradients, bool dtypes = true) const;
  // gradOutput of the input's shape and dtype.
  void checkGradOutput(const Tensor& input, const Tensor& gradOutput, const char* method) const;
};

}  // namespace nn

// Concat.h: Inception-style branching. Every child gets the same input; their outputs are
// concatenated along `dimension`, and gradInput is the sum of the children's gradInputs.
// DIMENSIONS ARE 0-BASED and count the batch dimension, as PyTorch's cat does: Torch's
// nn.Concat(2) on [N x C x H x W] (channels) is nn::Concat(1) here; negative values count
// from the end. Children's outputs must agree in every size but `dimension`.
// Prints as Torch does. Twin: cudnn::Concat (the same tensor ops on the GPU).
#pragma once

#include "nn/Container.h"

namespace nn {

class Concat : public Container {
 public:
  explicit Concat(int64_t dimension);
  Concat(int64_t dimension, std::initializer_list<ModulePtr> children);

  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  void accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale = 1.0) override;
  static constexpr std::string_view kTypeName = "nn.Concat";
  std::string type_name() const override { return std::string(kTypeName); }
  tensor::Json config() const override;
  // children: as config() leaves them out, in order (model files store them apart)
  static ModulePtr fromConfig(const tensor::Json& config, std::vector<ModulePtr> children);
  std::string str() const override;

  int64_t dimension;

 protected:
  void backwardImpl(const Tensor& input, const Tensor& gradOutput, double scale) override;
  // The output shape for these child outputs; throws naming the child that disagrees.
  Shape outputShape(const std::vector<Tensor>& outputs) const;

 private:
  int64_t dim_ = 0;                // `dimension` resolved against the last output's rank
  std::vector<int64_t> extents_;   // each child's size along dim_ in the last forward
  // The slice of gradOutput that child i produced (contiguous, for children that expect it).
  Tensor gradSlice(const Tensor& gradOutput, size_t i) const;
  template <class Step>
  void backwardPass(const Tensor& gradOutput, bool wantGradInput, Step step);
};

}  // namespace nn

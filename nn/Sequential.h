// Sequential.h: feeds each child's output to the next; backward runs in reverse.
// Prints as Torch does:
//   nn.Sequential {
//     [input -> (1) -> (2) -> output]
//     (1): nn.SpatialConvolution(3 -> 96, 11x11, 3,3)
//     (2): nn.ReLU
//   }
#pragma once

#include "nn/Container.h"

namespace nn {

class Sequential : public Container {
 public:
  Sequential() = default;
  Sequential(std::initializer_list<ModulePtr> children);

  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  void accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale = 1.0) override;
  // The table interface: each child's output Value feeds the next (Note [Tables] in
  // nn/Value.cpp). The tensor interface takes this path too when a child uses tables
  // (Sequential{ConcatTable{a, b}, CAddTable}), and stays the tensor path otherwise.
  const Value& updateOutputValue(const Value& input) override;
  const Value& updateGradInputValue(const Value& input, const Value& gradOutput) override;
  void accGradParametersValue(const Value& input, const Value& gradOutput, double scale = 1.0) override;
  bool usesTables() const override;
  // The last child takes the addend (Note [Sums in the product's epilogue] in nn/Module.cpp):
  // GPT-2's mlp, Sequential(Linear, GELU, Linear), adds a residual in its down projection.
  bool addsInForward() const override;
  const Tensor& updateOutputAdding(const Tensor& input, const Tensor& addend) override;
  // The children's forward state and the inputs recorded for them: backward asks for a forward first.
  void releaseActivations() override;
  bool writesGradOutput() const override {
    return !modules.empty() && modules.back() && modules.back()->writesGradOutput();
  }
  static constexpr std::string_view kTypeName = "nn.Sequential";
  std::string type_name() const override { return std::string(kTypeName); }
  // children: as config() leaves them out, in order (model files store them apart)
  static ModulePtr fromConfig(const tensor::Json& config, std::vector<ModulePtr> children);
  std::string str() const override;

  // The first n children alone, for a module that computes the rest itself (cudnn::FusedResidual
  // runs a block's last batch norm fused with the sum and ReLU after it). forwardFirst returns
  // child n-1's output (the input when n is 0) and records what updateOutput records, child n's
  // input included, so a later whole backward still works; the backward passes take the
  // gradient of that output and return the first child's gradInput.
  Tensor forwardFirst(const Tensor& input, size_t n);
  Tensor updateGradInputFirst(const Tensor& input, const Tensor& gradOutput, size_t n);
  void accGradParametersFirst(const Tensor& input, const Tensor& gradOutput, size_t n, double scale);
  Tensor backwardFirst(const Tensor& input, const Tensor& gradOutput, size_t n, double scale);

 protected:
  bool childSeesInput(size_t i) const override { return i == 0; }
  void backwardImpl(const Tensor& input, const Tensor& gradOutput, double scale) override;
  void backwardValueImpl(const Value& input, const Value& gradOutput, double scale) override;
  void releaseGradInput() override;
  // What updateOutput records, for a subclass that computes its children's outputs itself
  // (cudnn::FusedConvolution): the input child i saw, which backward hands it.
  std::vector<Tensor>& childInputs() { return inputs_; }

 private:
  // The input each child saw in the last forward (a child's result may be a bridged copy,
  // not its `output` field, so these are kept here).
  std::vector<Tensor> inputs_;
  std::vector<Tensor> gradOutputs_;  // the gradient each child received in the last backward
  template <class Step>
  void backwardPass(const Tensor& input, const Tensor& gradOutput, Step step, bool release, size_t n);
  // The same on the table path.
  std::vector<Value> valueInputs_, valueGradOutputs_;
  template <class Step>
  void backwardValuePass(const Value& input, const Value& gradOutput, Step step, bool release);
  void checkFirst(size_t n, const char* method) const;
};

}  // namespace nn

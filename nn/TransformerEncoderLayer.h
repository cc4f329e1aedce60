// TransformerEncoderLayer.h: PyTorch's nn.TransformerEncoderLayer as a container of ordinary
// modules (so convert() swaps each for its twin), named as PyTorch's submodules so that a
// PyTorch layer's state_dict loads as saved:
//   self_attn (MultiheadAttention), linear1 (Linear E -> F), dropout, linear2 (F -> E),
//   norm1, norm2 (LayerNorm), dropout1, dropout2 (Dropout), activation (ReLU or GELU).
// Post-norm (normFirst = false):  h = norm1(x + dropout1(sa(x)));  y = norm2(h + dropout2(ff(h)))
// Pre-norm  (normFirst = true):   h = x + dropout1(sa(norm1(x)));  y = h + dropout2(ff(norm2(h)))
// with ff(z) = linear2(dropout(activation(linear1(z)))). Input [S x B x E] ([B x S x E] with
// batchFirst). setCausal and setKeyLengths pass through to self_attn.
// Prints as "nn.TransformerEncoderLayer(64, nhead=4, ff=256, ...) { children }".
// Twin: cudnn::TransformerEncoderLayer (cudnn/TransformerEncoderLayer.h).
#pragma once

#include "nn/Container.h"

namespace nn {

class MultiheadAttention;
class LayerNorm;
class Linear;

class TransformerEncoderLayer : public Container {
 public:
  TransformerEncoderLayer(int64_t dModel, int64_t nhead, int64_t dimFeedforward = 2048, double dropout = 0.1,
                          std::string activation = "relu", bool batchFirst = false, bool normFirst = false,
                          double layerNormEps = 1e-5);

  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  // backward() runs the children's backward once; accGradParameters alone runs it too, into
  // scratch (gradInput is left alone).
  void accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale = 1.0) override;
  static constexpr std::string_view kTypeName = "nn.TransformerEncoderLayer";
  std::string type_name() const override { return std::string(kTypeName); }
  tensor::Json config() const override;
  // children as config() leaves them out (model files store them apart), in kChildNames' order
  static ModulePtr fromConfig(const tensor::Json& config, std::vector<ModulePtr> children);
  std::string str() const override;
  std::string childName(size_t i) const override;

  void setCausal(bool causal);
  bool causal() const;
  void setKeyLengths(const Tensor& lengths);  // int64 [B] or Tensor()

  // The children by role (throw naming the slot when one was replaced by another type).
  MultiheadAttention& selfAttn() const;
  Linear& linear1() const;
  Linear& linear2() const;
  LayerNorm& norm1() const;
  LayerNorm& norm2() const;

  // PyTorch's submodule names, in the order of `modules`.
  static constexpr const char* kChildNames[] = {"self_attn", "linear1",  "dropout",  "linear2",   "norm1",
                                                "norm2",     "dropout1", "dropout2", "activation"};
  enum Slot : size_t { SelfAttn, Linear1, DropoutFF, Linear2, Norm1, Norm2, Dropout1, Dropout2, Act, kSlots };

  int64_t dModel, nhead, dimFeedforward;
  double dropout;
  std::string activation;
  bool batchFirst, normFirst;
  double layerNormEps;

 protected:
  void backwardImpl(const Tensor& input, const Tensor& gradOutput, double scale) override;
  // The child that is handed the layer's input, so setGradInputNeeded(false) reaches it:
  // self_attn in post-norm (its input gradient then is never computed), norm1 in pre-norm.
  bool childSeesInput(size_t i) const override { return i == (normFirst ? Norm1 : SelfAttn); }

 private:
  void checkModules(const char* method) const;
  // sum = branch + x, in branch's own buffer where it can (Note [Residual sums in place])
  static void residualSum(Tensor& sum, const Tensor& branch, const Tensor& x);
  // {S, B}; input [S x B x E] or [B x S x E]
  void checkInput(const Tensor& input, const char* method) const;
  // The children's backward in reverse; the input's gradient into `gradIn`.
  void backwardPass(const Tensor& input, const Tensor& gradOutput, double scale, Tensor& gradIn);
  // forward intermediates (row views [tokens x E])
  Tensor sum1_, sum2_, gradScratch_, gradH_;
  Tensor outs_[kSlots];  // the children's outputs as their forward() returned them
};

}  // namespace nn

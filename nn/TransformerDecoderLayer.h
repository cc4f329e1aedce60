// TransformerDecoderLayer.h: PyTorch's nn.TransformerDecoderLayer (Vaswani et al. 2017) as a
// container of ordinary modules (so convert() swaps each for its twin), named as PyTorch's
// submodules so that a PyTorch layer's state_dict loads as saved:
//   self_attn, multihead_attn (MultiheadAttention), linear1 (Linear E -> F), dropout,
//   linear2 (F -> E), norm1, norm2, norm3 (LayerNorm), dropout1, dropout2, dropout3 (Dropout),
//   activation (ReLU or GELU).
// Input the table {tgt, memory} (nn/Value.h): tgt [T x B x E], memory [S x B x E] ([B x T x E]
// and [B x S x E] with batchFirst); output tgt's shape; gradInput the table {gradTgt, gradMemory}.
// Post-norm (normFirst = false):  h1 = norm1(x + dropout1(sa(x)))
//                                 h2 = norm2(h1 + dropout2(mha(h1, memory)))
//                                 y  = norm3(h2 + dropout3(ff(h2)))
// Pre-norm  (normFirst = true):   h1 = x + dropout1(sa(norm1(x)))
//                                 h2 = h1 + dropout2(mha(norm2(h1), memory))
//                                 y  = h2 + dropout3(ff(norm3(h2)))
// with ff(z) = linear2(dropout(activation(linear1(z)))) and mha the cross-attention whose keys
// and values are the memory's (MultiheadAttention::setMemory, set by every forward).
// PyTorch's forward arguments are switches here, kept until changed (Tensor() clears a mask):
// setTgtIsCausal / setMemoryIsCausal (tgt_is_causal, memory_is_causal: causal attention; PyTorch
// asks for the matching tgt_mask too, which is not needed here), setTgtMask / setMemoryMask
// (attn_mask: uint8, nonzero = not allowed, or additive float, [T x T] / [T x S] or per head),
// setTgtKeyPaddingMask / setMemoryKeyPaddingMask (uint8 [B x T] / [B x S], nonzero = ignore),
// and key lengths (int64 [B]) as the key padding masks' fast form; each goes to self_attn or
// multihead_attn. setGradInputNeeded(false) drops gradTgt (the table's first entry is then
// empty); the memory's gradient is always given, as an encoder's output needs it.
// Prints as "nn.TransformerDecoderLayer(64, nhead=4, dim_feedforward=256, ...) { children }".
// Twin: cudnn::TransformerDecoderLayer (cudnn/TransformerDecoderLayer.h).
#pragma once

#include "nn/Container.h"

namespace nn {

class MultiheadAttention;
class LayerNorm;
class Linear;

class TransformerDecoderLayer : public Container {
 public:
  TransformerDecoderLayer(int64_t dModel, int64_t nhead, int64_t dimFeedforward = 2048, double dropout = 0.1,
                          std::string activation = "relu", bool batchFirst = false, bool normFirst = false,
                          double layerNormEps = 1e-5);

  // The tensor interface cannot hold {tgt, memory}: it throws, naming forward(nn::Value).
  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  const Value& updateOutputValue(const Value& input) override;
  // The children's backward is the only way through them: updateGradInputValue runs it with
  // scale 0, accGradParametersValue into scratch (gradInputValue left alone); backward() once.
  const Value& updateGradInputValue(const Value& input, const Value& gradOutput) override;
  void accGradParametersValue(const Value& input, const Value& gradOutput, double scale = 1.0) override;
  bool usesTables() const override { return true; }
  static constexpr std::string_view kTypeName = "nn.TransformerDecoderLayer";
  std::string type_name() const override { return std::string(kTypeName); }
  tensor::Json config() const override;
  // children as config() leaves them out (model files store them apart), in kChildNames' order
  static ModulePtr fromConfig(const tensor::Json& config, std::vector<ModulePtr> children);
  std::string str() const override;
  std::string childName(size_t i) const override;

  void setTgtIsCausal(bool causal);
  bool tgtIsCausal() const;
  void setMemoryIsCausal(bool causal);
  bool memoryIsCausal() const;
  void setTgtMask(const Tensor& mask);
  void setMemoryMask(const Tensor& mask);
  void setTgtKeyPaddingMask(const Tensor& mask);
  void setMemoryKeyPaddingMask(const Tensor& mask);
  void setTgtKeyLengths(const Tensor& lengths);     // int64 [B] or Tensor()
  void setMemoryKeyLengths(const Tensor& lengths);  // int64 [B] or Tensor()

  // The children by role (throw naming the slot when one was replaced by another type).
  MultiheadAttention& selfAttn() const;
  MultiheadAttention& multiheadAttn() const;
  Linear& linear1() const;
  Linear& linear2() const;
  LayerNorm& norm1() const;
  LayerNorm& norm2() const;
  LayerNorm& norm3() const;

  // PyTorch's submodule names, in the order of `modules`.
  static constexpr const char* kChildNames[] = {"self_attn", "multihead_attn", "linear1",  "dropout",
                                                "linear2",   "norm1",          "norm2",    "norm3",
                                                "dropout1",  "dropout2",       "dropout3", "activation"};
  enum Slot : size_t {
    SelfAttn,
    CrossAttn,
    Linear1,
    DropoutFF,
    Linear2,
    Norm1,
    Norm2,
    Norm3,
    Dropout1,
    Dropout2,
    Dropout3,
    Act,
    kSlots
  };

  int64_t dModel, nhead, dimFeedforward;
  double dropout;
  std::string activation;
  bool batchFirst, normFirst;
  double layerNormEps;

 protected:
  void backwardValueImpl(const Value& input, const Value& gradOutput, double scale) override;
  // The child handed tgt itself, so setGradInputNeeded(false) reaches it: self_attn in
  // post-norm, norm1 in pre-norm.
  bool childSeesInput(size_t i) const override { return i == (normFirst ? Norm1 : SelfAttn); }
  // The checks a twin adds to the shapes' (its tensors on one CUDA device): tgt, memory and,
  // in backward, gradOutput (undefined in forward).
  virtual void checkDevices(const char* method, const Tensor& tgt, const Tensor& memory,
                            const Tensor& gradOutput) const;

 private:
  void checkModules(const char* method) const;
  // {tgt, memory} of the input table, checked against each other and dModel
  std::pair<Tensor, Tensor> entries(const Value& input, const char* method) const;
  // The children's backward in reverse; tgt's gradient into gradTgt (undefined when not
  // needed), memory's into gradMemory.
  void backwardPass(const Value& input, const Value& gradOutput, double scale, bool needTgt, Tensor& gradTgt,
                    Tensor& gradMemory);
  // forward intermediates (row views [tokens x E]) and backward's sums
  Tensor sum1_, sum2_, sum3_, gradA_, gradB_, scratchTgt_, scratchMemory_;
  Tensor outs_[kSlots];  // the children's outputs as their forward() returned them
};

}  // namespace nn

// Embedding.h: a lookup table (PyTorch's nn.Embedding): int64 indices of any shape -> the
// rows of weight [numEmbeddings x embeddingDim], output shape = indices' shape + [embeddingDim].
// weight is N(0, 1), its paddingIdx row zero; paddingIdx (negative counts from the end, as
// PyTorch; stored in [0, numEmbeddings)) gets no gradient. An index outside
// [0, numEmbeddings) is an error naming it. Indices are not differentiable: backward
// accumulates gradWeight only and leaves gradInput undefined, so an Embedding is the first
// module of a network. to(dtype) converts weight; the input stays int64.
// Prints as "nn.Embedding(1000 -> 64, padding_idx=0)". Twin: cudnn::Embedding (cudnn/Embedding.h).
#pragma once

#include <optional>

#include "nn/Module.h"

namespace nn {

class Embedding : public Module {
 public:
  Embedding(int64_t numEmbeddings, int64_t embeddingDim, std::optional<int64_t> paddingIdx = std::nullopt);

  const Tensor& updateOutput(const Tensor& input) override;
  // Leaves gradInput undefined (the indices have no gradient), after checking gradOutput.
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  void accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale = 1.0) override;
  void reset();  // N(0, 1), the padding row zeroed
  static constexpr std::string_view kTypeName = "nn.Embedding";
  std::string type_name() const override { return std::string(kTypeName); }
  tensor::Json config() const override;
  static ModulePtr fromConfig(const tensor::Json& config);
  std::string str() const override;

  int64_t numEmbeddings, embeddingDim;
  std::optional<int64_t> paddingIdx;  // in [0, numEmbeddings)
  Tensor weight, gradWeight;

 protected:
  void visitState(StateVisitor& v) override;
  // int64 indices on the CPU, each in [0, numEmbeddings); throws naming the first bad one.
  void checkIndices(const Tensor& input, const char* method) const;
  // weight (and with `gradients` gradWeight) of [numEmbeddings x embeddingDim], dense (Note
  // [Parameters are checked where they are used] in nn/Buffers.h); both backends call it.
  void checkParameters(const char* method, bool gradients) const;
  // Its two halves, which the twin (indices on the GPU) shares: the dtype, and the error for
  // the first index out of range (`value` at flat position `element` of input).
  void checkIndexDType(const Tensor& input, const char* method) const;
  [[noreturn]] void throwBadIndex(const Tensor& input, int64_t element, int64_t value, const char* method) const;
  // gradOutput of shape input + [embeddingDim], of the weight's dtype.
  void checkGradOutput(const Tensor& input, const Tensor& gradOutput, const char* method) const;
};

}  // namespace nn

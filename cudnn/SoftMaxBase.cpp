// SoftMaxBase.cpp: buffers around SoftmaxPlan, as nn::SoftMaxBase.
#include "cudnn/SoftMaxBase.h"

#include "cudnn/core/Layout.h"
#include "nn/Buffers.h"

namespace cudnn::detail {

namespace {
// [outer x channels x inner]; SoftmaxPlan describes it as [outer x channels x inner x 1]
// (with a channels-last tensor's strides [inner*channels x 1 x channels], which cuDNN takes).
Tensor as_3d(const Tensor& t, const nn::SoftMaxBase::Layout& l) { return t.view({l.outer, l.channels, l.inner}); }

// Channels-last stays channels-last where the softmax runs over dim 1 of a batched 4-d or
// 5-d tensor (the spatial softmaxes); any other layout is made row-major.
tensor::MemoryFormat format_of(const Tensor& t, const nn::SoftMaxBase::Layout& l) {
  const bool spatial = (t.dim() == 4 || t.dim() == 5) && l.outer == t.size(0) && l.channels == t.size(1);
  return spatial ? activation_format(t) : tensor::MemoryFormat::Contiguous;
}
}  // namespace

SoftmaxAlgo SoftMaxCompute::algo(const nn::SoftMaxBase& m) const {
  if (m.isLog()) return SoftmaxAlgo::Log;
  return m.fast ? SoftmaxAlgo::Fast : SoftmaxAlgo::Accurate;
}

void SoftMaxCompute::forward(nn::SoftMaxBase& m, const nn::SoftMaxBase::Layout& l, const Tensor& input) {
  const tensor::MemoryFormat format = format_of(input, l);
  const Tensor x = as_format(input, format);
  nn::ensure(m.output, x.sizes(), x, format);
  if (x.numel() == 0) return;
  plan_.forward(algo(m), SoftmaxMode::Channel, as_3d(x, l), as_3d(m.output, l));
}

void SoftMaxCompute::backward(nn::SoftMaxBase& m, const nn::SoftMaxBase::Layout& l, const Tensor& gradOutput) {
  // y, dy and dx share one layout: the output's
  const tensor::MemoryFormat format = tensor::suggest_memory_format(m.output);
  const Tensor dy = as_format(gradOutput, format);
  nn::ensure(m.gradInput, dy.sizes(), dy, format);
  if (dy.numel() == 0) return;
  plan_.backward(algo(m), SoftmaxMode::Channel, as_3d(m.output, l), as_3d(dy, l), as_3d(m.gradInput, l));
}

}  // namespace cudnn::detail

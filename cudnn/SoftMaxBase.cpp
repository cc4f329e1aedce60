// SoftMaxBase.cpp: buffers around SoftmaxPlan, as nn::SoftMaxBase.
#include "cudnn/SoftMaxBase.h"

#include "cudnn/core/Layout.h"
#include "cudnn/ops/softmax.h"
#include "nn/Buffers.h"

namespace cudnn::detail {

namespace {
// [outer x channels x inner]; SoftmaxPlan describes it as [outer x channels x inner x 1].
// Channels-last data goes as it is, 4-d with NHWC strides (the same softmax over dim 1).
Tensor as_3d(const Tensor& t, const nn::SoftMaxBase::Layout& l) {
  if (tensor::suggest_memory_format(t) == tensor::MemoryFormat::ChannelsLast) return t;
  return t.view({l.outer, l.channels, l.inner});
}

// Channels-last stays channels-last where the softmax runs over dim 1 of a batched 4-d
// tensor (the spatial softmaxes; cuDNN describes it as NHWC); any other layout, the
// volumetric ones' NDHWC included, is made row-major.
tensor::MemoryFormat format_of(const Tensor& t, const nn::SoftMaxBase::Layout& l) {
  const bool spatial = t.dim() == 4 && l.outer == t.size(0) && l.channels == t.size(1);
  return spatial ? activation_format(t) : tensor::MemoryFormat::Contiguous;
}

SoftmaxAlgo algo(const nn::SoftMaxBase& m) {
  if (m.isLog()) return SoftmaxAlgo::Log;
  return m.fast ? SoftmaxAlgo::Fast : SoftmaxAlgo::Accurate;
}
}  // namespace

SoftMaxCompute::SoftMaxCompute() : plan_(std::make_unique<SoftmaxPlan>()) {}
SoftMaxCompute::~SoftMaxCompute() = default;

void SoftMaxCompute::forward(nn::SoftMaxBase& m, const nn::SoftMaxBase::Layout& l, const Tensor& input) {
  const tensor::MemoryFormat format = format_of(input, l);
  const Tensor x = as_format(input, format);
  nn::ensure(m.output, x.sizes(), x, format);
  if (x.numel() == 0) return;
  plan_->forward(algo(m), SoftmaxMode::Channel, as_3d(x, l), as_3d(m.output, l));
}

void SoftMaxCompute::backward(nn::SoftMaxBase& m, const nn::SoftMaxBase::Layout& l, const Tensor& gradOutput) {
  // y, dy and dx share one layout: the output's
  const tensor::MemoryFormat format = tensor::suggest_memory_format(m.output);
  const Tensor dy = as_format(gradOutput, format);
  nn::ensure(m.gradInput, dy.sizes(), dy, format);
  if (dy.numel() == 0) return;
  plan_->backward(algo(m), SoftmaxMode::Channel, as_3d(m.output, l), as_3d(dy, l), as_3d(m.gradInput, l));
}

}  // namespace cudnn::detail

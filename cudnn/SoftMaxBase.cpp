// SoftMaxBase.cpp: buffers around SoftmaxPlan, as nn::SoftMaxBase.
#include "cudnn/SoftMaxBase.h"

#include "nn/Buffers.h"

namespace cudnn::detail {

namespace {
// [outer x channels x inner]; SoftmaxPlan describes it as [outer x channels x inner x 1]
Tensor as_3d(const Tensor& t, const nn::SoftMaxBase::Layout& l) { return t.view({l.outer, l.channels, l.inner}); }
}  // namespace

SoftmaxAlgo SoftMaxCompute::algo(const nn::SoftMaxBase& m) const {
  if (m.isLog()) return SoftmaxAlgo::Log;
  return m.fast ? SoftmaxAlgo::Fast : SoftmaxAlgo::Accurate;
}

void SoftMaxCompute::forward(nn::SoftMaxBase& m, const nn::SoftMaxBase::Layout& l, const Tensor& input) {
  const Tensor x = input.contiguous();
  nn::ensure(m.output, x.sizes(), x);
  if (x.numel() == 0) return;
  plan_.forward(algo(m), SoftmaxMode::Channel, as_3d(x, l), as_3d(m.output, l));
}

void SoftMaxCompute::backward(nn::SoftMaxBase& m, const nn::SoftMaxBase::Layout& l, const Tensor& gradOutput) {
  const Tensor dy = gradOutput.contiguous();
  nn::ensure(m.gradInput, dy.sizes(), dy);
  if (dy.numel() == 0) return;
  plan_.backward(algo(m), SoftmaxMode::Channel, as_3d(m.output, l), as_3d(dy, l), as_3d(m.gradInput, l));
}

}  // namespace cudnn::detail

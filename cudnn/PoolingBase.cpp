// PoolingBase.cpp: buffers and the batch-of-one view around PoolPlan, for every pooling twin.
#include "cudnn/PoolingBase.h"

#include "cudnn/core/Layout.h"
#include "cudnn/ops/pool.h"
#include "nn/Buffers.h"

namespace cudnn::detail {

namespace {
// cuDNN wants [N x C x spatial]: a [C x spatial] tensor is viewed as a batch of one.
Tensor batched(const Tensor& t, size_t spatial) {
  return t.dim() == static_cast<int64_t>(spatial) + 1 ? t.unsqueeze(0) : t;
}
}  // namespace

struct PoolingCompute::Plan {
  PoolPlan plan;
  PoolParams params;

  // The nn fields as cuDNN pooling parameters (window, stride, padding in the tensor's dim order).
  const PoolParams& set(const PoolSettings& w, bool average) {
    params.ws.clear();
    params.stride.clear();
    params.pad.clear();
    for (int s = 3 - w.dims; s < 3; ++s) {
      params.ws.push_back(static_cast<int>(w.k[s]));
      params.stride.push_back(static_cast<int>(w.d[s]));
      params.pad.push_back(static_cast<int>(w.pad[s]));
    }
    params.ceil_mode = w.ceilMode;
    params.mode = !average ? PoolMode::Max : w.countIncludePad ? PoolMode::AverageIncPad : PoolMode::AverageExcPad;
    return params;
  }
};

PoolingCompute::PoolingCompute(bool average) : plan_(std::make_unique<Plan>()), average_(average) {}
PoolingCompute::~PoolingCompute() = default;

void PoolingCompute::forward(nn::Module& m, const Tensor& input, const Shape& outShape, const PoolSettings& s) {
  const PoolParams& p = plan_->set(s, average_);
  ran_ = false;
  const tensor::MemoryFormat format = activation_format(input);  // Note [Channels-last twins]
  const Tensor x = as_format(input, format);
  nn::ensure(m.output, outShape, x, format);
  if (x.numel() > 0) plan_->plan.forward(batched(x, p.ws.size()), batched(m.output, p.ws.size()), p);
  // See Note [Pooling backward state]; the channels-last max kernel finds the maxima again from x
  // (an undefined y_ says no copy was kept)
  if (!average_ && PoolPlan::backward_reads_output(batched(x, p.ws.size()), p)) {
    nn::ensure(y_, outShape, x, format).copy_(m.output);
  } else {
    y_ = Tensor();
  }
  ran_ = true;
  if (shape_ != input.sizes() || dtype_ != input.dtype() || device_ != input.device()) {
    shape_ = input.sizes();
    dtype_ = input.dtype();
    device_ = input.device();
    last_ = input.description();
  }
}

void PoolingCompute::backward(nn::Module& m, const Tensor& input, const Tensor& gradOutput, const PoolSettings& s) {
  const PoolParams& p = plan_->set(s, average_);
  const tensor::MemoryFormat format = activation_format(input);
  const Tensor x = as_format(input, format);
  const Tensor dy = as_format(gradOutput, format);
  nn::ensure(m.gradInput, x.sizes(), x, format);
  if (x.numel() == 0) return;
  const size_t nd = p.ws.size();
  // See Note [Pooling backward state]; y and dy share a descriptor, so one layout
  Tensor y;
  if (PoolPlan::backward_reads_output(batched(x, nd), p)) {
    if (average_ || y_.defined()) {
      y = as_format(average_ ? m.output : y_, format);
    } else {  // the forward kept no copy (its layout took our kernel; config().channels_last changed since)
      y = tensor::empty(dy.sizes(), x.dtype(), x.device(), format);
      plan_->plan.forward(batched(x, nd), batched(y, nd), p);
    }
  }
  plan_->plan.backward(batched(x, nd), y.defined() ? batched(y, nd) : y, batched(dy, nd), batched(m.gradInput, nd), p);
}

bool PoolingCompute::ranOn(const nn::Module& m, const Tensor& input, const Shape& outShape) const {
  const bool same_input = ran_ && shape_ == input.sizes() && dtype_ == input.dtype() && device_ == input.device();
  if (!average_ && !y_.defined()) return same_input;  // no copy kept: backward reads x alone
  const Tensor& y = average_ ? m.output : y_;
  return same_input && y.defined() && y.sizes() == outShape && y.dtype() == input.dtype() &&
         y.device() == input.device();
}

}  // namespace cudnn::detail

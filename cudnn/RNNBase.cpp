// RNNBase.cpp: the recurrent twins' compute (detail::RNNCompute) over one RNNBlock.
#include "cudnn/RNNBase.h"

#include "cudnn/ops/rnn.h"
#include "nn/Buffers.h"
#include "tensor/Cuda.h"

namespace cudnn::detail {

// Note [Flat RNN weights]
// cuDNN reads an RNN's weights from one buffer in its own layout. The twin owns that buffer
// (w_) and a gradient buffer of the same layout (dw_), and REPLACES each named parameter's
// value and grad (nn::RNNBase::params) by views into them, found with cudnnGetRNNWeightParams
// (RNNBlock::split_params): a parameter's gate blocks (weight_ih_l0's rows i, f, g, o) must be
// consecutive there, which is checked, never assumed. Everything that sees parameters
// (parameters(), optimizers' in-place steps, loadStateDict, model files, convert) then sees
// ordinary tensors that ARE what cuDNN computes with, with no copy per step.
// The views move with the state: to(Device)/to(DType) let nn give new separate tensors, then
// flatten() copies them into fresh buffers of the new dtype and views them again. A parameter
// replaced by assignment (reset() does so in nn) is copied back into its view at the next
// forward. On the CPU (a model file's cudnn module before .to(cuda)) parameters stay plain.

namespace {

// A parameter's gates [g*H, (g+1)*H) as one view: consecutive in the buffer, or an error.
Tensor joined(const std::vector<RNNGate>& gates, size_t first, size_t count, bool matrix, const std::string& name) {
  const Tensor& g0 = matrix ? gates[first].weight : gates[first].bias;
  if (!g0.defined()) throw tensor::Error("cudnn::RNNBase: cuDNN keeps no " + name + " (skip input mode?)");
  for (size_t g = 1; g < count; ++g) {
    const Tensor& t = matrix ? gates[first + g].weight : gates[first + g].bias;
    if (!t.defined() || t.sizes() != g0.sizes() ||
        t.storage_offset() != g0.storage_offset() + static_cast<int64_t>(g) * g0.numel()) {
      throw tensor::Error("cudnn::RNNBase: cuDNN's gate blocks of " + name +
                          " are not consecutive in its weight buffer; this cuDNN's layout is not supported");
    }
  }
  const int64_t rows = g0.size(0) * static_cast<int64_t>(count);
  if (!matrix) return Tensor(g0.storage(), g0.storage_offset(), {rows}, {1}, g0.dtype());
  return Tensor(g0.storage(), g0.storage_offset(), {rows, g0.size(1)}, {g0.size(1), 1}, g0.dtype());
}

// The views of every parameter (in params' order) into `buffer`.
std::vector<Tensor> parameter_views(RNNBlock& b, const nn::RNNBase& m, const Tensor& buffer) {
  const size_t G = static_cast<size_t>(m.gateCount());
  std::vector<Tensor> views(m.params.size());
  for (int64_t l = 0; l < m.numLayers(); ++l) {
    for (int64_t d = 0; d < m.numDirections(); ++d) {
      const std::vector<RNNGate> gates = b.split_params(buffer, l * m.numDirections() + d, m.inputDim());
      const size_t i = m.paramIndex(l, d, 0);
      views[i] = joined(gates, 0, G, true, m.params[i].name);
      views[i + 1] = joined(gates, G, G, true, m.params[i + 1].name);
      if (!m.bias()) continue;  // CUDNN_RNN_NO_BIAS: cuDNN keeps no bias vectors
      views[i + 2] = joined(gates, 0, G, false, m.params[i + 2].name);
      views[i + 3] = joined(gates, G, G, false, m.params[i + 3].name);
    }
  }
  return views;
}

// `t` as a contiguous tensor on `like`'s device (a private copy in `buf` where it must move).
Tensor on_device(Tensor& buf, const Tensor& t, const Tensor& like) {
  if (!t.defined()) return Tensor();
  if (t.device() == like.device() && t.is_contiguous()) return t;
  return nn::ensure(buf, t.sizes(), like).copy_(t);
}

}  // namespace

RNNCompute::RNNCompute() = default;
RNNCompute::~RNNCompute() = default;

bool RNNCompute::backwardDataDone() const { return block_ && block_->backward_data_done(); }
const char* RNNCompute::algorithm() const { return block_ ? block_->algorithm() : "standard"; }

bool RNNCompute::flatten(nn::RNNBase& m) {
  if (!m.device().is_cuda()) {
    w_ = dw_ = dwScratch_ = Tensor();
    views_.clear();
    return false;
  }
  const DType dt = m.params[0].value.dtype();
  const size_t P = m.params.size();
  if (w_.defined() && w_.dtype() == dt && w_.device() == m.device() && views_.size() == 2 * P) {
    for (size_t i = 0; i < P; ++i) {
      nn::RNNParameter& p = m.params[i];
      for (int k = 0; k < 2; ++k) {
        Tensor& t = k == 0 ? p.value : p.grad;
        const Tensor& v = views_[2 * i + k];
        if (t.is_same_view(v)) continue;
        if (t.defined() && t.sizes() != v.sizes()) {
          throw tensor::Error(m.where("updateOutput") + "expected " + p.name + (k ? "'s gradient" : "") + " of " +
                              tensor::shape_str(v.sizes()) + ", got " + t.description() +
                              " (was the field replaced by hand?)");
        }
        if (t.defined())
          Tensor(v).copy_(t);
        else
          Tensor(v).zero_();
        t = v;
      }
    }
    return false;
  }
  tensor::cuda::DeviceGuard guard(m.device().index);
  if (!block_ || block_->dtype() != dt) {
    block_ = std::make_unique<RNNBlock>(dt, m.outputDim(), m.numLayers(), m.mode(), RNNInputMode::Linear,
                                        m.bidirectional() ? RNNDirection::Bidirectional : RNNDirection::Unidirectional,
                                        m.bias());
  }
  const int64_t n = block_->param_size(m.inputDim());
  Tensor w = tensor::zeros({n}, dt, m.device()), dw = tensor::zeros({n}, dt, m.device());
  const std::vector<Tensor> values = parameter_views(*block_, m, w), grads = parameter_views(*block_, m, dw);
  views_.assign(2 * P, Tensor());
  for (size_t i = 0; i < P; ++i) {
    nn::RNNParameter& p = m.params[i];
    if (p.value.sizes() != values[i].sizes()) {
      throw tensor::Error(m.type_name() + ": expected " + p.name + " of " + tensor::shape_str(values[i].sizes()) +
                          ", got " + p.value.description());
    }
    if (p.grad.defined() && p.grad.sizes() != grads[i].sizes()) {
      throw tensor::Error(m.where("updateOutput") + "expected " + p.name + "'s gradient of " +
                          tensor::shape_str(grads[i].sizes()) + ", got " + p.grad.description() +
                          " (was the field replaced by hand?)");
    }
    Tensor(values[i]).copy_(p.value);
    if (p.grad.defined()) Tensor(grads[i]).copy_(p.grad);
    p.value = values[i];
    p.grad = grads[i];
    views_[2 * i] = values[i];
    views_[2 * i + 1] = grads[i];
  }
  w_ = w;
  dw_ = dw;
  dwScratch_ = Tensor();
  return true;
}

void RNNCompute::seedDropout(uint64_t seed) {
  seed_ = seed;
  seeded_ = true;
}

RNNBlock& RNNCompute::block(nn::RNNBase& m) {
  const bool dropping = m.dropout() > 0 && m.numLayers() > 1;
  if (dropping && !seeded_) {
    // Note [Dropout seeding]: drawn once from the library's generator, so manual_seed() fixes it
    seed_ = static_cast<uint64_t>(tensor::default_generator().uniform() * 9007199254740992.0);
    seeded_ = true;
  }
  block_->set_dropout(dropping ? m.dropout() : 0, seed_);
  block_->set_persist(m.persist);
  return *block_;
}

void RNNCompute::forward(nn::RNNBase& m, const Tensor& input, bool training) {
  RNNBlock& b = block(m);
  RNNSequence s;
  s.x = input.contiguous();
  s.batchFirst = m.batchFirst();
  s.lengths = m.sequenceLengths;
  s.training = training;
  // private copies: cuDNN reads the initial states again in backward, and hiddenInput may
  // change (rememberStates makes it the copy of the last hiddenOutput) before then
  const bool lstm = m.mode() == nn::RNNMode::LSTM;
  if (m.hiddenInput.defined()) s.h0 = nn::ensure(h0_, m.hiddenInput.sizes(), s.x).copy_(m.hiddenInput);
  if (lstm && m.cellInput.defined()) s.c0 = nn::ensure(c0_, m.cellInput.sizes(), s.x).copy_(m.cellInput);
  b.forward(w_, s, m.output, m.hiddenOutput, m.cellOutput);
  if (!lstm) m.cellOutput = Tensor();
}

void RNNCompute::backwardData(nn::RNNBase& m, const Tensor& gradOutput) {
  const bool lstm = m.mode() == nn::RNNMode::LSTM;
  const Tensor dy = gradOutput.contiguous();
  const Tensor dhy = on_device(dhy_, m.gradHiddenOutput, dy);
  const Tensor dcy = lstm ? on_device(dcy_, m.gradCellOutput, dy) : Tensor();
  block_->backward_data(w_, dy, dhy, dcy, m.gradInput, m.gradHiddenInput, m.gradCellInput);
  if (!lstm) m.gradCellInput = Tensor();
}

void RNNCompute::backwardWeights(double scale) {
  if (scale == 1.0) {
    block_->backward_weights(dw_);  // cuDNN adds (CUDNN_WGRAD_MODE_ADD), as accGradParameters does
    return;
  }
  nn::ensure(dwScratch_, dw_.sizes(), dw_).zero_();
  block_->backward_weights(dwScratch_);
  dw_.add_(dwScratch_, scale);
}

}  // namespace cudnn::detail

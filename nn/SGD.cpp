// SGD.cpp
#include "nn/SGD.h"

#include <cmath>
#include <vector>

#include "tensor/MultiTensor.h"

namespace nn {

SGD::SGD(std::vector<Tensor> params, std::vector<Tensor> grads, double lr_, double momentum_, double dampening_,
         double weightDecay_, bool nesterov_)
    : Optimizer(std::move(params), std::move(grads), std::string(kTypeName)),
      lr(lr_),
      momentum(momentum_),
      dampening(dampening_),
      weightDecay(weightDecay_),
      nesterov(nesterov_) {
  checkOptions("SGD");
}

SGD::SGD(std::vector<Tensor> params, std::vector<Tensor> grads, const Options& o)
    : SGD(std::move(params), std::move(grads), o.lr, o.momentum, o.dampening, o.weightDecay, o.nesterov) {}

SGD::SGD(Module& m, double lr_, double momentum_, double dampening_, double weightDecay_, bool nesterov_)
    : SGD(m.parameters(), m.gradParameters(), lr_, momentum_, dampening_, weightDecay_, nesterov_) {}

SGD::SGD(Module& m, const Options& o) : SGD(m.parameters(), m.gradParameters(), o) {}

void SGD::checkOptions(const char* method) const {
  auto bad = [&](const std::string& what) { throw Error(where(method) + what); };
  if (!(lr >= 0)) bad("expected lr >= 0, got " + std::to_string(lr));
  if (!(momentum >= 0)) bad("expected momentum >= 0, got " + std::to_string(momentum));
  if (!(weightDecay >= 0)) bad("expected weightDecay >= 0, got " + std::to_string(weightDecay));
  if (!std::isfinite(dampening)) bad("expected a finite dampening, got " + std::to_string(dampening));
  if (nesterov && (momentum <= 0 || dampening != 0)) {
    bad("expected momentum > 0 and dampening 0 for Nesterov momentum, got momentum " + std::to_string(momentum) +
        " and dampening " + std::to_string(dampening));
  }
}

void SGD::step() {
  checkOptions("step");
  // Note [Atomic step]: every buffer first, then only in-place updates
  const size_t n = params_.size();
  std::vector<bool> inGroup;
  const auto groups = fusedCudaGroups({"momentum_buffer"}, inGroup);
  std::vector<Tensor> scratch(n), fresh(n);
  for (size_t i = 0; i < n; ++i) {
    if (!inGroup[i] && (weightDecay != 0 || nesterov)) scratch[i] = tensor::empty_like(params_[i]);
    if (momentum != 0 && !state_[i].count("momentum_buffer")) fresh[i] = tensor::empty_like(params_[i]);
  }
  // Note [Fused optimizer steps]: the fused groups first, then the tensor ops
  for (const auto& group : groups) {
    std::vector<Tensor> p, g, buf;
    std::vector<uint8_t> first;
    for (size_t i : group) {
      p.push_back(params_[i]);
      g.push_back(grads_[i]);
      if (momentum != 0) {
        first.push_back(fresh[i].defined() ? 1 : 0);
        buf.push_back(fresh[i].defined() ? fresh[i] : state_[i].at("momentum_buffer"));
      }
    }
    tensor::cuda::sgd_step(p, g, buf, first, {lr, momentum, dampening, weightDecay, nesterov});
    for (size_t i : group) {
      if (fresh[i].defined()) state_[i]["momentum_buffer"] = fresh[i];
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (inGroup[i]) continue;
    Tensor& p = params_[i];
    Tensor d = grads_[i];
    if (weightDecay != 0) d = scratch[i].copy_(grads_[i]).add_(p, weightDecay);
    if (momentum != 0) {
      Tensor& buf = state_[i]["momentum_buffer"];
      if (fresh[i].defined()) {
        buf = fresh[i].copy_(d);
      } else {
        buf.mul_(momentum).add_(d, 1 - dampening);
      }
      if (nesterov) {
        if (weightDecay == 0) scratch[i].copy_(d);
        d = scratch[i].add_(buf, momentum);
      } else {
        d = buf;
      }
    }
    p.add_(d, -lr);
  }
}

}  // namespace nn

// SGD.cpp
#include "nn/SGD.h"

#include <cmath>
#include <vector>

#include "tensor/MultiTensor.h"

namespace nn {

SGD::SGD(std::vector<ParamGroup> groups, const Options& o)
    : Optimizer(std::move(groups), std::string(kTypeName)),
      momentum(o.momentum),
      dampening(o.dampening),
      nesterov(o.nesterov) {
  lr = o.lr;
  weightDecay = o.weightDecay;
  checkOptions("SGD");
}

SGD::SGD(std::vector<Tensor> params, std::vector<Tensor> grads, double lr_, double momentum_, double dampening_,
         double weightDecay_, bool nesterov_)
    : SGD(std::move(params), std::move(grads), Options{lr_, momentum_, dampening_, weightDecay_, nesterov_}) {}

SGD::SGD(std::vector<Tensor> params, std::vector<Tensor> grads, const Options& o)
    : SGD(std::vector<ParamGroup>{{std::move(params), std::move(grads), std::nullopt, std::nullopt}}, o) {}

SGD::SGD(Module& m, double lr_, double momentum_, double dampening_, double weightDecay_, bool nesterov_)
    : SGD(m.parameters(), m.gradParameters(), lr_, momentum_, dampening_, weightDecay_, nesterov_) {}

SGD::SGD(Module& m, const Options& o) : SGD(m.parameters(), m.gradParameters(), o) {}

void SGD::checkOptions(const char* method) const {
  auto bad = [&](const std::string& what) { throw Error(where(method) + what); };
  checkGroups(method);
  if (!(momentum >= 0)) bad("expected momentum >= 0, got " + std::to_string(momentum));
  if (!std::isfinite(dampening)) bad("expected a finite dampening, got " + std::to_string(dampening));
  if (nesterov && (momentum <= 0 || dampening != 0)) {
    bad("expected momentum > 0 and dampening 0 for Nesterov momentum, got momentum " + std::to_string(momentum) +
        " and dampening " + std::to_string(dampening));
  }
}

void SGD::step() { update(nullptr, "step"); }

void SGD::stepIfFinite(const Tensor& foundInf) { update(&foundInf, "stepIfFinite"); }

void SGD::update(const Tensor* flag, const char* method) {
  checkOptions(method);
  const size_t n = params_.size();
  std::vector<bool> inGroup;
  const auto groups = fusedCudaGroups({"momentum_buffer"}, inGroup);
  Tensor foundInf;  // read by the fused kernels
  if (flag) {
    foundInf = *flag;
    // The kernels skip on the device only where every parameter is theirs and no momentum buffer
    // is new (a new buffer would be recorded as made though the skipped kernel never wrote it).
    bool device =
        foundInf.defined() && foundInf.is_cuda() && foundInf.dtype() == DType::Float32 && foundInf.numel() == 1;
    for (size_t i = 0; i < n && device; ++i) {
      device = inGroup[i] && params_[i].device() == foundInf.device() &&
               (momentum == 0 || state_[i].count("momentum_buffer") > 0);
    }
    if (!device) {
      if (foundOnHost(foundInf, method)) return;
      foundInf = Tensor();
    }
  }
  // Note [Atomic step]: every buffer first, then only in-place updates
  std::vector<Tensor> scratch(n), fresh(n);
  for (size_t i = 0; i < n; ++i) {
    if (!inGroup[i] && (groupWeightDecay(groupOf_[i]) != 0 || nesterov)) scratch[i] = tensor::empty_like(params_[i]);
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
    const size_t k = groupOf_[group[0]];
    tensor::cuda::sgd_step(p, g, buf, first, {groupLr(k), momentum, dampening, groupWeightDecay(k), nesterov},
                           foundInf);
    for (size_t i : group) {
      if (fresh[i].defined()) state_[i]["momentum_buffer"] = fresh[i];
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (inGroup[i]) continue;
    Tensor& p = params_[i];
    const double rate = groupLr(groupOf_[i]), decay = groupWeightDecay(groupOf_[i]);
    Tensor d = grads_[i];
    if (decay != 0) d = scratch[i].copy_(grads_[i]).add_(p, decay);
    if (momentum != 0) {
      Tensor& buf = state_[i]["momentum_buffer"];
      if (fresh[i].defined()) {
        buf = fresh[i].copy_(d);
      } else {
        buf.mul_(momentum).add_(d, 1 - dampening);
      }
      if (nesterov) {
        if (decay == 0) scratch[i].copy_(d);
        d = scratch[i].add_(buf, momentum);
      } else {
        d = buf;
      }
    }
    p.add_(d, -rate);
  }
}

}  // namespace nn

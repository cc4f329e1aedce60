// SGD.cpp
#include "nn/SGD.h"

#include <cmath>

namespace nn {

SGD::SGD(std::vector<Tensor> params, std::vector<Tensor> grads, double lr_, double momentum_, double dampening_,
         double weightDecay_, bool nesterov_)
    : Optimizer(std::move(params), std::move(grads), "nn.SGD"),
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
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor& p = params_[i];
    Tensor d = decayed(p, grads_[i], weightDecay);
    if (momentum != 0) {
      auto [it, fresh] = state_[i].try_emplace("momentum_buffer");
      Tensor& buf = it->second;
      if (fresh) {
        buf = d.clone();
      } else {
        buf.mul_(momentum).add_(d, 1 - dampening);
      }
      d = nesterov ? d.add(buf, momentum) : buf;
    }
    p.add_(d, -lr);
  }
}

}  // namespace nn

// Adam.cpp
#include "nn/Adam.h"

#include <cmath>
#include <utility>
#include <vector>

#include "nn/kernels/Optimizer.h"
#include "tensor/Cuda.h"
#include "tensor/MultiTensor.h"

namespace nn {

Adam::Adam(std::vector<ParamGroup> groups, const Options& o, bool decoupled, std::string_view name)
    : Optimizer(std::move(groups), std::string(name)),
      beta1(o.beta1),
      beta2(o.beta2),
      eps(o.eps),
      decoupled_(decoupled) {
  lr = o.lr;
  weightDecay = o.weightDecay;
  checkOptions(decoupled ? "AdamW" : "Adam");
}

Adam::Adam(std::vector<ParamGroup> groups, const Options& o) : Adam(std::move(groups), o, false, kTypeName) {}

Adam::Adam(std::vector<Tensor> params, std::vector<Tensor> grads, double lr_, double beta1_, double beta2_, double eps_,
           double weightDecay_)
    : Adam(std::move(params), std::move(grads), Options{lr_, beta1_, beta2_, eps_, weightDecay_}) {}

Adam::Adam(std::vector<Tensor> params, std::vector<Tensor> grads, const Options& o)
    : Adam(std::vector<ParamGroup>{{std::move(params), std::move(grads), std::nullopt, std::nullopt}}, o) {}

Adam::Adam(Module& m, double lr_, double beta1_, double beta2_, double eps_, double weightDecay_)
    : Adam(m.parameters(), m.gradParameters(), lr_, beta1_, beta2_, eps_, weightDecay_) {}

Adam::Adam(Module& m, const Options& o) : Adam(m.parameters(), m.gradParameters(), o) {}

void Adam::checkOptions(const char* method) const {
  auto bad = [&](const std::string& what) { throw Error(where(method) + what); };
  checkGroups(method);
  if (!(beta1 >= 0 && beta1 < 1)) bad("expected 0 <= beta1 < 1, got " + std::to_string(beta1));
  if (!(beta2 >= 0 && beta2 < 1)) bad("expected 0 <= beta2 < 1, got " + std::to_string(beta2));
  if (!(eps >= 0)) bad("expected eps >= 0, got " + std::to_string(eps));
}

Tensor& Adam::moment(size_t i, const char* name) {
  auto [it, fresh] = state_[i].try_emplace(name);
  if (fresh) it->second = tensor::zeros_like(params_[i]);
  return it->second;
}

namespace {
// Contiguous CPU float32/float64 tensors of one dtype and size: kernels::adam_step's case.
bool fusable(const Tensor& p, const Tensor& g, const Tensor* m, const Tensor* v) {
  auto ok = [&](const Tensor& t) {
    return t.is_cpu() && t.is_contiguous() && t.dtype() == p.dtype() && t.numel() == p.numel();
  };
  return (p.dtype() == DType::Float32 || p.dtype() == DType::Float64) && ok(p) && ok(g) && (!m || ok(*m)) &&
         (!v || ok(*v));
}
}  // namespace

void Adam::step() {
  checkOptions("step");
  // The bias corrections come from the step count on the host: a captured step would replay
  // the count it saw at capture (Note [CUDA graphs] in tensor/Cuda.h).
  for (const Tensor& p : params_) {
    if (p.is_cuda() && tensor::cuda::Graph::capturing(p.device().index)) {
      throw tensor::Error(type_name() +
                          "::step: cannot be captured in a CUDA graph (its bias corrections use the step "
                          "count kept on the host, which a replay would not advance); capture SGD, or run Adam "
                          "eagerly");
    }
  }
  // Note [Atomic step]: the moments of new parameters and every temporary first (a failed
  // allocation leaves no moment, counter or parameter changed), then only in-place updates.
  // Fused parameters (CUDA groups, contiguous CPU tensors) need no temporary.
  const size_t n = params_.size();
  std::vector<bool> inGroup;
  const auto groups = fusedCudaGroups({"exp_avg", "exp_avg_sq"}, inGroup);
  std::vector<Tensor> denom(n), decayedGrad(n), m0(n), v0(n);
  std::vector<bool> onCpu(n);
  for (size_t i = 0; i < n; ++i) {
    auto m = state_[i].find("exp_avg"), v = state_[i].find("exp_avg_sq");
    onCpu[i] = fused && fusable(params_[i], grads_[i], m == state_[i].end() ? nullptr : &m->second,
                                v == state_[i].end() ? nullptr : &v->second);
    if (!inGroup[i] && !onCpu[i]) {
      denom[i] = tensor::empty_like(params_[i]);
      if (groupWeightDecay(groupOf_[i]) != 0 && !decoupled_) decayedGrad[i] = tensor::empty_like(params_[i]);
    }
    if (m == state_[i].end()) m0[i] = tensor::zeros_like(params_[i]);
    if (v == state_[i].end()) v0[i] = tensor::zeros_like(params_[i]);
  }
  auto prepare = [&](size_t i) {  // new moments in place and the counter advanced: the bias corrections
    if (m0[i].defined()) state_[i]["exp_avg"] = m0[i];
    if (v0[i].defined()) state_[i]["exp_avg_sq"] = v0[i];
    const auto t = static_cast<double>(nextStep(i));
    return std::pair{1 - std::pow(beta1, t), 1 - std::pow(beta2, t)};
  };
  // Note [Fused optimizer steps]: the fused groups first, then the rest
  for (const auto& group : groups) {
    std::vector<Tensor> p, g, m, v;
    std::vector<double> bias1, bias2;
    for (size_t i : group) {
      const auto [b1, b2] = prepare(i);
      p.push_back(params_[i]);
      g.push_back(grads_[i]);
      m.push_back(moment(i, "exp_avg"));
      v.push_back(moment(i, "exp_avg_sq"));
      bias1.push_back(b1);
      bias2.push_back(b2);
    }
    const size_t k = groupOf_[group[0]];
    tensor::cuda::adam_step(p, g, m, v, bias1, bias2, {groupLr(k), beta1, beta2, eps, groupWeightDecay(k), decoupled_});
  }
  for (size_t i = 0; i < n; ++i) {
    if (inGroup[i]) continue;
    Tensor& p = params_[i];
    const double rate = groupLr(groupOf_[i]), decay = groupWeightDecay(groupOf_[i]);
    const auto [bias1, bias2] = prepare(i);
    Tensor& m = moment(i, "exp_avg");
    Tensor& v = moment(i, "exp_avg_sq");
    if (onCpu[i]) {
      const kernels::AdamStep a{rate, beta1, beta2, eps, decay, bias1, bias2, decoupled_};
      tensor::dispatch_f32_f64(p.dtype(), "nn.Adam", [&](auto tag) {
        using T = decltype(tag);
        kernels::adam_step<T>(p.data<T>(), grads_[i].data<T>(), m.data<T>(), v.data<T>(), p.numel(), a);
      });
      continue;
    }
    if (decoupled_ && decay != 0) p.mul_(1 - rate * decay);  // AdamW, before the moments as torch.optim.AdamW
    const Tensor g = decayedGrad[i].defined() ? decayedGrad[i].copy_(grads_[i]).add_(p, decay) : grads_[i];
    m.mul_(beta1).add_(g, 1 - beta1);
    v.mul_(beta2).addcmul_(g, g, 1 - beta2);
    denom[i].copy_(v).sqrt_().div_(std::sqrt(bias2)).add_(eps);
    p.addcdiv_(m, denom[i], -rate / bias1);
  }
}

}  // namespace nn

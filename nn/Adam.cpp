// Adam.cpp
#include "nn/Adam.h"

#include <cmath>
#include <utility>
#include <vector>

#include "nn/kernels/Optimizer.h"
#include "tensor/Cuda.h"
#include "tensor/Format.h"
#include "tensor/MultiTensor.h"

namespace nn {

Adam::Adam(std::vector<ParamGroup> groups, const Options& o, bool decoupled, std::string_view name)
    : Optimizer(std::move(groups), std::string(name)),
      beta1(o.beta1),
      beta2(o.beta2),
      eps(o.eps),
      decoupled_(decoupled),
      capturable_(o.capturable) {
  lr = o.lr;
  weightDecay = o.weightDecay;
  const char* method = decoupled ? "AdamW" : "Adam";
  checkOptions(method);
  if (capturable_) {
    loadsInPlace_ = true;  // a captured step keeps the addresses of its state
    for (size_t i = 0; i < params_.size(); ++i) {
      if (!params_[i].is_cuda()) {
        throw Error(where(method) + "capturable expects CUDA parameters (Note [Capturable Adam]), got parameter " +
                    std::to_string(i) + ": " + params_[i].description() +
                    "; build the optimizer after the module's to(device), or leave capturable false");
      }
    }
  }
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

void Adam::stepIfFinite(const Tensor& foundInf) {
  if (!capturable_) return Optimizer::stepIfFinite(foundInf);
  deviceStep(&foundInf, "stepIfFinite");
}

std::vector<std::vector<size_t>> Adam::capturableGroups(const char* method) const {
  if (!fused) {
    throw Error(where(method) +
                "capturable expects fused = true (the device counts are the fused kernels'), got false");
  }
  std::vector<bool> inGroup;
  auto groups = fusedCudaGroups({"exp_avg", "exp_avg_sq"}, inGroup);
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!inGroup[i]) {
      throw Error(where(method) + "capturable expects every parameter dense on a CUDA device, its gradient and state " +
                  "laid out alike, sharing memory with no other parameter (Note [Capturable Adam]), got parameter " +
                  std::to_string(i) + ": " + params_[i].description() + " with gradient " + grads_[i].description());
    }
  }
  return groups;
}

void Adam::lrChanged() {
  if (capturable_) syncLr("setLr", false);
}

void Adam::syncLr(const char* method, bool make) {
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i];
    if (!p.is_cuda()) continue;
    const size_t k = groupOf_[i];
    const double want = groupLr(k);
    const auto key = std::pair{k, p.device().index};
    const auto it = deviceLr_.find(key);
    if (it != deviceLr_.end() && it->second.written == want) continue;
    if (it == deviceLr_.end() && !make) continue;  // made by the first step
    if (tensor::cuda::Graph::capturing(p.device().index)) {
      throw Error(where(method) + "cannot write the lr of parameter group " + std::to_string(k) + " (" +
                  tensor::num_str(want) +
                  ") to the device while a CUDA graph captures: set it with setLr / setGroupLr before the "
                  "capture or between replays (Note [Capturable Adam])");
    }
    if (it == deviceLr_.end()) {
      deviceLr_.emplace(key, DeviceLr{tensor::scalar_tensor(want, DType::Float64, p.device()), want});
    } else {
      it->second.value.fill_(want);
      it->second.written = want;
    }
  }
}

void Adam::deviceStep(const Tensor* flag, const char* method) {
  checkOptions(method);
  const auto groups = capturableGroups(method);
  const size_t n = params_.size();
  auto has = [&](size_t i, const char* name) { return state_[i].count(name) > 0; };
  auto countOnDevice = [&](size_t i) {
    const auto it = state_[i].find("step");
    return it != state_[i].end() && it->second.device() == params_[i].device() && it->second.dtype() == DType::Int64 &&
           it->second.is_contiguous();
  };
  bool complete = true, capturing = false;
  for (size_t i = 0; i < n; ++i) {
    complete = complete && has(i, "exp_avg") && has(i, "exp_avg_sq") && countOnDevice(i);
    capturing = capturing || tensor::cuda::Graph::capturing(params_[i].device().index);
  }
  if (capturing && !complete) {
    throw Error(where(method) +
                "cannot make its moments and step counts while a CUDA graph captures: run one eager step "
                "first (Note [Capturable Adam])");
  }
  Tensor foundInf;  // read by the kernels
  if (flag) {
    bool device =
        complete && flag->defined() && flag->is_cuda() && flag->dtype() == DType::Float32 && flag->numel() == 1;
    for (size_t i = 0; i < n && device; ++i) device = params_[i].device() == flag->device();
    if (!device) {
      if (foundOnHost(*flag, method)) return;
    } else {
      foundInf = *flag;
    }
  }
  // Note [Atomic step]: every new tensor first (a loaded count moves to its parameter's device)
  std::vector<Tensor> m0(n), v0(n), s0(n);
  for (size_t i = 0; i < n; ++i) {
    if (!has(i, "exp_avg")) m0[i] = tensor::zeros_like(params_[i]);
    if (!has(i, "exp_avg_sq")) v0[i] = tensor::zeros_like(params_[i]);
    if (!countOnDevice(i)) {
      const auto it = state_[i].find("step");
      const double t = it == state_[i].end() ? 0.0 : it->second.item();
      s0[i] = tensor::scalar_tensor(t, DType::Int64, params_[i].device());
    }
  }
  syncLr(method, true);
  for (size_t i = 0; i < n; ++i) {
    if (m0[i].defined()) state_[i]["exp_avg"] = m0[i];
    if (v0[i].defined()) state_[i]["exp_avg_sq"] = v0[i];
    if (s0[i].defined()) state_[i]["step"] = s0[i];
  }
  for (const auto& group : groups) {
    std::vector<Tensor> p, g, m, v, t;
    for (size_t i : group) {
      p.push_back(params_[i]);
      g.push_back(grads_[i]);
      m.push_back(state_[i].at("exp_avg"));
      v.push_back(state_[i].at("exp_avg_sq"));
      t.push_back(state_[i].at("step"));
    }
    const size_t k = groupOf_[group[0]];
    const Tensor& rate = deviceLr_.at({k, params_[group[0]].device().index}).value;
    tensor::cuda::adam_step_capturable(p, g, m, v, t, rate,
                                       {groupLr(k), beta1, beta2, eps, groupWeightDecay(k), decoupled_}, foundInf);
  }
}

void Adam::step() {
  if (capturable_) return deviceStep(nullptr, "step");
  checkOptions("step");
  // The bias corrections come from the step count on the host: a captured step would replay
  // the count it saw at capture (Note [CUDA graphs] in tensor/Cuda.h).
  for (const Tensor& p : params_) {
    if (p.is_cuda() && tensor::cuda::Graph::capturing(p.device().index)) {
      throw tensor::Error(type_name() +
                          "::step: cannot be captured in a CUDA graph (its bias corrections use the step "
                          "count kept on the host, which a replay would not advance); build it with "
                          "capturable = true (Note [Capturable Adam] in nn/Adam.h), capture SGD, or run it "
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

// Optimizer.cpp
#include "nn/Optimizer.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <tuple>
#include <utility>

#include "tensor/Cuda.h"
#include "tensor/Format.h"
#include "tensor/MultiTensor.h"

namespace nn {

namespace {
std::vector<ParamGroup> one_group(std::vector<Tensor> params, std::vector<Tensor> grads) {
  std::vector<ParamGroup> groups(1);
  groups[0].params = std::move(params);
  groups[0].grads = std::move(grads);
  return groups;
}

// torch.optim's two checks of the parameter lists (Note [Parameter groups]): some parameter, and
// none in two groups. Same views are found by storage and offset first (no quadratic sweep).
void check_membership(const std::vector<Tensor>& params, const std::vector<size_t>& groupOf, const std::string& w) {
  if (params.empty()) throw Error(w + "optimizer got an empty parameter list");
  std::map<std::pair<const void*, int64_t>, std::vector<size_t>> byStart;
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    if (!p.defined() || p.numel() == 0) continue;  // nothing to step twice
    auto& seen = byStart[{p.storage().get(), p.storage_offset()}];
    for (size_t j : seen) {
      if (groupOf[j] != groupOf[i] && params[j].is_same_view(p)) {
        throw Error(w + "some parameters appear in more than one parameter group: parameter " + std::to_string(i) +
                    " (group " + std::to_string(groupOf[i]) + ") is parameter " + std::to_string(j) + " (group " +
                    std::to_string(groupOf[j]) + ")");
      }
    }
    seen.push_back(i);
  }
}
}  // namespace

std::vector<ParamGroup> decayGroups(Module& m, const std::function<bool(const std::string&, const Tensor&)>& noDecay) {
  std::vector<ParamGroup> groups(2);
  groups[1].weightDecay = 0.0;
  const auto params = m.namedParameters();
  const auto grads = m.namedGradParameters();
  for (size_t i = 0; i < params.size(); ++i) {
    const auto& [name, p] = params[i];
    const bool exclude = noDecay ? noDecay(name, p) : p.dim() <= 1;
    groups[exclude ? 1 : 0].params.push_back(p);
    groups[exclude ? 1 : 0].grads.push_back(grads[i].second);
  }
  return groups;
}

Optimizer::Optimizer(std::vector<Tensor> params, std::vector<Tensor> grads, const std::string& name)
    : Optimizer(one_group(std::move(params), std::move(grads)), name) {}

Optimizer::Optimizer(std::vector<ParamGroup> groups, const std::string& name) : name_(name) {
  const std::string w = name + ": ";
  for (size_t k = 0; k < groups.size(); ++k) {
    ParamGroup& group = groups[k];
    if (group.params.size() != group.grads.size()) {
      throw Error(w + "expected one gradient per parameter, got " + std::to_string(group.params.size()) +
                  " parameters and " + std::to_string(group.grads.size()) + " gradients" +
                  (groups.size() > 1 ? " in parameter group " + std::to_string(k) : ""));
    }
    for (size_t i = 0; i < group.params.size(); ++i) {
      params_.push_back(std::move(group.params[i]));
      grads_.push_back(std::move(group.grads[i]));
      groupOf_.push_back(k);
    }
    groupLr_.push_back(group.lr);
    groupWeightDecay_.push_back(group.weightDecay);
  }
  check_membership(params_, groupOf_, w);
  state_.resize(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i];
    const Tensor& g = grads_[i];
    const std::string which = "parameter " + std::to_string(i);
    if (!p.defined() || !g.defined()) throw Error(w + which + " or its gradient is undefined");
    if (!tensor::is_floating(p.dtype())) throw Error(w + "expected floating " + which + ", got " + p.description());
    if (p.sizes() != g.sizes() || p.dtype() != g.dtype() || p.device() != g.device()) {
      throw Error(w + "expected the gradient of " + which + " to match it (" + p.description() + "), got " +
                  g.description());
    }
  }
}

void Optimizer::checkGroups(const char* method) const {
  auto check = [&](const char* what, double v, const std::string& whose) {
    if (!(v >= 0)) throw Error(where(method) + "expected " + what + " >= 0" + whose + ", got " + std::to_string(v));
  };
  check("lr", lr, "");
  check("weightDecay", weightDecay, "");
  for (size_t k = 0; k < numGroups(); ++k) {
    const std::string whose = " in parameter group " + std::to_string(k);
    if (groupLr_[k]) check("lr", *groupLr_[k], whose);
    if (groupWeightDecay_[k]) check("weightDecay", *groupWeightDecay_[k], whose);
  }
}

void Optimizer::setGroupLr(size_t group, double value) {
  if (group >= numGroups()) {
    throw Error(where("setGroupLr") + "expected a group below " + std::to_string(numGroups()) + ", got " +
                std::to_string(group));
  }
  groupLr_[group] = value;
  lrChanged();
}

void Optimizer::setGroupWeightDecay(size_t group, double value) {
  if (group >= numGroups()) {
    throw Error(where("setGroupWeightDecay") + "expected a group below " + std::to_string(numGroups()) + ", got " +
                std::to_string(group));
  }
  groupWeightDecay_[group] = value;
}

void Optimizer::setLr(double value) {
  lr = value;
  for (auto& g : groupLr_) g = value;
  lrChanged();
}

void Optimizer::zeroGrad() {
  // Dense CUDA gradients by device and dtype in a few multi-tensor launches (a ResNet-50 has
  // 161 gradients: 161 fills, a node each in a captured step), the others one by one. Zeroing
  // twice is harmless, so gradients sharing memory need no care here.
  std::map<std::pair<int, DType>, std::vector<Tensor>> groups;
  for (auto& g : grads_) {
    if (g.numel() == 0) continue;
    if (fused && g.is_cuda() && tensor::is_floating(g.dtype()) && g.is_non_overlapping_and_dense()) {
      groups[{g.device().index, g.dtype()}].push_back(g);
    } else {
      g.zero_();
    }
  }
  for (auto& [key, list] : groups) tensor::cuda::zero_tensors(list);
}

bool Optimizer::foundOnHost(const Tensor& foundInf, const char* method) const {
  if (!foundInf.defined() || foundInf.numel() != 1 || foundInf.dtype() != DType::Float32) {
    throw Error(where(method) + "expected foundInf as a one-element float32 tensor, got " +
                (foundInf.defined() ? foundInf.description() : std::string("an undefined tensor")));
  }
  if (foundInf.is_cuda() && tensor::cuda::Graph::capturing(foundInf.device().index)) {
    throw Error(where(method) + "cannot be captured in a CUDA graph here: it reads foundInf on the host (" +
                foundInf.description() +
                "); capture SGD, or Adam / AdamW built with capturable = true, over dense CUDA parameters of "
                "foundInf's device, after an eager step has made their state");
  }
  return foundInf.item() != 0;
}

void Optimizer::stepIfFinite(const Tensor& foundInf) {
  if (!foundOnHost(foundInf, "stepIfFinite")) step();
}

Tensor Optimizer::decayed(const Tensor& param, const Tensor& grad, double weightDecay) {
  return weightDecay != 0 ? grad.add(param, weightDecay) : grad;
}

int64_t Optimizer::nextStep(size_t i) {
  auto [it, fresh] = state_[i].try_emplace("step");
  if (fresh) it->second = tensor::scalar_tensor(0, tensor::DType::Int64);
  const auto n = static_cast<int64_t>(it->second.item()) + 1;
  it->second.fill_(static_cast<double>(n));
  return n;
}

namespace {
// Which CUDA parameters share memory with another parameter (a tensor listed twice, overlapping
// views): one sweep over their byte ranges sorted by start.
std::vector<bool> sharing_memory(const std::vector<Tensor>& params) {
  struct Range {
    uintptr_t begin, end;
    size_t index;
  };
  std::vector<Range> ranges;
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    if (!p.is_cuda() || p.numel() == 0) continue;
    int64_t lo = 0, hi = 0;  // element offsets of the first and last element from raw_data()
    for (size_t d = 0; d < p.sizes().size(); ++d) {
      const int64_t reach = (p.sizes()[d] - 1) * p.strides()[d];
      if (reach < 0) {
        lo += reach;
      } else {
        hi += reach;
      }
    }
    const auto base = reinterpret_cast<uintptr_t>(p.raw_data());
    const auto item = static_cast<int64_t>(tensor::itemsize(p.dtype()));
    ranges.push_back({base + static_cast<uintptr_t>(lo * item), base + static_cast<uintptr_t>((hi + 1) * item), i});
  }
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
  std::vector<bool> shared(params.size(), false);
  uintptr_t reach = 0;  // the furthest end so far, and whose
  size_t owner = 0;
  for (size_t k = 0; k < ranges.size(); ++k) {
    const Range& r = ranges[k];
    if (k > 0 && r.begin < reach) shared[r.index] = shared[owner] = true;
    if (k == 0 || r.end > reach) {
      reach = r.end;
      owner = r.index;
    }
  }
  return shared;
}
}  // namespace

std::vector<std::vector<size_t>> Optimizer::fusedCudaGroups(std::initializer_list<const char*> stateNames,
                                                            std::vector<bool>& inGroup) const {
  inGroup.assign(params_.size(), false);
  std::vector<std::vector<size_t>> groups;
  if (!fused) return groups;
  const std::vector<bool> shared = sharing_memory(params_);
  std::map<std::tuple<size_t, int, DType>, size_t> groupOf;  // (param group, device, dtype) -> position
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i];
    // dense and laid out as p (row-major, or a channels-last filter: Module::to(MemoryFormat))
    auto fits = [&](const Tensor& t) {
      return t.is_cuda() && t.dtype() == p.dtype() && t.device() == p.device() && tensor::same_dense_layout(t, p);
    };
    bool ok = !shared[i] && fits(p) && fits(grads_[i]);
    for (const char* name : stateNames) {
      const auto it = state_[i].find(name);
      if (it != state_[i].end()) ok = ok && fits(it->second);
    }
    if (!ok) continue;
    const auto [it, fresh] = groupOf.try_emplace({groupOf_[i], p.device().index, p.dtype()}, groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(i);
    inGroup[i] = true;
  }
  return groups;
}

std::map<std::string, Tensor> Optimizer::stateDict() const {
  std::map<std::string, Tensor> out;
  for (size_t i = 0; i < state_.size(); ++i) {
    for (const auto& [name, t] : state_[i]) {
      out[std::to_string(i) + "." + name] = name == "step" && t.is_cuda() ? t.cpu() : t;  // a device count, read
    }
  }
  return out;
}

namespace {
// "<index>.<name>": the parameter index (below n) and the name, or nullopt
std::optional<std::pair<size_t, std::string>> state_key(const std::string& key, size_t n) {
  const size_t dot = key.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == key.size() || dot > 18 ||
      key.find_first_not_of("0123456789") != dot) {
    return std::nullopt;
  }
  const size_t i = std::stoul(key.substr(0, dot));  // at most 18 digits: no overflow
  if (i >= n) return std::nullopt;
  return std::pair{i, key.substr(dot + 1)};
}
}  // namespace

void Optimizer::checkStateDict(const std::map<std::string, Tensor>& state) const {
  checkState(state, "checkStateDict");
}

void Optimizer::checkState(const std::map<std::string, Tensor>& state, const char* method) const {
  for (const auto& [key, t] : state) {
    const auto parsed = state_key(key, params_.size());
    if (!parsed) {
      throw Error(where(method) + "expected keys '<parameter index>.<name>' with an index below " +
                  std::to_string(params_.size()) + ", got '" + key + "'");
    }
    const auto& [i, name] = *parsed;
    if (!t.defined()) throw Error(where(method) + "'" + key + "' is undefined");
    if (name == "step") {
      if (t.numel() != 1) throw Error(where(method) + "expected a one-element '" + key + "', got " + t.description());
      const double v = t.item();
      if (!(v >= 0 && v < 9e18) || v != std::floor(v)) {
        throw Error(where(method) + "expected an integer '" + key + "' >= 0, got " + tensor::num_str(v));
      }
      continue;
    }
    const Tensor& p = params_[i];
    if (t.sizes() != p.sizes()) {
      throw Error(where(method) + "'" + key + "' has shape " + tensor::shape_str(t.sizes()) + ", expected " +
                  tensor::shape_str(p.sizes()) + " (parameter " + std::to_string(i) + ")");
    }
    if (!tensor::is_floating(t.dtype())) {
      throw Error(where(method) + "expected a floating '" + key + "', got " + t.description());
    }
  }
}

void Optimizer::loadStateDict(const std::map<std::string, Tensor>& state) {
  checkState(state, "loadStateDict");
  std::vector<std::map<std::string, Tensor>> loaded(params_.size());
  for (const auto& [key, t] : state) {
    const auto [i, name] = *state_key(key, params_.size());
    if (name == "step") {
      loaded[i][name] = tensor::scalar_tensor(t.item(), tensor::DType::Int64);
    } else {
      Tensor copy = tensor::empty_like(params_[i]);  // the parameter's layout, so the fused kernels still take it
      copy.copy_(t);
      loaded[i][name] = copy;
    }
  }
  if (loadsInPlace_) {
    for (size_t i = 0; i < loaded.size(); ++i) {
      for (auto& [name, t] : loaded[i]) {
        const auto it = state_[i].find(name);
        if (it == state_[i].end() || it->second.sizes() != t.sizes() || it->second.dtype() != t.dtype()) continue;
        it->second.copy_(t);  // across devices for a step count kept on one
        t = it->second;
      }
    }
  }
  state_ = std::move(loaded);
}

}  // namespace nn

// MixedPrecision.cpp
#include "nn/MixedPrecision.h"

namespace nn {

MasterWeights::MasterWeights(Module& net, DType master) {
  if (master != DType::Float32 && master != DType::Float64) {
    throw Error("nn.MasterWeights: expected float32 or float64 master weights, got " +
                std::string(tensor::name(master)));
  }
  const auto params = net.namedParameters();
  const auto grads = net.namedGradParameters();
  for (size_t i = 0; i < params.size(); ++i) {
    const auto& [name, p] = params[i];
    const Tensor& g = grads[i].second;
    names_.push_back(name);
    modelParams_.push_back(p);
    modelGrads_.push_back(g);
    const bool copy = p.dtype() != master;
    copied_.push_back(copy);
    // the parameter's layout (channels-last filters too), so the copies pair elements as flat blocks
    const tensor::MemoryFormat format = tensor::suggest_memory_format(p);
    params_.push_back(copy ? p.to(master).contiguous(format) : p);
    grads_.push_back(copy ? tensor::empty(p.sizes(), master, p.device(), format).fill_(0) : g);
  }
}

std::vector<ParamGroup> MasterWeights::groups(
    const std::function<bool(const std::string&, const Tensor&)>& noDecay) const {
  std::vector<ParamGroup> out(2);
  out[1].weightDecay = 0.0;
  for (size_t i = 0; i < params_.size(); ++i) {
    const bool exclude = noDecay ? noDecay(names_[i], params_[i]) : params_[i].dim() <= 1;
    out[exclude ? 1 : 0].params.push_back(params_[i]);
    out[exclude ? 1 : 0].grads.push_back(grads_[i]);
  }
  return out;
}

// See Note [Master weights] in MixedPrecision.h
void MasterWeights::gradsToMaster() {
  for (size_t i = 0; i < grads_.size(); ++i) {
    if (copied_[i]) grads_[i].copy_(modelGrads_[i]);
  }
}

void MasterWeights::paramsToModel() {
  for (size_t i = 0; i < params_.size(); ++i) {
    if (copied_[i]) modelParams_[i].copy_(params_[i]);
  }
}

}  // namespace nn

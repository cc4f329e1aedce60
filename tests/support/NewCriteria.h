// NewCriteria.h: the elementwise criteria (BCE, BCEWithLogits, SmoothL1, Abs, DistKLDiv,
// HingeEmbedding, MultiLabelSoftMargin) and CTCCriterion built from the cases of
// tests/data/nn/criteria2_reference.safetensors (scripts/make_criterion_reference2.py: PyTorch,
// float64), for tests/nn/test_NewCriteria.cpp, tests/nn/test_CTCCriterion.cpp and their GPU half,
// tests/cudnn/test_NewCriteria.cpp.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "nn/AbsCriterion.h"
#include "nn/BCECriterion.h"
#include "nn/BCEWithLogitsCriterion.h"
#include "nn/CTCCriterion.h"
#include "nn/DistKLDivCriterion.h"
#include "nn/HingeEmbeddingCriterion.h"
#include "nn/MultiLabelSoftMarginCriterion.h"
#include "nn/SmoothL1Criterion.h"
#include "tensor/Safetensors.h"

namespace testing {

struct ReferenceCriterionCase {
  std::string name, type;  // "BCECriterion.3", "BCECriterion"
  tensor::Tensor input, target, gradInput, weights, posWeight, inputLengths, targetLengths, losses;
  double loss = 0;
  std::vector<double> config;
};

inline std::vector<ReferenceCriterionCase> reference_criterion_cases() {
  const auto file = tensor::load_safetensors(std::string(CUDNN_NN_TEST_DATA) + "/nn/criteria2_reference.safetensors");
  std::vector<ReferenceCriterionCase> cases;
  auto get = [&](const std::string& key) {
    const auto it = file.tensors.find(key);
    return it == file.tensors.end() ? tensor::Tensor() : it->second;
  };
  for (const auto& [key, t] : file.tensors) {
    const std::string suffix = ".config";
    if (key.size() < suffix.size() || key.compare(key.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
    ReferenceCriterionCase c;
    c.name = key.substr(0, key.size() - suffix.size());
    c.type = c.name.substr(0, c.name.find('.'));
    c.config = t.to_vector<double>();
    c.input = get(c.name + ".input");
    c.target = get(c.name + ".target");
    c.gradInput = get(c.name + ".gradInput");
    c.loss = get(c.name + ".loss").item();
    c.weights = get(c.name + ".weights");
    c.posWeight = get(c.name + ".posWeight");
    c.inputLengths = get(c.name + ".inputLengths");
    c.targetLengths = get(c.name + ".targetLengths");
    c.losses = get(c.name + ".losses");
    cases.push_back(c);
  }
  return cases;
}

// The nn criterion of an elementwise case: config [sizeAverage, beta, margin, logTarget, batchMean].
inline nn::CriterionPtr make_elementwise_criterion(const std::string& type, const std::vector<double>& cfg,
                                                   const tensor::Tensor& weights = {},
                                                   const tensor::Tensor& posWeight = {}) {
  const bool avg = cfg.at(0) != 0;
  if (type == "BCECriterion") return std::make_shared<nn::BCECriterion>(weights, avg);
  if (type == "BCEWithLogitsCriterion") return std::make_shared<nn::BCEWithLogitsCriterion>(weights, avg, posWeight);
  if (type == "SmoothL1Criterion") return std::make_shared<nn::SmoothL1Criterion>(avg, cfg.at(1));
  if (type == "AbsCriterion") return std::make_shared<nn::AbsCriterion>(avg);
  if (type == "DistKLDivCriterion")
    return std::make_shared<nn::DistKLDivCriterion>(avg, cfg.at(3) != 0, cfg.at(4) != 0);
  if (type == "HingeEmbeddingCriterion") return std::make_shared<nn::HingeEmbeddingCriterion>(cfg.at(2), avg);
  if (type == "MultiLabelSoftMarginCriterion") return std::make_shared<nn::MultiLabelSoftMarginCriterion>(weights, avg);
  return nullptr;
}

// The CTC criterion of a case: config [blank, reduction (0 none, 1 sum, 2 mean), zeroInfinity].
inline std::shared_ptr<nn::CTCCriterion> make_ctc_criterion(const std::vector<double>& cfg) {
  const auto r = static_cast<nn::CTCCriterion::Reduction>(static_cast<int>(cfg.at(1)));
  return std::make_shared<nn::CTCCriterion>(static_cast<int64_t>(cfg.at(0)), r, cfg.at(2) != 0);
}

// log_softmax over the last dimension.
inline tensor::Tensor log_softmax_last(const tensor::Tensor& z) {
  const tensor::Tensor m = z.max(z.dim() - 1, true).first;
  const tensor::Tensor s = z.sub(m);
  return s.sub(s.exp().sum(z.dim() - 1, true).log());
}

// A LogSoftMax over C, then a CTC criterion: its finite differences in the logits check the CTC
// gradient (Note [CTC's gradient] in nn/kernels/CTC.cpp: the CTC gradient is the logits').
class LogSoftMaxCTC : public nn::Criterion {
 public:
  explicit LogSoftMaxCTC(std::shared_ptr<nn::CTCCriterion> ctc) : ctc_(std::move(ctc)) {}
  double updateOutput(const tensor::Tensor& z, const tensor::Tensor& target) override {
    return ctc_->forward(log_softmax_last(z), target);
  }
  const tensor::Tensor& updateGradInput(const tensor::Tensor& z, const tensor::Tensor& target) override {
    return ctc_->backward(log_softmax_last(z), target);
  }
  std::string type_name() const override { return "LogSoftMaxCTC"; }

 private:
  std::shared_ptr<nn::CTCCriterion> ctc_;
};

}  // namespace testing

// AdamW.cpp
#include "nn/AdamW.h"

#include <utility>

namespace nn {

namespace {
Adam::Options adam_options(const AdamW::Options& o) {
  return {o.lr, o.beta1, o.beta2, o.eps, o.weightDecay, o.capturable};
}
}  // namespace

AdamW::AdamW(std::vector<ParamGroup> groups, const Options& o)
    : Adam(std::move(groups), adam_options(o), /*decoupled=*/true, kTypeName) {}

AdamW::AdamW(std::vector<Tensor> params, std::vector<Tensor> grads, const Options& o)
    : AdamW(std::vector<ParamGroup>{{std::move(params), std::move(grads), std::nullopt, std::nullopt}}, o) {}

AdamW::AdamW(Module& m, const Options& o) : AdamW(m.parameters(), m.gradParameters(), o) {}

AdamW::AdamW(std::vector<Tensor> params, std::vector<Tensor> grads)
    : AdamW(std::move(params), std::move(grads), Options{}) {}
AdamW::AdamW(Module& m) : AdamW(m, Options{}) {}
AdamW::AdamW(std::vector<ParamGroup> groups) : AdamW(std::move(groups), Options{}) {}

}  // namespace nn

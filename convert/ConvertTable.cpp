// ConvertTable.cpp: the pairs, both directions, in one list (cudnn.torch's layer_list).
// A new twin is one line here.
#include "convert/ConvertTable.h"

#include "cudnn/modules.h"

namespace nn::detail {

namespace {

struct Tables {
  ConvertTable to_cudnn, to_nn;
  template <class Nn, class Cu>
  void module(const std::string& nn_name) {
    const std::string cu_name = "cudnn" + nn_name.substr(2);
    to_cudnn.modules[nn_name] = [](Module& m) -> ModulePtr { return std::make_shared<Cu>(std::move(dynamic_cast<Nn&>(m))); };
    to_nn.modules[cu_name] = [](Module& m) -> ModulePtr { return std::make_shared<Nn>(std::move(dynamic_cast<Nn&>(m))); };
  }
  template <class Nn, class Cu>
  void criterion(const std::string& nn_name) {
    const std::string cu_name = "cudnn" + nn_name.substr(2);
    to_cudnn.criteria[nn_name] = [](Criterion& c) -> CriterionPtr { return std::make_shared<Cu>(std::move(dynamic_cast<Nn&>(c))); };
    to_nn.criteria[cu_name] = [](Criterion& c) -> CriterionPtr { return std::make_shared<Nn>(std::move(dynamic_cast<Nn&>(c))); };
  }
};

const Tables& tables() {
  static const Tables t = [] {
    Tables t;
    // ---- modules (sorted) ----
    t.module<nn::SpatialAveragePooling, cudnn::SpatialAveragePooling>("nn.SpatialAveragePooling");
    t.module<nn::SpatialCrossMapLRN, cudnn::SpatialCrossMapLRN>("nn.SpatialCrossMapLRN");
    t.module<nn::SpatialMaxPooling, cudnn::SpatialMaxPooling>("nn.SpatialMaxPooling");
    t.module<nn::VolumetricAveragePooling, cudnn::VolumetricAveragePooling>("nn.VolumetricAveragePooling");
    t.module<nn::VolumetricMaxPooling, cudnn::VolumetricMaxPooling>("nn.VolumetricMaxPooling");
    // ---- criteria (sorted) ----
    return t;
  }();
  return t;
}

}  // namespace

bool built_with_cudnn() { return true; }

const ConvertTable& table(Backend to) { return to == Backend::cudnn ? tables().to_cudnn : tables().to_nn; }

}  // namespace nn::detail

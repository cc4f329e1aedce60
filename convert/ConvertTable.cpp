// ConvertTable.cpp: the pairs, both directions, from the one list of twins (cudnn.torch's
// layer_list): every NN_TWIN(X) line of nn/modules.def, under nn::X::kTypeName and
// cudnn::X::kTypeName.
#include "convert/ConvertTable.h"

#include <stdexcept>
#include <type_traits>

#include "cudnn/modules.h"

namespace nn::detail {

namespace {

template <class Map, class Factory>
void insert(Map& map, std::string_view name, Factory factory) {
  if (!map.emplace(std::string(name), std::move(factory)).second) {
    throw std::logic_error("convert: two twins named " + std::string(name) + " in nn/modules.def");
  }
}

struct Tables {
  ConvertTable to_cudnn, to_nn;

  // A module or a criterion moved into its counterpart.
  template <class Nn, class Cu>
  void twin() {
    if constexpr (std::is_base_of_v<Criterion, Nn>) {
      insert(to_cudnn.criteria, Nn::kTypeName,
             [](Criterion& c) -> CriterionPtr { return std::make_shared<Cu>(std::move(dynamic_cast<Nn&>(c))); });
      insert(to_nn.criteria, Cu::kTypeName,
             [](Criterion& c) -> CriterionPtr { return std::make_shared<Nn>(std::move(dynamic_cast<Nn&>(c))); });
    } else {
      insert(to_cudnn.modules, Nn::kTypeName,
             [](Module& m) -> ModulePtr { return std::make_shared<Cu>(std::move(dynamic_cast<Nn&>(m))); });
      insert(to_nn.modules, Cu::kTypeName,
             [](Module& m) -> ModulePtr { return std::make_shared<Nn>(std::move(dynamic_cast<Nn&>(m))); });
    }
  }
};

const Tables& tables() {
  static const Tables t = [] {
    Tables t;
#define NN_TWIN(X) t.twin<nn::X, cudnn::X>();
#define NN_MODULE(X)
#include "nn/modules.def"
    return t;
  }();
  return t;
}

}  // namespace

bool built_with_cudnn() { return true; }

const ConvertTable& table(Backend to) { return to == Backend::cudnn ? tables().to_cudnn : tables().to_nn; }

}  // namespace nn::detail

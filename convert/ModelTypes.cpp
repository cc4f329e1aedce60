// ModelTypes.cpp: every nn module a model file can hold, type name -> X::fromConfig, from the
// one list of modules (nn/modules.def; criteria are not model-file types). A module needs
// nothing here: its line in that list and its config()/fromConfig(); its cudnn twin loads
// through convert's table (see ModelFile.h).
#include "convert/ModelTypes.h"

#include <stdexcept>
#include <type_traits>

#include "nn/Container.h"
#include "nn/modules.h"

namespace nn::detail {

namespace {

// Containers are rebuilt from their config and children, leaves from their config alone.
template <class M>
void add(std::map<std::string, ModelFactory>& types) {
  if constexpr (!std::is_base_of_v<Criterion, M>) {
    ModelFactory factory = [](const tensor::Json& config, std::vector<ModulePtr> children) -> ModulePtr {
      if constexpr (std::is_base_of_v<Container, M>) {
        return M::fromConfig(config, std::move(children));
      } else {
        if (!children.empty()) {
          throw Error("expected no children (not a container), got " + std::to_string(children.size()));
        }
        return M::fromConfig(config);
      }
    };
    if (!types.emplace(std::string(M::kTypeName), std::move(factory)).second) {
      throw std::logic_error("model files: two modules named " + std::string(M::kTypeName) + " in nn/modules.def");
    }
  }
}

}  // namespace

const std::map<std::string, ModelFactory>& builtin_model_types() {
  static const std::map<std::string, ModelFactory> types = [] {
    std::map<std::string, ModelFactory> t;
#define NN_TWIN(X) add<X>(t);
#define NN_MODULE(X) add<X>(t);
#include "nn/modules.def"
    return t;
  }();
  return types;
}

}  // namespace nn::detail

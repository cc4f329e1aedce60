// Convert.h: nn::convert swaps modules for their twins in place, in both directions, as
// cudnn.convert did: convert(net, cudnn::backend) and convert(net, nn::backend).
// It walks containers recursively; each module whose type is in the one table of pairs
// (ConvertTable.cpp) and for which exclude(module) is not true is replaced by its twin,
// built by moving the module into it, then moved to the target device (state already
// there is not copied). Containers that compute nothing (nn.Sequential) stay as they are.
// Modules the table does not know (a user's own) are left in place and reported.
// The returned pointer differs from `net` only when the root itself was swapped.
// In a build without cuDNN, converting to cudnn throws "built without cuDNN".
// The enabled flag (cudnn/Config.h): false leaves a network in nn; auto leaves it in nn,
// with a warning, where no GPU is visible; true (and no_check) require one.
#pragma once

#include <concepts>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nn/Criterion.h"
#include "nn/Module.h"

namespace cudnn {
inline constexpr nn::Backend backend = nn::Backend::cudnn;
}

namespace nn {

using Predicate = std::function<bool(const Module&)>;

struct ConvertReport {
  std::vector<std::string> converted;  // "0.3: nn.ReLU -> cudnn.ReLU"
  std::vector<std::string> excluded;   // paths the predicate kept
  std::vector<std::string> unknown;    // paths of modules with no twin ("2: MyLayer")
  std::string note;                    // why nothing was converted, if so
  std::string str() const;
};

ModulePtr convert(ModulePtr net, Backend to, Predicate exclude = {}, ConvertReport* report = nullptr);
CriterionPtr convert(CriterionPtr criterion, Backend to);

// The type names the table knows, for `to`'s direction ("nn.ReLU", ... for cudnn), the
// registered pairs included.
std::vector<std::string> convertible_types(Backend to);

// A user's twin pair, registered at run time: convert() then swaps it both ways as it swaps the
// built-in pairs (which stay compile-time, from nn/modules.def), moving state, reporting it as
// converted. `toTwin` moves a module of type `nnType` into its twin (type `twinType`), `toNn`
// moves the twin back. Thread-safe. Refused, with an error naming the type: an empty name, a
// pair with one name twice, a name the built-in table holds, a name already registered.
void register_twin(const std::string& nnType, const std::string& twinType, std::function<ModulePtr(Module&)> toTwin,
                   std::function<ModulePtr(Module&)> toNn);

// The same for classes built as the library's twins are (Cu derives from Nn, each has
// kTypeName, and Cu is built by moving an Nn into it): register_twin<MyLayer, MyCudnnLayer>().
template <class Nn, class Cu>
void register_twin() {
  static_assert(std::derived_from<Nn, Module>, "nn::register_twin<Nn, Cu>: Nn must derive from nn::Module");
  static_assert(std::derived_from<Cu, Nn>, "nn::register_twin<Nn, Cu>: the twin Cu must derive from Nn");
  // The factories are looked up by type name, so a module that carries the name but is not of
  // the class (a user's subclass that kept the name) is refused with both names, not bad_cast.
  auto as_nn = [](Module& m) -> Nn& {
    auto* p = dynamic_cast<Nn*>(&m);
    if (!p) {
      throw Error("nn::convert: the module named " + m.type_name() + " is not of the class registered for it by " +
                  "nn::register_twin<" + std::string(Nn::kTypeName) + ", " + std::string(Cu::kTypeName) + ">");
    }
    return *p;
  };
  register_twin(
      std::string(Nn::kTypeName), std::string(Cu::kTypeName),
      [as_nn](Module& m) -> ModulePtr { return std::make_shared<Cu>(std::move(as_nn(m))); },
      [as_nn](Module& m) -> ModulePtr { return std::make_shared<Nn>(std::move(as_nn(m))); });
}

}  // namespace nn

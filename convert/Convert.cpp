// Convert.cpp: the walk.
#include "convert/Convert.h"

#include <cstdio>
#include <map>
#include <mutex>

#include "convert/ConvertTable.h"
#include "tensor/Cuda.h"

#ifdef CUDNN_NN_HAVE_CUDA
#include "cudnn/Config.h"
#endif

namespace nn {

namespace {

const char* backend_name(Backend b) { return b == Backend::cudnn ? "cudnn" : "nn"; }

using Factory = std::function<ModulePtr(Module&)>;

// Note [Registered twins]: the user's pairs live beside the built-in table, never in it (that
// one is built once, from nn/modules.def, and read without a lock). A lookup copies the factory
// out under the lock, so a registration on another thread never races a conversion.
struct Registry {
  std::mutex mutex;
  std::map<std::string, Factory> to_cudnn, to_nn;  // keyed by the type converted from
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: conversions may run during exit
  return *r;
}

// The factory for a module of `type` towards `to`: the built-in table's, else a registered one.
Factory find_factory(const detail::ConvertTable& table, Backend to, const std::string& type) {
  // The built-in table without a lock, a registered pair under it: See Note [Registered twins]
  if (auto it = table.modules.find(type); it != table.modules.end()) return it->second;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  const auto& map = to == Backend::cudnn ? r.to_cudnn : r.to_nn;
  auto it = map.find(type);
  return it == map.end() ? Factory() : it->second;
}

// Whether to convert to cudnn at all, per the enabled flag; throws where it must.
bool cudnn_allowed([[maybe_unused]] std::string& note) {  // unused without cuDNN
  if (!detail::built_with_cudnn()) {
    throw Error("nn::convert: cudnn-nn was built without cuDNN; rebuild with -Dcuda=enabled to convert to cudnn");
  }
#ifdef CUDNN_NN_HAVE_CUDA
  const cudnn::Enabled enabled = cudnn::config().enabled;
  if (enabled == cudnn::Enabled::False) {
    note = "enabled=false: the network stays in nn";
    return false;
  }
  if (!tensor::cuda::is_available()) {
    if (enabled == cudnn::Enabled::Auto) {
      note = "no CUDA device visible (enabled=auto): the network stays in nn";
      std::fprintf(stderr, "cudnn-nn: warning: %s\n", note.c_str());
      return false;
    }
    throw Error("nn::convert: no CUDA device is visible, and enabled=true requires one");
  }
#endif
  return true;
}

struct Walker {
  const detail::ConvertTable& table;
  Backend to;
  const Predicate& exclude;
  ConvertReport& report;
  tensor::Device device;

  ModulePtr visit(const ModulePtr& m, const std::string& path) {
    if (!m) {  // put into a container's modules directly, past add()'s check
      throw Error("nn::convert: the module at " + (path.empty() ? std::string("root") : path) +
                  " is nullptr (a container's modules holds a null child)");
    }
    if (m->backendKind() == to) {
      recurse(*m, path);
      return m;
    }
    if (exclude && exclude(*m)) {
      report.excluded.push_back(label(path, *m));
      return m;
    }
    const Factory factory = find_factory(table, to, m->type_name());
    if (!factory) {
      if (!m->children()) report.unknown.push_back(label(path, *m));
      recurse(*m, path);
      return m;
    }
    const std::string from = m->type_name();
    ModulePtr twin = factory(*m);
    if (!twin) {  // a registered factory that returned null: refuse before anything moves on
      throw Error("nn::convert: the " + std::string(backend_name(to)) + " factory for " + from + " (at " +
                  (path.empty() ? std::string("root") : path) + ", " +
                  (table.modules.count(from) ? "built-in" : "registered with nn::register_twin") +
                  ") returned nullptr");
    }
    twin->to(device);
    recurse(*twin, path);
    report.converted.push_back((path.empty() ? "root" : path) + ": " + from + " -> " + twin->type_name());
    return twin;
  }

  void recurse(Module& m, const std::string& path) {
    if (auto* kids = m.children()) {
      for (size_t i = 0; i < kids->size(); ++i) {
        (*kids)[i] = visit((*kids)[i], path.empty() ? std::to_string(i) : path + "." + std::to_string(i));
      }
    }
  }

  static std::string label(const std::string& path, const Module& m) {
    return (path.empty() ? "root" : path) + ": " + m.type_name();
  }
};

}  // namespace

std::string ConvertReport::str() const {
  std::string s = std::to_string(converted.size()) + " converted, " + std::to_string(excluded.size()) + " excluded, " +
                  std::to_string(unknown.size()) + " without a twin";
  for (const auto& u : unknown) s += "\n  no twin: " + u;
  if (!note.empty()) s += "\n  " + note;
  return s;
}

ModulePtr convert(ModulePtr net, Backend to, Predicate exclude, ConvertReport* report) {
  if (!net) throw Error("nn::convert: expected a network, got nullptr");
  ConvertReport local;
  ConvertReport& r = report ? *report : local;
  tensor::Device device = tensor::Device::cpu();
  if (to == Backend::cudnn) {
    if (!cudnn_allowed(r.note)) return net;
    device = tensor::Device::cuda(tensor::cuda::current_device());
  }
  // Each twin moves to the device alone, which would leave two copies of a tied tensor: the
  // ties are read first and made again on the converted network (Note [Tied parameters] in
  // nn/Module.cpp). A tie whose two ends end up on different devices or dtypes (one end excluded
  // from conversion) cannot hold; it is reported and each end keeps its own copy.
  std::vector<std::vector<std::string>> ties;
  try {
    ties = net->tiedParameters();
  } catch (const Error&) {
    // a null child: the walk below refuses it by its path
  }
  Walker walker{detail::table(to), to, exclude, r, device};
  ModulePtr out = walker.visit(net, "");
  for (const auto& group : ties) {
    for (size_t i = 1; i < group.size(); ++i) {
      try {
        out->tieParameters(group[i], group[0]);
      } catch (const Error& e) {
        r.note += std::string(r.note.empty() ? "" : "; ") + "the tie of '" + group[i] + "' to '" + group[0] +
                  "' could not be kept: " + e.what();
        std::fprintf(stderr, "cudnn-nn: warning: nn::convert: %s\n", r.note.c_str());
      }
    }
  }
  return out;
}

CriterionPtr convert(CriterionPtr criterion, Backend to) {
  if (!criterion) throw Error("nn::convert: expected a criterion, got nullptr");
  if (criterion->backendKind() == to) return criterion;
  tensor::Device device = tensor::Device::cpu();
  if (to == Backend::cudnn) {
    std::string note;
    if (!cudnn_allowed(note)) return criterion;
    device = tensor::Device::cuda(tensor::cuda::current_device());
  }
  const auto& t = detail::table(to);
  auto it = t.criteria.find(criterion->type_name());
  if (it == t.criteria.end()) {
    throw Error("nn::convert: " + criterion->type_name() + " has no " + backend_name(to) + " twin");
  }
  CriterionPtr twin = it->second(*criterion);
  if (!twin)
    throw Error("nn::convert: the " + std::string(backend_name(to)) + " factory for " + criterion->type_name() +
                " returned nullptr");
  twin->to(device);
  return twin;
}

std::vector<std::string> convertible_types(Backend to) {
  std::vector<std::string> out;
  const auto& t = detail::table(to);
  for (const auto& [name, _] : t.modules) out.push_back(name);
  for (const auto& [name, _] : t.criteria) out.push_back(name);
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const auto& [name, _] : to == Backend::cudnn ? r.to_cudnn : r.to_nn) out.push_back(name);
  return out;
}

void register_twin(const std::string& nnType, const std::string& twinType, Factory toTwin, Factory toNn) {
  const std::string where = "nn::register_twin(" + nnType + ", " + twinType + "): ";
  if (nnType.empty() || twinType.empty() || nnType == twinType) {
    throw Error(where + "expected two different, non-empty type names");
  }
  if (!toTwin || !toNn) throw Error(where + "expected both factories, got an empty one");
  // the built-in names (nn/modules.def), in a build with or without cuDNN alike
  static const char* const builtin[] = {
#define NN_TWIN(X) "nn." #X, "cudnn." #X,
#define NN_MODULE(X) "nn." #X,
#include "nn/modules.def"
  };
  for (const char* name : builtin) {
    if (nnType == name || twinType == name) {
      throw Error(where + "expected types the library does not define, got " + name + " (a built-in module's name)");
    }
  }
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const std::string& name : {nnType, twinType}) {
    if (r.to_cudnn.count(name) || r.to_nn.count(name)) {
      throw Error(where + "expected a type not registered yet, got " + name + " (registered before)");
    }
  }
  r.to_cudnn.emplace(nnType, std::move(toTwin));
  r.to_nn.emplace(twinType, std::move(toNn));
}

}  // namespace nn

// ModelFile.cpp: the structure walk (describe / build), the registry of user types, and
// the files.
#include "convert/ModelFile.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>

#include "convert/ConvertTable.h"
#include "convert/ModelTypes.h"
#include "tensor/Safetensors.h"

namespace nn {

namespace {

constexpr const char* kFormat = "cudnn-nn model";
constexpr int64_t kVersion = 1;
const std::string kCudnnPrefix = "cudnn.";

// ---- the registry of user types ----

struct Registry {
  std::mutex mutex;
  std::map<std::string, ModelFactory> types;
};

Registry& registry() {
  static Registry r;
  return r;
}

ModelFactory registered(const std::string& type) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.types.find(type);
  return it == r.types.end() ? ModelFactory() : it->second;
}

// "cudnn.X" -> "nn.X"; "" for any other name.
std::string nn_counterpart(const std::string& type) {
  return type.rfind(kCudnnPrefix, 0) == 0 ? "nn." + type.substr(kCudnnPrefix.size()) : std::string();
}

bool builtin(const std::string& type) { return detail::builtin_model_types().count(type) > 0; }

bool known(const std::string& type) {
  return builtin(type) || builtin(nn_counterpart(type)) || static_cast<bool>(registered(type));
}

std::string label(const std::string& path) { return path.empty() ? "root" : path; }
std::string child_path(const std::string& path, size_t i) {
  return path.empty() ? std::to_string(i) : path + "." + std::to_string(i);
}

// "runs/lenet.json" and "runs/lenet.safetensors" -> "runs/lenet"
std::string stem(const std::string& path) {
  for (const std::string ext : {".json", ".safetensors"}) {
    if (path.size() > ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0) {
      return path.substr(0, path.size() - ext.size());
    }
  }
  return path;
}

std::string read_text(const std::string& file, const char* who) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error(std::string(who) + ": cannot read '" + file + "': " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw Error(std::string(who) + ": reading '" + file + "' failed");
  return text.str();
}

// Through a temporary file and a rename, so a failed save never leaves half a file.
void write_text(const std::string& file, const std::string& text, const char* who) {
  const std::string tmp = file + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(std::string(who) + ": cannot open '" + tmp + "' for writing: " + std::strerror(errno));
    out << text;
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      throw Error(std::string(who) + ": writing '" + tmp + "' failed");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, file, ec);
  if (ec) {
    std::remove(tmp.c_str());
    throw Error(std::string(who) + ": cannot rename '" + tmp + "' to '" + file + "': " + ec.message());
  }
}

// ---- describe ----

tensor::Json describe(Module& m, const std::string& path) {
  const std::string type = m.type_name();
  if (!known(type)) {
    throw Error("nn::save_model: the module at " + label(path) + " is a " + type +
                ", a type model files do not know: register it with nn::register_model_type(\"" + type +
                "\", factory), or save its weights alone with nn::save_weights");
  }
  tensor::Json node;
  node.set("type", type);
  node.set("training", m.isTraining());
  tensor::Json config = m.config();
  if (!config.is_object()) {
    throw Error("nn::save_model: " + type + "::config() at " + label(path) + " returned " + config.dump() +
                ", expected a JSON object");
  }
  node.set("config", std::move(config));
  if (auto* kids = m.children()) {
    tensor::Json::Array children;
    for (size_t i = 0; i < kids->size(); ++i) {
      if (!(*kids)[i])
        throw Error("nn::save_model: the container at " + label(path) + " has a null child " + std::to_string(i));
      children.push_back(describe(*(*kids)[i], child_path(path, i)));
    }
    node.set("children", tensor::Json(std::move(children)));
  }
  return node;
}

// ---- build ----

struct Builder {
  const std::string& what;
  std::vector<std::string> asNn;  // "cudnn.X" modules built as nn.X (no twin in this build)

  ModulePtr build(const tensor::Json& node, const std::string& path) {
    const std::string at = what + ": at " + label(path);
    node.as_object(at);
    for (const auto& [key, _] : node.as_object()) {
      if (key != "type" && key != "training" && key != "config" && key != "children") {
        throw Error(at + ": unknown key '" + key + "' (a module has type, training, config and children)");
      }
    }
    const std::string type = node.at("type", at).as_string(at + ": type");
    const std::string where = at + " (" + type + "): ";

    std::vector<ModulePtr> children;
    if (const tensor::Json* kids = node.find("children")) {
      const auto& list = kids->as_array(at + ": children");
      for (size_t i = 0; i < list.size(); ++i) children.push_back(build(list[i], child_path(path, i)));
    }
    static const tensor::Json kEmpty = tensor::Json::Object{};
    const tensor::Json* config = node.find("config");

    // a user's type first, then the built-in nn types, then the twins of those
    ModelFactory factory = registered(type);
    std::string builds = type;  // the type the factory makes
    bool twin = false;
    if (!factory) {
      const auto& table = detail::builtin_model_types();
      auto it = table.find(type);
      if (it == table.end() && !nn_counterpart(type).empty()) {
        builds = nn_counterpart(type);
        it = table.find(builds);
        twin = true;
      }
      if (it == table.end()) {
        throw Error(what + ": unknown module type '" + type + "' at " + label(path) +
                    ": not a built-in type; register it with nn::register_model_type(\"" + type +
                    "\", factory) before loading");
      }
      factory = it->second;
    }

    ModulePtr m;
    try {
      m = factory(config ? *config : kEmpty, std::move(children));
    } catch (const std::exception& e) {
      throw Error(where + e.what());
    }
    if (!m) throw Error(where + "the factory returned nullptr");
    if (m->type_name() != builds) {
      throw Error(where + "the factory built a " + m->type_name() + ", expected a " + builds);
    }
    if (twin) {
      // Note: moving into the twin keeps the state where it is (the CPU): no GPU needed.
      const auto& twins = detail::table(Backend::cudnn).modules;
      auto it = twins.find(builds);
      if (it == twins.end()) {
        asNn.push_back(label(path));
      } else {
        m = it->second(*m);
      }
    }
    return m;
  }

  // Parents first: train()/evaluate() recurse, so each child then sets its own subtree.
  void restoreModes(Module& m, const tensor::Json& node, const std::string& path) {
    const tensor::Json* training = node.find("training");
    if (!training || training->as_bool(what + ": at " + label(path) + ": training")) {
      m.train();
    } else {
      m.evaluate();
    }
    const tensor::Json* kids = node.find("children");
    if (!kids || !m.children()) return;
    const auto& list = kids->as_array();
    for (size_t i = 0; i < list.size() && i < m.children()->size(); ++i) {
      restoreModes(*(*m.children())[i], list[i], child_path(path, i));
    }
  }

  void warn() const {
    if (asNn.empty()) return;
    std::string where;
    for (const auto& p : asNn) where += (where.empty() ? "" : ", ") + p;
    const char* why =
        detail::built_with_cudnn() ? "this build has no cudnn twin for them" : "cudnn-nn was built without cuDNN";
    std::fprintf(stderr, "cudnn-nn: warning: %s: %s: the cudnn modules at %s load as their nn counterparts\n",
                 what.c_str(), why, where.c_str());
  }
};

void check_header(const tensor::Json& document, const std::string& what) {
  document.as_object(what);
  const std::string format = document.at("format", what).as_string(what + ": format");
  if (format != kFormat) {
    throw Error(what + ": format is '" + format + "', expected '" + kFormat + "'");
  }
  const int64_t version = document.at("version", what).as_int(what + ": version");
  if (version != kVersion) {
    throw Error(what + ": version " + std::to_string(version) + " (this cudnn-nn reads version " +
                std::to_string(kVersion) + (version > kVersion ? "; the file was written by a newer one)" : ")"));
  }
  for (const auto& [key, _] : document.as_object()) {
    if (key != "format" && key != "version" && key != "module") {
      throw Error(what + ": unknown key '" + key + "' (a model file has format, version and module)");
    }
  }
  document.at("module", what);
}

ModulePtr build_checked(const tensor::Json& document, const std::string& what, Builder& builder) {
  check_header(document, what);
  const tensor::Json& root = document.at("module");
  ModulePtr net = builder.build(root, "");
  builder.restoreModes(*net, root, "");
  return net;
}

// Casts each module whose own tensors in the file share one floating dtype other than
// float32 to it, parents first: a float64 network comes back float64, and a float16 cudnn
// network keeps its float32 batch-norm statistics.
void restore_dtypes(Module& net, const std::map<std::string, Tensor>& state) {
  std::map<std::string, std::optional<DType>> common;  // module path -> its tensors' dtype, if one
  for (const auto& [name, _] : net.stateDict()) {
    auto it = state.find(name);
    if (it == state.end() || !tensor::is_floating(it->second.dtype())) continue;
    const size_t dot = name.rfind('.');
    const std::string path = dot == std::string::npos ? "" : name.substr(0, dot);
    auto [entry, fresh] = common.try_emplace(path, it->second.dtype());
    if (!fresh && entry->second != it->second.dtype()) entry->second.reset();
  }
  std::function<void(Module&, const std::string&)> walk = [&](Module& m, const std::string& path) {
    auto it = common.find(path);
    if (it != common.end() && it->second && *it->second != DType::Float32) m.to(*it->second);
    if (auto* kids = m.children()) {
      for (size_t i = 0; i < kids->size(); ++i) walk(*(*kids)[i], child_path(path, i));
    }
  };
  walk(net, "");
}

void load_state(Module& net, const std::map<std::string, Tensor>& state, const std::string& what) {
  try {
    net.loadStateDict(state, true);
  } catch (const Error& e) {
    throw Error(what + ": " + e.what());
  }
}

}  // namespace

tensor::Json describe_model(Module& net) {
  tensor::Json document;
  document.set("format", kFormat);
  document.set("version", kVersion);
  document.set("module", describe(net, ""));
  return document;
}

ModulePtr build_model(const tensor::Json& document, const std::string& what) {
  Builder builder{what, {}};
  ModulePtr net = build_checked(document, what, builder);
  builder.warn();
  return net;
}

void save_model(Module& net, const std::string& path) {
  const std::string base = stem(path);
  const std::string text = describe_model(net).dump(2) + "\n";  // checks every type first
  save_weights(net, base + ".safetensors");
  write_text(base + ".json", text, "nn::save_model");
}

ModulePtr load_model(const std::string& path) {
  const std::string base = stem(path);
  const std::string jsonFile = base + ".json", weightsFile = base + ".safetensors";
  const std::string what = "nn::load_model: " + jsonFile;
  const tensor::Json document = tensor::Json::parse(read_text(jsonFile, "nn::load_model"), what);
  Builder builder{what, {}};
  ModulePtr net = build_checked(document, what, builder);
  tensor::SafetensorsFile weights;
  try {
    weights = tensor::load_safetensors(weightsFile);
  } catch (const Error& e) {
    throw Error(std::string("nn::load_model: ") + e.what());
  }
  restore_dtypes(*net, weights.tensors);
  load_state(*net, weights.tensors, "nn::load_model: " + weightsFile);
  builder.warn();
  return net;
}

void save_weights(Module& net, const std::string& path) {
  tensor::save_safetensors(path, net.stateDict(), {{"format", kFormat}, {"version", std::to_string(kVersion)}});
}

void load_weights(Module& net, const std::string& path) {
  tensor::SafetensorsFile weights;
  try {
    weights = tensor::load_safetensors(path);
  } catch (const Error& e) {
    throw Error(std::string("nn::load_weights: ") + e.what());
  }
  load_state(net, weights.tensors, "nn::load_weights: " + path);
}

void register_model_type(const std::string& type, ModelFactory factory) {
  if (type.empty()) throw Error("nn::register_model_type: expected a type name, got an empty string");
  if (!factory) throw Error("nn::register_model_type: expected a factory for '" + type + "', got an empty one");
  if (builtin(type) || builtin(nn_counterpart(type))) {
    throw Error("nn::register_model_type: '" + type + "' is a built-in type");
  }
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.types[type] = std::move(factory);
}

void register_model_type(const std::string& type, LeafModelFactory factory) {
  if (!factory) throw Error("nn::register_model_type: expected a factory for '" + type + "', got an empty one");
  register_model_type(
      type,
      ModelFactory([f = std::move(factory)](const tensor::Json& config, std::vector<ModulePtr> children) -> ModulePtr {
        if (!children.empty()) {
          throw Error("expected no children (registered as a leaf), got " + std::to_string(children.size()));
        }
        return f(config);
      }));
}

std::vector<std::string> model_types() {
  std::set<std::string> names;
  for (const auto& [name, _] : detail::builtin_model_types()) names.insert(name);
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const auto& [name, _] : r.types) names.insert(name);
  return {names.begin(), names.end()};
}

}  // namespace nn

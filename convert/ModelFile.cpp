// ModelFile.cpp: the structure walk (describe / build), the registry of user types, and
// the files.
#include "convert/ModelFile.h"

#include <cmath>
#include <cstdio>
#include <exception>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>

#include "convert/ConvertTable.h"
#include "convert/ModelTypes.h"
#include "nn/ModuleConfig.h"
#include "tensor/FileIO.h"
#include "tensor/Npy.h"
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

std::map<std::string, std::string> metadata() { return {{"format", kFormat}, {"version", std::to_string(kVersion)}}; }

// See Note [Saving a pair]: the key both files of a pair carry, and its value for one save.
constexpr const char* kPairKey = "pair";
constexpr const char* kTiedKey = "tied";
uint64_t fnv1a(const void* data, size_t size, uint64_t h = 1469598103934665603ull) {
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < size; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}
std::string pair_id(const std::string& structure) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a(structure.data(), structure.size())));
  return hex;
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
  const std::vector<uint8_t> bytes = tensor::read_file(file, who);  // names a directory as one
  return std::string(bytes.begin(), bytes.end());
}

// JSON has no NaN or infinity (the writer would put null, which no fromConfig reads back):
// refuse to save what could not be loaded. Modules reject such values when constructed;
// this catches a public field set afterwards.
void check_finite(const tensor::Json& v, const std::string& where) {
  if (v.is_number() && !v.is_integer() && !std::isfinite(v.as_number())) {
    throw Error("nn::save_model: " + where + " is " + std::to_string(v.as_number()) +
                ": model files hold finite numbers only");
  }
  if (v.is_array()) {
    for (size_t i = 0; i < v.as_array().size(); ++i)
      check_finite(v.as_array()[i], where + "[" + std::to_string(i) + "]");
  }
  if (v.is_object()) {
    for (const auto& [key, item] : v.as_object()) check_finite(item, where + "." + key);
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
  check_finite(config, type + " config at " + label(path));
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

// Note [Untrusted model files]
// A model file is untrusted input: a few bytes of JSON can describe a Linear of 2^31 x 2^31
// or a kernel of gigabytes. load_model therefore works in three steps:
//   1. validate(): the whole structure, before anything is built: keys, types, children,
//      and every built-in module's config, through its own fromConfig inside a
//      ConfigValidation scope (nn/ModuleConfig.h), which stops each fromConfig at its
//      finish(), before construction; an AllocationLimit of 0 bytes makes sure of it (a
//      fromConfig that allocates before finish() is left to step 3).
//   2. the weights file is read and checked (tensor/Safetensors.h), so its size is known.
//   3. build() under an AllocationLimit proportional to the elements the weights file holds
//      (kBytesPerElement: a float32 value and its gradient are 8 bytes per element; four
//      times that leaves room for modules' own buffers), then the network's state is
//      checked against the file (names, shapes, dtypes) before any tensor is cast or copied.
// So a misspelt key costs nothing, and a network larger than its weights file is refused
// after allocating at most a small multiple of what the file holds.
constexpr size_t kBytesPerElement = 32;
constexpr size_t kAllocationSlack = size_t{1} << 20;  // modules' own small buffers

struct Builder {
  const std::string& what;
  std::vector<std::string> asNn;  // "cudnn.X" modules built as nn.X (no twin in this build)

  struct Node {
    std::string at, type, where;
    const tensor::Json* config;
    const tensor::Json::Array* children;  // nullptr: none
  };

  // The checks of a node that need nothing built.
  Node read(const tensor::Json& node, const std::string& path) const {
    Node n;
    n.at = what + ": at " + label(path);
    node.as_object(n.at);
    for (const auto& [key, _] : node.as_object()) {
      if (key != "type" && key != "training" && key != "config" && key != "children") {
        throw Error(n.at + ": unknown key '" + key + "' (a module has type, training, config and children)");
      }
    }
    n.type = node.at("type", n.at).as_string(n.at + ": type");
    n.where = n.at + " (" + n.type + "): ";
    if (const tensor::Json* training = node.find("training")) training->as_bool(n.at + ": training");
    static const tensor::Json kEmpty = tensor::Json::Object{};
    n.config = node.find("config");
    if (!n.config) n.config = &kEmpty;
    const tensor::Json* kids = node.find("children");
    n.children = kids ? &kids->as_array(n.at + ": children") : nullptr;
    return n;
  }

  // The factory of `n.type`: a user's type first, then the built-in nn types, then the twins
  // of those. `builds` gets the type it makes, `user` whether it is a user's.
  ModelFactory factory(const Node& n, const std::string& path, std::string& builds, bool& twin, bool& user) const {
    ModelFactory f = registered(n.type);
    builds = n.type;
    twin = false;
    user = static_cast<bool>(f);
    if (f) return f;
    const auto& table = detail::builtin_model_types();
    auto it = table.find(n.type);
    if (it == table.end() && !nn_counterpart(n.type).empty()) {
      builds = nn_counterpart(n.type);
      it = table.find(builds);
      twin = true;
    }
    if (it == table.end()) {
      throw Error(what + ": unknown module type '" + n.type + "' at " + label(path) +
                  ": not a built-in type; register it with nn::register_model_type(\"" + n.type +
                  "\", factory) before loading");
    }
    return it->second;
  }

  // Step 1 of Note [Untrusted model files]: the whole tree, children first, nothing built.
  void validate(const tensor::Json& node, const std::string& path) const {
    const Node n = read(node, path);
    if (n.children) {
      for (size_t i = 0; i < n.children->size(); ++i) validate((*n.children)[i], child_path(path, i));
    }
    std::string builds;
    bool twin = false, user = false;
    const ModelFactory f = factory(n, path, builds, twin, user);
    if (user) return;  // a user's factory is not known to stop before allocating
    ConfigValidation validation;
    tensor::AllocationLimit nothing(0, "validating a model file allocates nothing");
    try {
      f(*n.config, {});
    } catch (const ConfigValid&) {
      return;  // every key checked out
    } catch (const tensor::AllocationLimitExceeded&) {
      return;  // this fromConfig builds before finish(): its config is checked in build()
    } catch (const std::exception& e) {
      throw Error(n.where + e.what());
    }
  }

  ModulePtr build(const tensor::Json& node, const std::string& path) {
    const Node n = read(node, path);
    const std::string& where = n.where;
    std::vector<ModulePtr> children;
    if (n.children) {
      for (size_t i = 0; i < n.children->size(); ++i) children.push_back(build((*n.children)[i], child_path(path, i)));
    }
    const tensor::Json* config = n.config;
    std::string builds;
    bool twin = false, user = false;
    const ModelFactory make = factory(n, path, builds, twin, user);

    ModulePtr m;
    try {
      m = make(*config, std::move(children));
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
      restoreModes(child_at(m, *m.children(), i, "restoreModes"), list[i], child_path(path, i));
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
    if (key != "format" && key != "version" && key != "module" && key != kPairKey && key != kTiedKey) {
      throw Error(what + ": unknown key '" + key + "' (a model file has format, version, module, pair and tied)");
    }
  }
  document.at("module", what);
  if (const tensor::Json* tied = document.find(kTiedKey)) {
    for (const auto& group : tied->as_array(what + ": tied")) {
      const auto& names = group.as_array(what + ": tied[i]");
      if (names.size() < 2) throw Error(what + ": tied: expected groups of two or more parameter paths");
      for (const auto& n : names) n.as_string(what + ": tied[i][j]");
    }
  }
}

// Ties the parameters the file's "tied" groups name (the header checked their form).
void apply_ties(Module& net, const tensor::Json& document, const std::string& what) {
  const tensor::Json* tied = document.find(kTiedKey);
  if (!tied) return;
  for (const auto& group : tied->as_array()) {
    const auto& names = group.as_array();
    for (size_t i = 1; i < names.size(); ++i) {
      try {
        net.tieParameters(names[i].as_string(), names[0].as_string());
      } catch (const Error& e) {
        throw Error(what + ": tied: " + e.what());
      }
    }
  }
}

ModulePtr build_checked(const tensor::Json& document, const std::string& what, Builder& builder) {
  check_header(document, what);
  const tensor::Json& root = document.at("module");
  builder.validate(root, "");
  ModulePtr net = builder.build(root, "");
  apply_ties(*net, document, what);
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
      for (size_t i = 0; i < kids->size(); ++i) walk(child_at(m, *kids, i, "to"), child_path(path, i));
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

void load_state_checked(Module& net, const std::map<std::string, Tensor>& state, bool strict, const std::string& what) {
  try {
    net.loadStateDict(state, strict);
  } catch (const Error& e) {
    throw Error(what + ": " + e.what());
  }
}

void check_state(Module& net, const std::map<std::string, Tensor>& state, const std::string& what) {
  try {
    net.checkStateDict(state, true);
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
  // tied parameters: each group's paths, its first the one the others take (Note [Tied
  // parameters] in nn/Module.cpp); the weights file holds every path, as stateDict() lists them
  const auto ties = net.tiedParameters();
  if (!ties.empty()) {
    tensor::Json::Array groups;
    for (const auto& g : ties) {
      tensor::Json::Array names;
      for (const auto& n : g) names.emplace_back(n);
      groups.emplace_back(std::move(names));
    }
    document.set(kTiedKey, tensor::Json(std::move(groups)));
  }
  return document;
}

ModulePtr build_model(const tensor::Json& document, const std::string& what, size_t maxBytes) {
  Builder builder{what, {}};
  tensor::AllocationLimit limit(maxBytes, what + ": the network it describes needs more than build_model's maxBytes (" +
                                              std::to_string(maxBytes) + " bytes)");
  ModulePtr net = build_checked(document, what, builder);
  builder.warn();
  return net;
}

// Note [Saving a pair]: both files are written completely (and fsynced) under temporary
// names before either replaces its target; then the weights are renamed, the structure last.
// A failure while writing leaves both old files as they were. Between the two renames a crash
// (or a failed rename of the structure) leaves new weights beside the old structure, and the
// shapes alone cannot tell when the two models have the same weight shapes. So both files of
// a pair carry one id, "pair" at the top of the structure and in the weights' metadata: a hash
// (64-bit FNV-1a) of the structure as saved (types, modes, configs). Two saves of one structure
// share it, and their files may be mixed safely (the weights fit the structure they name);
// saving the same model twice writes the same bytes. load_model refuses a pair whose ids differ, naming both files
// (after the shape check, whose listing says more where shapes differ). A file without an id (written before the id
// existed, by save_weights, or by hand) is not checked: shapes are all it can tell. When the structure's rename fails
// after the weights' succeeded, the error says which file is new and which is old.
void save_model(Module& net, const std::string& path) {
  const std::string base = stem(path);
  const std::string jsonFile = base + ".json", weightsFile = base + ".safetensors";
  tensor::Json document = describe_model(net);  // checks every type first
  const std::string id = pair_id(document.dump());
  document.set(kPairKey, id);
  const std::string text = document.dump(2) + "\n";
  std::map<std::string, std::string> meta = metadata();
  meta[kPairKey] = id;
  const std::vector<uint8_t> bytes = tensor::serialize_safetensors(net.stateDict(), meta);
  tensor::PendingFile weights(weightsFile, bytes.data(), bytes.size(), "nn::save_model");
  tensor::PendingFile structure(jsonFile, text.data(), text.size(), "nn::save_model");
  std::exception_ptr unsynced;  // the weights were renamed, but their directory not synced
  try {
    weights.commit();
  } catch (const Error&) {
    if (!weights.committed()) throw;  // nothing replaced: both files as they were
    unsynced = std::current_exception();
  }
  try {
    structure.commit();
  } catch (const Error& e) {
    if (structure.committed()) throw;
    throw Error("nn::save_model: '" + weightsFile + "' holds the new weights, but '" + jsonFile +
                "' still holds the old structure (the pair will not load until a save succeeds): " + e.what());
  }
  if (unsynced) std::rethrow_exception(unsynced);
}

namespace {
// See Note [Saving a pair].
void check_pair(const tensor::Json& document, const std::string& jsonFile, const tensor::SafetensorsFile& weights,
                const std::string& weightsFile) {
  const tensor::Json* structureId = document.find(kPairKey);
  auto weightsId = weights.metadata.find(kPairKey);
  if (!structureId || weightsId == weights.metadata.end()) return;  // a hand-made or older file, or save_weights'
  const std::string& id = structureId->as_string("nn::load_model: " + jsonFile + ": pair");
  if (id == weightsId->second) return;
  throw Error("nn::load_model: '" + jsonFile + "' and '" + weightsFile + "' are not one save's pair (pair id " + id +
              " in the structure, " + weightsId->second +
              " in the weights): a save that stopped between its two renames, or files of two saves of different "
              "models; save the model again");
}

// See Note [Untrusted model files].
ModulePtr load_parts(const std::string& text, const std::string& jsonFile,
                     const std::function<tensor::SafetensorsFile()>& read_weights, const std::string& weightsFile) {
  const std::string what = "nn::load_model: " + jsonFile;
  const tensor::Json document = tensor::Json::parse(text, what);
  check_header(document, what);
  const tensor::Json& root = document.at("module");
  Builder builder{what, {}};
  builder.validate(root, "");
  tensor::SafetensorsFile weights;
  try {
    weights = read_weights();
  } catch (const Error& e) {
    throw Error(std::string("nn::load_model: ") + e.what());
  }
  size_t elements = 0;
  for (const auto& [_, t] : weights.tensors) elements += static_cast<size_t>(t.numel());
  ModulePtr net;
  {
    const size_t budget = elements * kBytesPerElement + kAllocationSlack;  // elements <= file bytes
    tensor::AllocationLimit limit(budget, "the network " + jsonFile + " describes needs more memory than the " +
                                              std::to_string(elements) + " elements of " + weightsFile +
                                              " can fill (a model file holds all its weights)");
    net = builder.build(root, "");
    apply_ties(*net, document, what);
    check_state(*net, weights.tensors, "nn::load_model: " + weightsFile);
  }
  check_pair(document, jsonFile, weights, weightsFile);  // after the shapes, whose listing says more
  builder.restoreModes(*net, root, "");
  restore_dtypes(*net, weights.tensors);
  apply_ties(*net, document, what);  // again: a module cast alone above leaves its ties
  load_state(*net, weights.tensors, "nn::load_model: " + weightsFile);
  builder.warn();
  return net;
}
}  // namespace

ModulePtr load_model(const std::string& path) {
  const std::string base = stem(path);
  const std::string jsonFile = base + ".json", weightsFile = base + ".safetensors";
  return load_parts(
      read_text(jsonFile, "nn::load_model"), jsonFile, [&] { return tensor::load_safetensors(weightsFile); },
      weightsFile);
}

ModulePtr load_model(const std::string& json, const uint8_t* weights, size_t size, const std::string& jsonWhat,
                     const std::string& weightsWhat) {
  return load_parts(
      json, jsonWhat, [&] { return tensor::parse_safetensors(weights, size, weightsWhat); }, weightsWhat);
}

void save_weights(Module& net, const std::string& path) { tensor::save_safetensors(path, net.stateDict(), metadata()); }

namespace {
// The tensors of a weights file: .npz (NumPy) by its extension, safetensors otherwise.
std::map<std::string, Tensor> read_weights(const std::string& path) {
  try {
    if (path.ends_with(".npz")) return tensor::load_npz(path);
    return tensor::load_safetensors(path).tensors;
  } catch (const Error& e) {
    throw Error(std::string("nn::load_weights: ") + e.what());
  }
}
}  // namespace

void load_weights(Module& net, const std::string& path) {
  load_state(net, read_weights(path), "nn::load_weights: " + path);
}

// Note [Non-strict loading]: the file's keys are mapped first (a key mapped to "" is dropped),
// then compared with the network's state: a tensor loads when its name exists with the same
// shape and the same kind (floating or not); the rest is reported, never half-copied. Strict
// loading throws Module::loadStateDict's list of every mismatch (naming the file) instead.
WeightsReport load_weights(Module& net, const std::string& path, const LoadWeightsOptions& options) {
  const std::string what = "nn::load_weights: " + path;
  std::map<std::string, Tensor> state;
  for (auto& [key, t] : read_weights(path)) {
    const std::string name = options.mapKey ? options.mapKey(key) : key;
    if (name.empty()) continue;
    if (!state.emplace(name, t).second) {
      throw Error(what + ": expected distinct names after the key mapping, got '" + name + "' twice (from '" + key +
                  "' and another key)");
    }
  }
  WeightsReport report;
  const std::map<std::string, Tensor> own = net.stateDict();
  std::map<std::string, Tensor> loadable;
  for (const auto& [name, t] : state) {
    const auto it = own.find(name);
    if (it == own.end()) {
      report.unexpected.push_back(name);
    } else if (it->second.sizes() != t.sizes() ||
               tensor::is_floating(it->second.dtype()) != tensor::is_floating(t.dtype())) {
      report.mismatched.push_back(name + ": file " + t.description() + ", network " + it->second.description());
    } else {
      loadable[name] = t;
      report.loaded.push_back(name);
    }
  }
  for (const auto& [name, t] : own) {
    // batch norm's optional counter (Note [num_batches_tracked] in nn/BatchNormalization.h)
    const bool optional = name == "num_batches_tracked" || name.ends_with(".num_batches_tracked");
    if (!state.count(name) && !optional) report.missing.push_back(name);
  }
  load_state_checked(net, options.strict ? state : loadable, options.strict, what);
  return report;
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

// Checkpoint.cpp: see Note [Checkpoint files] in Checkpoint.h.
#include "train/Checkpoint.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "tensor/Generator.h"
#include "tensor/Json.h"
#include "tensor/Safetensors.h"

namespace nn {

namespace {

constexpr const char* kFormat = "cudnn-nn checkpoint";
constexpr const char* kVersion = "1";

// Number maps as JSON objects of strings: "%.17g" keeps every double exactly, Inf included
// (ReduceLROnPlateau's first best), which JSON numbers cannot hold.
std::string encode(const std::map<std::string, double>& m) {
  tensor::Json::Object o;
  for (const auto& [k, v] : m) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    o.emplace_back(k, std::string(buf));
  }
  return tensor::Json(o).dump();
}

std::map<std::string, double> decode(const std::string& text, const std::string& what) {
  std::map<std::string, double> out;
  const tensor::Json j = tensor::Json::parse(text, what);
  for (const auto& [k, v] : j.as_object(what)) {
    const std::string& s = v.as_string(what + " '" + k + "'");
    char* end = nullptr;
    const double d = std::strtod(s.c_str(), &end);
    if (end == s.c_str() || *end != '\0') throw Error(what + ": expected a number for '" + k + "', got '" + s + "'");
    out[k] = d;
  }
  return out;
}

void same_keys(const std::map<std::string, double>& want, const std::map<std::string, double>& got, const char* what) {
  auto names = [](const std::map<std::string, double>& m) {
    std::string out;
    for (const auto& [k, _] : m) out += (out.empty() ? "" : ", ") + k;
    return out;
  };
  bool same = want.size() == got.size();
  for (const auto& [k, _] : want) same = same && got.count(k);
  if (!same) throw Error(std::string("expected ") + what + "'s state {" + names(want) + "}, got {" + names(got) + "}");
}

std::map<std::string, double> optimizer_lrs(const Optimizer& o) {
  std::map<std::string, double> m{{"groups", static_cast<double>(o.numGroups())}};
  for (size_t k = 0; k < o.numGroups(); ++k) m["lr." + std::to_string(k)] = o.groupLr(k);
  return m;
}

// A checkpoint file's tensors and metadata, and the prefix load_checkpoint's errors start with.
struct Reader {
  std::string who;
  tensor::SafetensorsFile f;

  const std::string* meta(const std::string& key) const {
    const auto it = f.metadata.find(key);
    return it == f.metadata.end() ? nullptr : &it->second;
  }
  const std::string& require(const std::string& key) const {
    const std::string* v = meta(key);
    if (!v) throw Error(who + ": expected '" + key + "' in the checkpoint, got none (a truncated or foreign file)");
    return *v;
  }
};

// What load_checkpoint restores, read and checked before anything changes.
struct Loaded {
  std::map<std::string, Tensor> model, optim;
  std::map<std::string, double> groups, sched, plateau, scaler, loader;
  uint64_t seed = 0, offset = 0;
  int64_t epoch = 0, step = 0;
};

Reader open_checkpoint(const std::string& dir, const TrainingState& s) {
  Reader r;
  const std::string file = checkpoint_file(dir);
  r.who = "nn::load_checkpoint: " + file;
  if (!s.model) throw Error(r.who + ": expected a model in the training state, got none");
  try {
    r.f = tensor::load_safetensors(file);
  } catch (const Error& e) {
    throw Error(std::string("nn::load_checkpoint: ") + e.what());
  }
  const std::string* format = r.meta("format");
  if (!format || *format != kFormat) {
    throw Error(r.who + ": expected a cudnn-nn checkpoint (metadata format '" + kFormat + "'), got " +
                (format ? "'" + *format + "'" : std::string("none")));
  }
  return r;
}

void split_tensors(const Reader& r, Loaded& l) {
  for (const auto& [k, t] : r.f.tensors) {
    if (k.starts_with("model.")) {
      l.model[k.substr(6)] = t;
    } else if (k.starts_with("optimizer.")) {
      l.optim[k.substr(10)] = t;
    } else {
      throw Error(r.who + ": unexpected tensor '" + k + "' (expected 'model.*' and 'optimizer.*')");
    }
  }
}

// each component's state is in the checkpoint exactly when the training state has the component
void check_components(const Reader& r, const TrainingState& s) {
  auto component = [&](bool have, const std::string& key, const char* what) {
    if (have && !r.meta(key)) throw Error(r.who + ": expected " + what + " state in the checkpoint, got none");
    if (!have && r.meta(key)) {
      throw Error(r.who + ": the checkpoint holds " + what + " state, but the training state has no " + what +
                  " to restore it into");
    }
  };
  component(s.optimizer != nullptr, "optimizer", "optimizer");
  component(s.scheduler != nullptr, "scheduler.state", "learning-rate schedule");
  component(s.plateau != nullptr, "plateau.state", "ReduceLROnPlateau");
  component(s.scaler != nullptr, "scaler.state", "gradient scaler");
  component(s.loader != nullptr, "loader.state", "data loader");
}

// the optimizer's type, parameter count, groups and state shapes; throws without the prefix
void check_optimizer(const Reader& r, const Optimizer& o, Loaded& l) {
  if (r.require("optimizer") != o.type_name() || r.require("optimizer.params") != std::to_string(o.params().size())) {
    throw Error("expected the state of an " + o.type_name() + " over " + std::to_string(o.params().size()) +
                " parameters, got an " + r.require("optimizer") + " over " + r.require("optimizer.params"));
  }
  l.groups = decode(r.require("optimizer.groups"), "optimizer.groups");
  if (l.groups["groups"] != static_cast<double>(o.numGroups())) {
    throw Error("expected " + std::to_string(o.numGroups()) + " parameter groups, got " +
                std::to_string(static_cast<int64_t>(l.groups["groups"])));
  }
  for (const auto& [k, t] : l.optim) {  // shapes, as Optimizer::loadStateDict checks them
    const size_t dot = k.find('.');
    const size_t i = dot == std::string::npos ? o.params().size() : std::stoul(k.substr(0, dot));
    if (i >= o.params().size() || (!k.ends_with(".step") && t.sizes() != o.params()[i].sizes())) {
      throw Error("optimizer state '" + k + "' " + tensor::shape_str(t.sizes()) + " does not fit the parameters");
    }
  }
}

// the components' states, decoded and checked so that their loads cannot fail half-way
void decode_states(const Reader& r, const TrainingState& s, Loaded& l) {
  try {
    if (s.optimizer) check_optimizer(r, *s.optimizer, l);
    if (s.scheduler) {
      if (r.require("scheduler") != s.scheduler->type_name()) {
        throw Error("expected the state of an " + s.scheduler->type_name() + ", got an " + r.require("scheduler"));
      }
      l.sched = decode(r.require("scheduler.state"), "scheduler.state");
    }
    if (s.plateau) l.plateau = decode(r.require("plateau.state"), "plateau.state");
    if (s.scaler) l.scaler = decode(r.require("scaler.state"), "scaler.state");
    if (s.loader) l.loader = decode(r.require("loader.state"), "loader.state");
    // the components' loads must not fail half-way: their key sets, and the loader's identity
    if (s.scheduler) same_keys(s.scheduler->stateDict(), l.sched, "the schedule");
    if (s.plateau) same_keys(s.plateau->stateDict(), l.plateau, "ReduceLROnPlateau");
    if (s.scaler) same_keys(s.scaler->stateDict(), l.scaler, "the gradient scaler");
    if (s.loader) {
      const auto now = s.loader->stateDict();
      same_keys(now, l.loader, "the data loader");
      for (const char* key : {"seed", "world_size"}) {
        if (now.at(key) != l.loader.at(key)) {
          throw Error(std::string("expected the data loader's ") + key + " " +
                      std::to_string(static_cast<int64_t>(now.at(key))) + ", got " +
                      std::to_string(static_cast<int64_t>(l.loader.at(key))));
        }
      }
    }
  } catch (const Error& e) {
    throw Error(r.who + ": " + e.what());
  } catch (const std::exception& e) {
    throw Error(r.who + ": malformed checkpoint (" + e.what() + ")");
  }
}

// the generator's seed and offset, the epoch and the step
void read_counters(const Reader& r, Loaded& l) {
  {
    std::istringstream in(r.require("generator"));
    if (!(in >> l.seed >> l.offset))
      throw Error(r.who + ": expected the generator's seed and offset, got '" + r.require("generator") + "'");
  }
  try {
    l.epoch = std::stoll(r.require("epoch"));
    l.step = std::stoll(r.require("step"));
  } catch (const std::logic_error&) {
    throw Error(r.who + ": expected integer epoch and step, got '" + r.require("epoch") + "' and '" +
                r.require("step") + "'");
  }
}

}  // namespace

std::string checkpoint_file(const std::string& dir) { return dir + "/checkpoint.safetensors"; }

void save_checkpoint(const std::string& dir, const TrainingState& s) {
  if (!s.model) throw Error("nn::save_checkpoint: expected a model in the training state, got none");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error("nn::save_checkpoint: cannot create the directory " + dir + ": " + ec.message());
  std::map<std::string, Tensor> tensors;
  for (const auto& [k, t] : s.model->stateDict()) tensors["model." + k] = t;
  std::map<std::string, std::string> meta{{"format", kFormat},
                                          {"version", kVersion},
                                          {"model", s.model->type_name()},
                                          {"world_size", std::to_string(s.worldSize)},
                                          {"epoch", std::to_string(s.epoch)},
                                          {"step", std::to_string(s.step)}};
  const tensor::Generator& gen = tensor::default_generator();
  meta["generator"] = std::to_string(gen.seed()) + " " + std::to_string(gen.offset());
  if (s.optimizer) {
    for (const auto& [k, t] : s.optimizer->stateDict()) tensors["optimizer." + k] = t;
    meta["optimizer"] = s.optimizer->type_name();
    meta["optimizer.params"] = std::to_string(s.optimizer->params().size());
    meta["optimizer.groups"] = encode(optimizer_lrs(*s.optimizer));
  }
  if (s.scheduler) {
    meta["scheduler"] = s.scheduler->type_name();
    meta["scheduler.state"] = encode(s.scheduler->stateDict());
  }
  if (s.plateau) meta["plateau.state"] = encode(s.plateau->stateDict());
  if (s.scaler) meta["scaler.state"] = encode(s.scaler->stateDict());
  if (s.loader) meta["loader.state"] = encode(s.loader->stateDict());
  tensor::save_safetensors(checkpoint_file(dir), tensors, meta);
}

void load_checkpoint(const std::string& dir, TrainingState& s) {
  const Reader r = open_checkpoint(dir, s);
  // ---- every check first (Note [Checkpoint files]) ----
  const std::string& world = r.require("world_size");
  if (world != std::to_string(s.worldSize)) {
    throw Error(r.who + ": expected a checkpoint of world size " + std::to_string(s.worldSize) +
                ", got one of world size " + world);
  }
  Loaded l;
  split_tensors(r, l);
  try {
    s.model->checkStateDict(l.model, true);
  } catch (const Error& e) {
    throw Error(r.who + ": a checkpoint of another network (saved from " + r.require("model") + "): " + e.what());
  }
  check_components(r, s);
  decode_states(r, s, l);
  read_counters(r, l);
  // ---- then the changes (the components' own loads check their values once more) ----
  try {
    s.model->loadStateDict(l.model, true);
    if (s.optimizer) {
      s.optimizer->loadStateDict(l.optim);
      for (size_t k = 0; k < s.optimizer->numGroups(); ++k)
        s.optimizer->setGroupLr(k, l.groups.at("lr." + std::to_string(k)));
    }
    if (s.scheduler) s.scheduler->loadStateDict(l.sched);
    if (s.plateau) s.plateau->loadStateDict(l.plateau);
    if (s.scaler) s.scaler->loadStateDict(l.scaler);
    if (s.loader) s.loader->loadStateDict(l.loader);
  } catch (const std::exception& e) {
    throw Error(r.who + ": " + e.what());
  }
  tensor::Generator& gen = tensor::default_generator();
  gen.manual_seed(l.seed);
  gen.reserve(l.offset);
  s.epoch = l.epoch;
  s.step = l.step;
}

}  // namespace nn

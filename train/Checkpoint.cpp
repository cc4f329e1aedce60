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
  const std::string file = checkpoint_file(dir);
  const std::string who = "nn::load_checkpoint: " + file;
  if (!s.model) throw Error(who + ": expected a model in the training state, got none");
  tensor::SafetensorsFile f;
  try {
    f = tensor::load_safetensors(file);
  } catch (const Error& e) {
    throw Error(std::string("nn::load_checkpoint: ") + e.what());
  }
  auto meta = [&](const std::string& key) -> const std::string* {
    const auto it = f.metadata.find(key);
    return it == f.metadata.end() ? nullptr : &it->second;
  };
  const std::string* format = meta("format");
  if (!format || *format != kFormat) {
    throw Error(who + ": expected a cudnn-nn checkpoint (metadata format '" + kFormat + "'), got " +
                (format ? "'" + *format + "'" : std::string("none")));
  }
  // ---- every check first (Note [Checkpoint files]) ----
  auto require = [&](const std::string& key) -> const std::string& {
    const std::string* v = meta(key);
    if (!v) throw Error(who + ": expected '" + key + "' in the checkpoint, got none (a truncated or foreign file)");
    return *v;
  };
  const std::string& world = require("world_size");
  if (world != std::to_string(s.worldSize)) {
    throw Error(who + ": expected a checkpoint of world size " + std::to_string(s.worldSize) +
                ", got one of world size " + world);
  }
  std::map<std::string, Tensor> model, optim;
  for (const auto& [k, t] : f.tensors) {
    if (k.starts_with("model.")) {
      model[k.substr(6)] = t;
    } else if (k.starts_with("optimizer.")) {
      optim[k.substr(10)] = t;
    } else {
      throw Error(who + ": unexpected tensor '" + k + "' (expected 'model.*' and 'optimizer.*')");
    }
  }
  try {
    s.model->checkStateDict(model, true);
  } catch (const Error& e) {
    throw Error(who + ": a checkpoint of another network (saved from " + require("model") + "): " + e.what());
  }
  auto component = [&](bool have, const std::string& key, const char* what) {
    if (have && !meta(key)) throw Error(who + ": expected " + what + " state in the checkpoint, got none");
    if (!have && meta(key)) {
      throw Error(who + ": the checkpoint holds " + what + " state, but the training state has no " + what +
                  " to restore it into");
    }
  };
  component(s.optimizer != nullptr, "optimizer", "optimizer");
  component(s.scheduler != nullptr, "scheduler.state", "learning-rate schedule");
  component(s.plateau != nullptr, "plateau.state", "ReduceLROnPlateau");
  component(s.scaler != nullptr, "scaler.state", "gradient scaler");
  component(s.loader != nullptr, "loader.state", "data loader");
  std::map<std::string, double> groups, sched, plateau, scaler, loader;
  try {
    if (s.optimizer) {
      if (require("optimizer") != s.optimizer->type_name() ||
          require("optimizer.params") != std::to_string(s.optimizer->params().size())) {
        throw Error("expected the state of an " + s.optimizer->type_name() + " over " +
                    std::to_string(s.optimizer->params().size()) + " parameters, got an " + require("optimizer") +
                    " over " + require("optimizer.params"));
      }
      groups = decode(require("optimizer.groups"), "optimizer.groups");
      if (groups["groups"] != static_cast<double>(s.optimizer->numGroups())) {
        throw Error("expected " + std::to_string(s.optimizer->numGroups()) + " parameter groups, got " +
                    std::to_string(static_cast<int64_t>(groups["groups"])));
      }
      for (const auto& [k, t] : optim) {  // shapes, as Optimizer::loadStateDict checks them
        const size_t dot = k.find('.');
        const size_t i = dot == std::string::npos ? s.optimizer->params().size() : std::stoul(k.substr(0, dot));
        if (i >= s.optimizer->params().size() ||
            (!k.ends_with(".step") && t.sizes() != s.optimizer->params()[i].sizes())) {
          throw Error("optimizer state '" + k + "' " + tensor::shape_str(t.sizes()) + " does not fit the parameters");
        }
      }
    }
    if (s.scheduler) {
      if (require("scheduler") != s.scheduler->type_name()) {
        throw Error("expected the state of an " + s.scheduler->type_name() + ", got an " + require("scheduler"));
      }
      sched = decode(require("scheduler.state"), "scheduler.state");
    }
    if (s.plateau) plateau = decode(require("plateau.state"), "plateau.state");
    if (s.scaler) scaler = decode(require("scaler.state"), "scaler.state");
    if (s.loader) loader = decode(require("loader.state"), "loader.state");
    // the components' loads must not fail half-way: their key sets, and the loader's identity
    if (s.scheduler) same_keys(s.scheduler->stateDict(), sched, "the schedule");
    if (s.plateau) same_keys(s.plateau->stateDict(), plateau, "ReduceLROnPlateau");
    if (s.scaler) same_keys(s.scaler->stateDict(), scaler, "the gradient scaler");
    if (s.loader) {
      const auto now = s.loader->stateDict();
      same_keys(now, loader, "the data loader");
      for (const char* key : {"seed", "world_size"}) {
        if (now.at(key) != loader.at(key)) {
          throw Error(std::string("expected the data loader's ") + key + " " +
                      std::to_string(static_cast<int64_t>(now.at(key))) + ", got " +
                      std::to_string(static_cast<int64_t>(loader.at(key))));
        }
      }
    }
  } catch (const Error& e) {
    throw Error(who + ": " + e.what());
  } catch (const std::exception& e) {
    throw Error(who + ": malformed checkpoint (" + e.what() + ")");
  }
  uint64_t seed = 0, offset = 0;
  {
    std::istringstream in(require("generator"));
    if (!(in >> seed >> offset))
      throw Error(who + ": expected the generator's seed and offset, got '" + require("generator") + "'");
  }
  int64_t epoch = 0, step = 0;
  try {
    epoch = std::stoll(require("epoch"));
    step = std::stoll(require("step"));
  } catch (const std::logic_error&) {
    throw Error(who + ": expected integer epoch and step, got '" + require("epoch") + "' and '" + require("step") +
                "'");
  }
  // ---- then the changes (the components' own loads check their values once more) ----
  try {
    s.model->loadStateDict(model, true);
    if (s.optimizer) {
      s.optimizer->loadStateDict(optim);
      for (size_t k = 0; k < s.optimizer->numGroups(); ++k)
        s.optimizer->setGroupLr(k, groups.at("lr." + std::to_string(k)));
    }
    if (s.scheduler) s.scheduler->loadStateDict(sched);
    if (s.plateau) s.plateau->loadStateDict(plateau);
    if (s.scaler) s.scaler->loadStateDict(scaler);
    if (s.loader) s.loader->loadStateDict(loader);
  } catch (const std::exception& e) {
    throw Error(who + ": " + e.what());
  }
  tensor::Generator& gen = tensor::default_generator();
  gen.manual_seed(seed);
  gen.reserve(offset);
  s.epoch = epoch;
  s.step = step;
}

}  // namespace nn

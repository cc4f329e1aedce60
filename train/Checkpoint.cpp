// Checkpoint.cpp: see Note [Checkpoint files] in Checkpoint.h.
#include "train/Checkpoint.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string_view>
#include <utility>

#include "tensor/Format.h"
#include "tensor/Generator.h"
#include "tensor/Json.h"
#include "tensor/Safetensors.h"

namespace nn {

namespace {

constexpr const char* kFormat = "cudnn-nn checkpoint";
constexpr const char* kVersion = "1";

// Number maps as JSON objects of strings: "%.17g" keeps every double exactly, Inf included
// (ReduceLROnPlateau's first best), which JSON numbers cannot hold.
std::string exact(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string encode(const std::map<std::string, double>& m) {
  tensor::Json::Object o;
  for (const auto& [k, v] : m) o.emplace_back(k, exact(v));
  return tensor::Json(o).dump();
}

// A metadata entry's number map; every number parsed whole (strtod must take the whole string).
std::map<std::string, double> decode(const std::string& text, const std::string& key) {
  const std::string what = "metadata '" + key + "'";
  std::map<std::string, double> out;
  const tensor::Json j = tensor::Json::parse(text, what);
  for (const auto& [k, v] : j.as_object(what)) {
    const std::string& s = v.as_string(what + " '" + k + "'");
    char* end = nullptr;
    const double d = std::strtod(s.c_str(), &end);
    if (s.empty() || std::isspace(static_cast<unsigned char>(s[0])) || *end != '\0') {
      throw Error(what + ": expected a number for '" + k + "', got '" + s + "'");
    }
    out[k] = d;
  }
  return out;
}

void same_keys(const std::map<std::string, double>& want, const std::map<std::string, double>& got,
               const std::string& key, const char* what) {
  auto names = [](const std::map<std::string, double>& m) {
    std::string out;
    for (const auto& [k, _] : m) out += (out.empty() ? "" : ", ") + k;
    return out;
  };
  bool same = want.size() == got.size();
  for (const auto& [k, _] : want) same = same && got.count(k);
  if (!same) {
    throw Error("metadata '" + key + "': expected " + what + " {" + names(want) + "}, got {" + names(got) + "}");
  }
}

// The values a component's setters and constructor accept (so that its load cannot fail half-way).
bool is_count(double v) { return v >= 0 && v < 9e18 && v == std::floor(v); }  // an int64_t >= 0
bool is_rate(double v) { return std::isfinite(v) && v >= 0; }                 // an lr
bool is_real(double v) { return !std::isnan(v); }
bool is_scale(double v) { return std::isfinite(v) && v > 0; }  // GradScaler's
bool is_growth(double v) { return std::isfinite(v) && v > 1; }
bool is_backoff(double v) { return v > 0 && v < 1; }
bool is_interval(double v) { return is_count(v) && v > 0; }

// `want` says what ok() accepts, with '%' standing for the value's name ("an integer % >= 0")
template <class Ok>
void expect(const std::map<std::string, double>& state, const std::string& key, const std::string& name, Ok ok,
            std::string want) {
  const double v = state.at(name);
  if (ok(v)) return;
  want.replace(want.find('%'), 1, "'" + name + "'");
  throw Error("metadata '" + key + "': expected " + want + ", got " + tensor::num_str(v));
}

// A non-negative decimal integer, the whole string (std::stoll would take "1e3" as 1).
template <class Int>
bool parse_whole(std::string_view s, Int& out) {
  if (s.empty() || !std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
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

Reader open_checkpoint(const std::string& path, const TrainingState& s) {
  Reader r;
  const std::string file = checkpoint_file(path);
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
  if (r.require("version") != kVersion) {
    throw Error(r.who + ": metadata 'version': expected checkpoint version " + kVersion + ", got '" +
                r.require("version") + "'");
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

// the optimizer's type, parameter count, groups and their lrs, and state (as loadStateDict checks
// it); throws without the prefix
void check_optimizer(const Reader& r, const Optimizer& o, Loaded& l) {
  if (r.require("optimizer") != o.type_name() || r.require("optimizer.params") != std::to_string(o.params().size())) {
    throw Error("expected the state of an " + o.type_name() + " over " + std::to_string(o.params().size()) +
                " parameters, got an " + r.require("optimizer") + " over " + r.require("optimizer.params"));
  }
  l.groups = decode(r.require("optimizer.groups"), "optimizer.groups");
  const auto n = l.groups.find("groups");
  if (n != l.groups.end() && n->second != static_cast<double>(o.numGroups())) {
    throw Error("metadata 'optimizer.groups': expected " + std::to_string(o.numGroups()) + " parameter groups, got " +
                tensor::num_str(n->second));
  }
  same_keys(optimizer_lrs(o), l.groups, "optimizer.groups", "the optimizer's group count and lrs");
  for (size_t k = 0; k < o.numGroups(); ++k) {
    expect(l.groups, "optimizer.groups", "lr." + std::to_string(k), is_rate, "a finite % >= 0");
  }
  try {
    o.checkStateDict(l.optim);
  } catch (const Error& e) {
    throw Error(std::string("tensors 'optimizer.*': ") + e.what());
  }
}

// the schedules' states: their keys and values as their loads take them
void check_schedules(const Reader& r, const TrainingState& s, Loaded& l) {
  if (s.scheduler) {
    if (r.require("scheduler") != s.scheduler->type_name()) {
      throw Error("expected the state of an " + s.scheduler->type_name() + ", got an " + r.require("scheduler"));
    }
    l.sched = decode(r.require("scheduler.state"), "scheduler.state");
    same_keys(s.scheduler->stateDict(), l.sched, "scheduler.state", "the schedule's state");
    for (const auto& [k, _] : l.sched) {
      if (k == "last_epoch") {
        expect(l.sched, "scheduler.state", k, is_count, "an integer % >= 0");
      } else {
        expect(l.sched, "scheduler.state", k, is_rate, "a finite % >= 0");
      }
    }
  }
  if (s.plateau) {
    l.plateau = decode(r.require("plateau.state"), "plateau.state");
    same_keys(s.plateau->stateDict(), l.plateau, "plateau.state", "ReduceLROnPlateau's state");
    for (const char* k : {"last_epoch", "num_bad_epochs", "cooldown_counter"}) {
      expect(l.plateau, "plateau.state", k, is_count, "an integer % >= 0");
    }
    expect(l.plateau, "plateau.state", "best", is_real, "a number %");
  }
}

// the scaler's and the loader's states: their keys, values, and the loader's identity
void check_scaler_and_loader(const Reader& r, const TrainingState& s, Loaded& l) {
  if (s.scaler) {
    l.scaler = decode(r.require("scaler.state"), "scaler.state");
    same_keys(s.scaler->stateDict(), l.scaler, "scaler.state", "the gradient scaler's state");
    const std::string key = "scaler.state";
    expect(l.scaler, key, "scale", is_scale, "a finite % > 0");
    expect(l.scaler, key, "growth_factor", is_growth, "a finite % > 1");
    expect(l.scaler, key, "backoff_factor", is_backoff, "% in (0, 1)");
    expect(l.scaler, key, "growth_interval", is_interval, "an integer % > 0");
    for (const char* k : {"growth_tracker", "skipped_steps"}) expect(l.scaler, key, k, is_count, "an integer % >= 0");
  }
  if (s.loader) {
    l.loader = decode(r.require("loader.state"), "loader.state");
    const auto now = s.loader->stateDict();
    same_keys(now, l.loader, "loader.state", "the data loader's state");
    for (const char* key : {"seed", "world_size"}) {
      if (now.at(key) != l.loader.at(key)) {
        throw Error(std::string("metadata 'loader.state': expected the data loader's ") + key + " " +
                    exact(now.at(key)) + ", got " + exact(l.loader.at(key)));
      }
    }
    for (const char* k : {"epoch", "position"}) expect(l.loader, "loader.state", k, is_count, "an integer % >= 0");
  }
}

// the components' states, decoded and checked so that their loads cannot fail half-way
void decode_states(const Reader& r, const TrainingState& s, Loaded& l) {
  try {
    if (s.optimizer) check_optimizer(r, *s.optimizer, l);
    check_schedules(r, s, l);
    check_scaler_and_loader(r, s, l);
  } catch (const Error& e) {
    const std::string what = e.what();  // Reader::require's errors name the file already
    throw Error(what.starts_with(r.who) ? what : r.who + ": " + what);
  } catch (const std::exception& e) {
    throw Error(r.who + ": malformed checkpoint (" + e.what() + ")");
  }
}

// the generator's seed and offset, the epoch and the step: integers >= 0, each string whole
void read_counters(const Reader& r, Loaded& l) {
  const std::string& gen = r.require("generator");
  const size_t space = gen.find(' ');
  if (space == std::string::npos || !parse_whole(std::string_view(gen).substr(0, space), l.seed) ||
      !parse_whole(std::string_view(gen).substr(space + 1), l.offset)) {
    throw Error(r.who + ": metadata 'generator': expected the generator's seed and offset, got '" + gen + "'");
  }
  for (const auto& [key, out] : {std::pair{"epoch", &l.epoch}, std::pair{"step", &l.step}}) {
    if (!parse_whole(r.require(key), *out)) {
      throw Error(r.who + ": metadata '" + key + "': expected an integer >= 0, got '" + r.require(key) + "'");
    }
  }
}

// The loads, in an order that cannot fail half-way: everything was checked but the schedule's
// closed form at the saved epoch (OneCycleLR past its total), which is the schedule's to check;
// so it loads first, and its load changes nothing when it throws.
void restore(const Reader& r, TrainingState& s, const Loaded& l) {
  try {
    if (s.scheduler) s.scheduler->loadStateDict(l.sched);
  } catch (const std::exception& e) {
    throw Error(r.who + ": metadata 'scheduler.state': " + e.what());
  }
  try {
    if (s.optimizer) {
      s.optimizer->loadStateDict(l.optim);
      // the file's lrs, but for the groups the schedule has just set (its lrs win, as they did when
      // it loaded last)
      size_t scheduled = 0;
      for (const auto& [k, _] : l.sched) scheduled += k.starts_with("base_lr.");
      for (size_t k = scheduled; k < s.optimizer->numGroups(); ++k)
        s.optimizer->setGroupLr(k, l.groups.at("lr." + std::to_string(k)));
    }
    s.model->loadStateDict(l.model, true);
    if (s.plateau) s.plateau->loadStateDict(l.plateau);
    if (s.scaler) s.scaler->loadStateDict(l.scaler);
    if (s.loader) s.loader->loadStateDict(l.loader);
  } catch (const std::exception& e) {  // out of memory: the checks above leave nothing else
    throw Error(r.who + ": " + e.what());
  }
  tensor::Generator& gen = tensor::default_generator();
  gen.manual_seed(l.seed);
  gen.reserve(l.offset);
  s.epoch = l.epoch;
  s.step = l.step;
}

}  // namespace

std::string checkpoint_file(const std::string& path) {
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (std::filesystem::is_directory(st)) return path + "/checkpoint.safetensors";
  if (std::filesystem::exists(st) || path.ends_with(".safetensors")) return path;
  return path + "/checkpoint.safetensors";
}

void save_checkpoint(const std::string& path, const TrainingState& s) {
  if (!s.model) throw Error("nn::save_checkpoint: expected a model in the training state, got none");
  const std::string file = checkpoint_file(path);
  const std::filesystem::path dir = std::filesystem::path(file).parent_path();
  std::error_code ec;
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  if (ec) throw Error("nn::save_checkpoint: cannot create the directory " + dir.string() + ": " + ec.message());
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
  tensor::save_safetensors(file, tensors, meta);
}

void load_checkpoint(const std::string& path, TrainingState& s) {
  const Reader r = open_checkpoint(path, s);
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
  // ---- then the changes ----
  restore(r, s, l);
}

}  // namespace nn

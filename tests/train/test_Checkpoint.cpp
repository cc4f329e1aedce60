// test_Checkpoint.cpp: a run stopped mid-epoch, saved (train/Checkpoint.h) and resumed into
// freshly built objects gives the same bits as a run that never stopped: parameters, batch-norm
// statistics and counter, optimizer moments, schedule, loss scale, dropout's random numbers and
// the loader's order. And bad input: another network, a truncated file, another world size, a
// missing component, a file altered in one place (an optimizer state's shape, a group's lr, a
// schedule's, scaler's or loader's number, the epoch, ...), each an error naming the file and
// the entry, with the objects left exactly as they were. A checkpoint is named by its directory
// or its file.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>

#include "nn/AdamW.h"
#include "nn/BatchNormalization.h"
#include "nn/CrossEntropyCriterion.h"
#include "nn/Dropout.h"
#include "nn/Linear.h"
#include "nn/ReLU.h"
#include "nn/SGD.h"
#include "nn/Sequential.h"
#include "tensor/FileIO.h"
#include "tensor/Json.h"
#include "tensor/Safetensors.h"
#include "tests/support/GradCheck.h"
#include "train/Checkpoint.h"

using namespace tensor;

namespace {

std::shared_ptr<nn::TensorDataset> data() {
  Generator gen(31);
  const Tensor x = normal({40, 6}, 0, 1, gen);
  Tensor y = empty({40}, DType::Int64);
  for (int64_t i = 0; i < 40; ++i) y.set({i}, x.get({i, 0}) > 0 ? 1.0 : 0.0);
  return std::make_shared<nn::TensorDataset>(std::vector<Tensor>{x, y});
}

struct Run {
  std::shared_ptr<nn::Sequential> net = std::make_shared<nn::Sequential>();
  nn::CrossEntropyCriterion crit;
  std::unique_ptr<nn::AdamW> opt;
  std::unique_ptr<nn::WarmupCosineLR> sched;
  nn::GradScaler scaler{{.initScale = 256, .growthInterval = 3}};
  std::unique_ptr<nn::DataLoader> loader;
  nn::TrainingState state;

  explicit Run(uint64_t initSeed, int hidden = 8) {
    manual_seed(initSeed);
    net->add(std::make_shared<nn::Linear>(6, hidden));
    net->add(std::make_shared<nn::BatchNormalization>(hidden));
    net->add(std::make_shared<nn::ReLU>());
    net->add(std::make_shared<nn::Dropout>(0.3));
    net->add(std::make_shared<nn::Linear>(hidden, 2));
    opt = std::make_unique<nn::AdamW>(nn::decayGroups(*net), nn::AdamW::Options{.lr = 0.01});
    sched = std::make_unique<nn::WarmupCosineLR>(*opt, 3, 20);
    loader =
        std::make_unique<nn::DataLoader>(data(), nn::DataLoader::Options{.batchSize = 8, .shuffle = true, .seed = 5});
    manual_seed(77);  // the training's random numbers (dropout) start here in both runs
    state = {net.get(), opt.get(), sched.get(), nullptr, &scaler, loader.get(), 0, 0, 1};
  }

  // Trains until `stop` steps in all, or the end of epoch 2.
  void train(int64_t stop) {
    std::vector<Tensor> b;
    while (state.epoch < 2) {
      while (state.step < stop && loader->next(b)) {
        net->zeroGradParameters();
        crit.forward(net->forward(b[0]), b[1]);
        net->backward(b[0], scaler.scaleGrad(crit.backward(net->output, b[1])));
        scaler.step(*opt);
        scaler.update();
        sched->step();
        ++state.step;
      }
      if (state.step >= stop) return;
      loader->setEpoch(++state.epoch);
    }
  }
};

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.sizes() != b.sizes()) return false;
  const Tensor x = a.contiguous(), y = b.contiguous();
  return std::memcmp(x.raw_data(), y.raw_data(), x.nbytes()) == 0;
}

const std::string kDir = "/tmp/cudnn_nn_test_checkpoint";

// Everything a load may change, to compare before and after a failed one.
struct Snapshot {
  std::map<std::string, Tensor> model, optim;
  std::vector<double> lrs;
  std::map<std::string, double> sched, plateau, scaler, loader;
  uint64_t seed = 0, offset = 0;
  int64_t epoch = 0, step = 0;

  explicit Snapshot(const nn::TrainingState& s) : epoch(s.epoch), step(s.step) {
    for (const auto& [k, t] : s.model->stateDict()) model[k] = t.clone();
    if (s.optimizer) {
      for (const auto& [k, t] : s.optimizer->stateDict()) optim[k] = t.clone();
      for (size_t k = 0; k < s.optimizer->numGroups(); ++k) lrs.push_back(s.optimizer->groupLr(k));
    }
    if (s.scheduler) sched = s.scheduler->stateDict();
    if (s.plateau) plateau = s.plateau->stateDict();
    if (s.scaler) scaler = s.scaler->stateDict();
    if (s.loader) loader = s.loader->stateDict();
    seed = default_generator().seed();
    offset = default_generator().offset();
  }
};

void check_unchanged(const Snapshot& before, const nn::TrainingState& s) {
  const Snapshot now(s);
  auto same = [](const std::map<std::string, Tensor>& a, const std::map<std::string, Tensor>& b) {
    bool ok = a.size() == b.size();
    for (const auto& [k, t] : a) ok = ok && b.count(k) && same_bits(t, b.at(k));
    return ok;
  };
  CHECK(same(before.model, now.model));
  CHECK(same(before.optim, now.optim));
  CHECK(before.lrs == now.lrs);
  CHECK(before.sched == now.sched);
  CHECK(before.plateau == now.plateau);
  CHECK(before.scaler == now.scaler);
  CHECK(before.loader == now.loader);
  CHECK(before.seed == now.seed);
  CHECK(before.offset == now.offset);
  CHECK(before.epoch == now.epoch);
  CHECK(before.step == now.step);
}

// A copy of the checkpoint in `from` with `edit` applied, in kDir/<name>; returns that directory.
std::string altered(const std::string& from, const std::string& name,
                    const std::function<void(SafetensorsFile&)>& edit) {
  SafetensorsFile f = load_safetensors(nn::checkpoint_file(from));
  edit(f);
  const std::string dir = kDir + "/" + name;
  std::filesystem::create_directories(dir);
  save_safetensors(nn::checkpoint_file(dir), f.tensors, f.metadata);
  return dir;
}

// An edit setting `key` of the number map in metadata `entry` to `value` (removing it: nullopt).
std::function<void(SafetensorsFile&)> set_number(const std::string& entry, const std::string& key,
                                                 std::optional<std::string> value) {
  return [=](SafetensorsFile& f) {
    const Json j = Json::parse(f.metadata.at(entry));
    Json::Object o;
    for (const auto& [k, v] : j.as_object()) {
      if (k != key) o.emplace_back(k, v);
    }
    if (value) o.emplace_back(key, Json(*value));
    f.metadata[entry] = Json(o).dump();
  };
}

std::function<void(SafetensorsFile&)> set_meta(const std::string& key, const std::string& value) {
  return [=](SafetensorsFile& f) { f.metadata[key] = value; };
}

std::function<void(SafetensorsFile&)> set_tensor(const std::string& key, const Tensor& value) {
  return [=](SafetensorsFile& f) { f.tensors[key] = value; };
}

}  // namespace

TEST_CASE("a run resumed mid-epoch from a checkpoint gives the uninterrupted run's bits") {
  std::filesystem::remove_all(kDir);
  Run whole(1);
  whole.train(1000);
  CHECK(whole.state.step == 10);  // 2 epochs of 5 batches

  Run first(1);
  first.train(7);  // epoch 1, batch 2
  CHECK(first.loader->position() == 2);
  nn::save_checkpoint(kDir, first.state);
  Run resumed(99);  // other initial weights: everything must come from the file
  nn::load_checkpoint(kDir, resumed.state);
  CHECK(resumed.state.epoch == 1);
  CHECK(resumed.state.step == 7);
  resumed.train(1000);

  const auto want = whole.net->stateDict(), got = resumed.net->stateDict();
  REQUIRE(want.size() == got.size());
  CHECK(want.count("1.num_batches_tracked"));
  for (const auto& [k, t] : want) {
    INFO(k);
    CHECK(same_bits(t, got.at(k)));
  }
  const auto wo = whole.opt->stateDict(), go = resumed.opt->stateDict();
  for (const auto& [k, t] : wo) {
    INFO(k);
    CHECK(same_bits(t, go.at(k)));
  }
  CHECK(whole.opt->groupLr(0) == resumed.opt->groupLr(0));
  CHECK(whole.scaler.scale() == resumed.scaler.scale());
  CHECK(whole.scaler.scale() > 256);  // it grew: the scaler's state travelled
  CHECK(default_generator().offset() > 0);
}

TEST_CASE("bad checkpoints: another network, truncated, another world size, missing parts; nothing changed") {
  std::filesystem::remove_all(kDir);
  Run a(1);
  a.train(3);
  nn::save_checkpoint(kDir, a.state);
  const std::string file = nn::checkpoint_file(kDir);

  Run wide(2, 16);
  const Tensor before = wide.net->stateDict().at("0.weight").clone();
  CHECK_THROWS_WITH_AS(
      nn::load_checkpoint(kDir, wide.state),
      doctest::Contains((file + ": a checkpoint of another network (saved from nn.Sequential)").c_str()), Error);
  CHECK(same_bits(wide.net->stateDict().at("0.weight"), before));

  Run other(3);
  other.state.worldSize = 2;
  CHECK_THROWS_WITH_AS(
      nn::load_checkpoint(kDir, other.state),
      doctest::Contains((file + ": expected a checkpoint of world size 2, got one of world size 1").c_str()), Error);
  other.state.worldSize = 1;
  other.state.scheduler = nullptr;
  CHECK_THROWS_WITH_AS(
      nn::load_checkpoint(kDir, other.state),
      doctest::Contains("holds learning-rate schedule state, but the training state has no learning-rate schedule"),
      Error);
  other.state.scheduler = other.sched.get();
  CHECK(other.state.step == 0);

  // truncated: an error naming the file; the good checkpoint beside it still loads
  const std::vector<uint8_t> bytes = read_file(file, "test");
  const std::string cut = kDir + "/cut";
  std::filesystem::create_directories(cut);
  {
    std::ofstream out(nn::checkpoint_file(cut), std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size() / 2));
  }
  CHECK_THROWS_WITH_AS(nn::load_checkpoint(cut, other.state), doctest::Contains(nn::checkpoint_file(cut).c_str()),
                       Error);
  CHECK_THROWS_WITH_AS(nn::load_checkpoint(kDir + "/none", other.state), doctest::Contains((kDir + "/none").c_str()),
                       Error);
  nn::load_checkpoint(kDir, other.state);
  CHECK(other.state.step == 3);
  std::filesystem::remove_all(kDir);
}

TEST_CASE("a checkpoint altered in one place: an error naming the file and the entry, and nothing changed") {
  std::filesystem::remove_all(kDir);
  Run a(1);
  a.train(7);
  const std::string good = kDir + "/good";
  nn::save_checkpoint(good, a.state);

  struct Case {
    std::string name;
    std::function<void(SafetensorsFile&)> edit;
    std::string error;
  };
  const std::vector<Case> cases{
      // the optimizer: its state's shapes and dtypes, its groups' lrs
      {"step_shape", set_tensor("optimizer.0.step", zeros({2})),
       "tensors 'optimizer.*': nn.AdamW::checkStateDict: expected a one-element '0.step', got float32 [2] on cpu"},
      {"step_value", set_tensor("optimizer.0.step", full({}, 2.5)),
       "tensors 'optimizer.*': nn.AdamW::checkStateDict: expected an integer '0.step' >= 0, got 2.5"},
      {"moment_dtype", set_tensor("optimizer.0.exp_avg", zeros({8, 6}, DType::Int64)),
       "tensors 'optimizer.*': nn.AdamW::checkStateDict: expected a floating '0.exp_avg', got int64 [8 x 6] on cpu"},
      {"moment_shape", set_tensor("optimizer.1.exp_avg", zeros({3})),
       "tensors 'optimizer.*': nn.AdamW::checkStateDict: '1.exp_avg' has shape [3], expected [2 x 8]"},
      {"lr_missing", set_number("optimizer.groups", "lr.0", std::nullopt),
       "metadata 'optimizer.groups': expected the optimizer's group count and lrs {groups, lr.0, lr.1}, got "
       "{groups, lr.1}"},
      {"lr_negative", set_number("optimizer.groups", "lr.1", "-1"),
       "metadata 'optimizer.groups': expected a finite 'lr.1' >= 0, got -1"},
      {"lr_nan", set_number("optimizer.groups", "lr.0", "nan"),
       "metadata 'optimizer.groups': expected a finite 'lr.0' >= 0, got nan"},
      {"lr_text", set_number("optimizer.groups", "lr.0", "0.01x"),
       "metadata 'optimizer.groups': expected a number for 'lr.0', got '0.01x'"},
      {"groups", set_number("optimizer.groups", "groups", "3"),
       "metadata 'optimizer.groups': expected 2 parameter groups, got 3"},
      // the schedule
      {"sched_epoch", set_number("scheduler.state", "last_epoch", "2.5"),
       "metadata 'scheduler.state': expected an integer 'last_epoch' >= 0, got 2.5"},
      {"sched_base", set_number("scheduler.state", "base_lr.0", "-0.5"),
       "metadata 'scheduler.state': expected a finite 'base_lr.0' >= 0, got -0.5"},
      // the scaler
      {"scale", set_number("scaler.state", "scale", "0"),
       "metadata 'scaler.state': expected a finite 'scale' > 0, got 0"},
      {"interval", set_number("scaler.state", "growth_interval", "0"),
       "metadata 'scaler.state': expected an integer 'growth_interval' > 0, got 0"},
      {"backoff", set_number("scaler.state", "backoff_factor", "1"),
       "metadata 'scaler.state': expected 'backoff_factor' in (0, 1), got 1"},
      {"tracker", set_number("scaler.state", "growth_tracker", "-1"),
       "metadata 'scaler.state': expected an integer 'growth_tracker' >= 0, got -1"},
      // the loader
      {"position", set_number("loader.state", "position", "-1"),
       "metadata 'loader.state': expected an integer 'position' >= 0, got -1"},
      {"loader_epoch", set_number("loader.state", "epoch", "0.5"),
       "metadata 'loader.state': expected an integer 'epoch' >= 0, got 0.5"},
      {"loader_seed", set_number("loader.state", "seed", "6"),
       "metadata 'loader.state': expected the data loader's seed 5, got 6"},
      // the counters and the format
      {"epoch", set_meta("epoch", "1e3"), "metadata 'epoch': expected an integer >= 0, got '1e3'"},
      {"step", set_meta("step", "-7"), "metadata 'step': expected an integer >= 0, got '-7'"},
      {"step_space", set_meta("step", " 7"), "metadata 'step': expected an integer >= 0, got ' 7'"},
      {"generator", set_meta("generator", "77"), "metadata 'generator': expected the generator's seed and offset"},
      {"generator_sign", set_meta("generator", "77 -1"),
       "metadata 'generator': expected the generator's seed and offset, got '77 -1'"},
      {"version", set_meta("version", "2"), "metadata 'version': expected checkpoint version 1, got '2'"},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    Run target(5);
    target.train(2);  // state of its own everywhere: moments, step counters, scale, loader position
    const Snapshot before(target.state);
    REQUIRE(before.optim.count("0.step"));
    const std::string dir = altered(good, c.name, c.edit);
    CHECK_THROWS_WITH_AS(nn::load_checkpoint(dir, target.state),
                         doctest::Contains((nn::checkpoint_file(dir) + ": " + c.error).c_str()), Error);
    check_unchanged(before, target.state);
    nn::load_checkpoint(good, target.state);  // the good file still loads
    CHECK(target.state.step == 7);
  }
  std::filesystem::remove_all(kDir);
}

TEST_CASE("a schedule's own check (OneCycleLR past its total) and ReduceLROnPlateau's numbers change nothing") {
  std::filesystem::remove_all(kDir);
  struct Small {
    nn::Linear net{2, 1};
    nn::SGD opt{net, nn::SGD::Options{.lr = 0.1, .momentum = 0.9}};
    nn::OneCycleLR sched{opt, 1.0, 4};
    nn::ReduceLROnPlateau plateau{opt};
    nn::TrainingState state{&net, &opt, &sched, &plateau, nullptr, nullptr, 0, 0, 1};

    void train(int steps) {
      for (int i = 0; i < steps; ++i) {
        net.zeroGradParameters();
        const Tensor x = full({3, 2}, 1.0 + i);
        net.forward(x);
        net.backward(x, full({3, 1}, 1.0));
        opt.step();
        sched.step();
        plateau.step(1.0 / (i + 1));
        ++state.step;
      }
    }
  };
  Small a;
  a.train(2);
  const std::string good = kDir + "/good";
  nn::save_checkpoint(good, a.state);
  auto refused = [&](const std::string& name, const std::function<void(SafetensorsFile&)>& edit,
                     const std::string& error) {
    INFO(name);
    Small target;
    target.train(1);
    const Snapshot before(target.state);
    REQUIRE(before.optim.count("0.momentum_buffer"));
    const std::string dir = altered(good, name, edit);
    CHECK_THROWS_WITH_AS(nn::load_checkpoint(dir, target.state),
                         doctest::Contains((nn::checkpoint_file(dir) + ": " + error).c_str()), Error);
    check_unchanged(before, target.state);
  };
  refused("past", set_number("scheduler.state", "last_epoch", "9"),
          "metadata 'scheduler.state': nn.OneCycleLR::step: expected at most totalSteps = 4 steps, got step 9");
  refused("bad", set_number("plateau.state", "num_bad_epochs", "1.5"),
          "metadata 'plateau.state': expected an integer 'num_bad_epochs' >= 0, got 1.5");
  refused("cooldown", set_number("plateau.state", "cooldown_counter", "-2"),
          "metadata 'plateau.state': expected an integer 'cooldown_counter' >= 0, got -2");
  refused("nan", set_number("plateau.state", "best", "nan"),
          "metadata 'plateau.state': expected a number 'best', got nan");
  Small target;
  target.train(1);
  nn::load_checkpoint(good, target.state);
  CHECK(target.sched.lastEpoch() == 2);
  CHECK(target.opt.groupLr(0) == a.opt.groupLr(0));
  std::filesystem::remove_all(kDir);
}

TEST_CASE("a checkpoint is named by its directory or by its file, saving and loading") {
  std::filesystem::remove_all(kDir);
  Run a(1);
  a.train(3);
  CHECK(nn::checkpoint_file(kDir) == kDir + "/checkpoint.safetensors");  // a new directory
  nn::save_checkpoint(kDir, a.state);
  const std::string file = kDir + "/checkpoint.safetensors";
  CHECK(std::filesystem::is_regular_file(file));
  CHECK(nn::checkpoint_file(kDir) == file);
  CHECK(nn::checkpoint_file(file) == file);

  Run b(2);
  nn::load_checkpoint(file, b.state);  // as torch.load takes a file
  CHECK(b.state.step == 3);

  // a file name ending in .safetensors: saved there (its directories made), loaded from there
  a.train(5);
  const std::string named = kDir + "/runs/step5.safetensors";
  CHECK(nn::checkpoint_file(named) == named);
  nn::save_checkpoint(named, a.state);
  CHECK(std::filesystem::is_regular_file(named));
  Run c(3);
  nn::load_checkpoint(named, c.state);
  CHECK(c.state.step == 5);
  CHECK(same_bits(c.net->stateDict().at("0.weight"), a.net->stateDict().at("0.weight")));
  // a missing one: the error names the file looked for
  CHECK_THROWS_WITH_AS(nn::load_checkpoint(kDir + "/gone.safetensors", c.state),
                       doctest::Contains((kDir + "/gone.safetensors").c_str()), Error);
  CHECK(c.state.step == 5);
  std::filesystem::remove_all(kDir);
}

// test_Checkpoint.cpp: a run stopped mid-epoch, saved (train/Checkpoint.h) and resumed into
// freshly built objects gives the same bits as a run that never stopped: parameters, batch-norm
// statistics and counter, optimizer moments, schedule, loss scale, dropout's random numbers and
// the loader's order. And bad input: another network, a truncated file, another world size, a
// missing component, each an error naming the file, with the objects left as they were.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "nn/AdamW.h"
#include "nn/BatchNormalization.h"
#include "nn/CrossEntropyCriterion.h"
#include "nn/Dropout.h"
#include "nn/Linear.h"
#include "nn/ReLU.h"
#include "nn/Sequential.h"
#include "tensor/FileIO.h"
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

// test_TrainingReference.cpp: the training machinery against numbers PyTorch computed
// (scripts/make_training_reference.py -> tests/data/train/training_reference.json): the five
// learning-rate schedules, AdamW, Adam with L2 decay and Nesterov SGD step by step, clipping
// by norm (2, inf) and by value, and GradScaler's scale, skips and parameters over overflows.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "nn/Adam.h"
#include "nn/AdamW.h"
#include "nn/ClipGrad.h"
#include "nn/GradScaler.h"
#include "nn/LRScheduler.h"
#include "nn/SGD.h"
#include "tensor/FileIO.h"
#include "tensor/Json.h"
#include "tests/support/GradCheck.h"

using namespace tensor;

namespace {
const Json& reference() {
  static const Json doc = [] {
    const std::string path = std::string(CUDNN_NN_TEST_DATA) + "/train/training_reference.json";
    const std::vector<uint8_t> bytes = read_file(path, "test_TrainingReference");
    return Json::parse(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), path);
  }();
  return doc;
}

std::vector<double> numbers(const Json& j) {
  std::vector<double> out;
  for (const Json& v : j.as_array()) out.push_back(v.as_number());
  return out;
}

Tensor tensor_of(const Json& j, DType dtype = DType::Float64) {
  const std::vector<double> v = numbers(j);
  return from_vector(v).to(dtype);
}

void check_close(const Tensor& got, const std::vector<double>& want, double tol) {
  const std::vector<double> g = got.contiguous().to_vector<double>();
  REQUIRE(g.size() == want.size());
  for (size_t i = 0; i < g.size(); ++i) {
    INFO("element ", i);
    CHECK(g[i] == doctest::Approx(want[i]).epsilon(tol).scale(0));
  }
}

// Two parameter groups, bases 1 and 0.1, as the script's.
struct Groups {
  Tensor a = zeros({2}), ga = zeros({2}), b = zeros({3}), gb = zeros({3});
  nn::SGD opt{std::vector<nn::ParamGroup>{{{a}, {ga}, std::nullopt, std::nullopt}, {{b}, {gb}, 0.1, std::nullopt}},
              nn::SGD::Options{.lr = 1}};
};

void check_lrs(const nn::Optimizer& opt, const Json& want, size_t epoch) {
  const std::vector<double> w = numbers(want.as_array().at(epoch));
  INFO("epoch ", epoch);
  CHECK(opt.groupLr(0) == doctest::Approx(w[0]).epsilon(1e-12));
  CHECK(opt.groupLr(1) == doctest::Approx(w[1]).epsilon(1e-12));
}

template <class Make>
void check_schedule(const char* name, Make&& make) {
  INFO(name);
  const Json& want = reference().at("schedules").at(name);
  Groups g;
  auto s = make(g.opt);
  for (size_t e = 0; e < want.as_array().size(); ++e) {
    if (e > 0) s->step();
    check_lrs(g.opt, want, e);
  }
}
}  // namespace

TEST_CASE("learning-rate schedules give torch.optim.lr_scheduler's rates") {
  check_schedule("step", [](nn::Optimizer& o) { return std::make_unique<nn::StepLR>(o, 2, 0.5); });
  check_schedule("multistep", [](nn::Optimizer& o) {
    return std::make_unique<nn::MultiStepLR>(o, std::vector<int64_t>{2, 5}, 0.1);
  });
  check_schedule("warmup_cosine",
                 [](nn::Optimizer& o) { return std::make_unique<nn::WarmupCosineLR>(o, 2, 6, 0.0, 0.5); });
  check_schedule("onecycle_cos", [](nn::Optimizer& o) { return std::make_unique<nn::OneCycleLR>(o, 1.0, 10); });
  check_schedule("onecycle_linear3", [](nn::Optimizer& o) {
    return std::make_unique<nn::OneCycleLR>(o, 1.0, 10, nn::OneCycleLR::Options{.cosine = false, .threePhase = true});
  });
  const Json& plateau = reference().at("schedules").at("plateau");
  Groups g;
  nn::ReduceLROnPlateau s(g.opt, {.factor = 0.5, .patience = 2, .cooldown = 1, .minLr = 0.3});
  const std::vector<double> metrics = numbers(plateau.at("metrics"));
  for (size_t e = 0; e < metrics.size(); ++e) {
    s.step(metrics[e]);
    check_lrs(g.opt, plateau.at("lrs"), e);
  }
}

TEST_CASE("AdamW, Adam with L2 decay and Nesterov SGD follow torch.optim step by step") {
  for (const char* name : {"adamw", "adam_l2", "sgd_nesterov"}) {
    INFO(name);
    const Json& r = reference().at("optimizers").at(name);
    const Json& o = r.at("options");
    Tensor p = tensor_of(r.at("params0")), g = zeros_like(p);
    std::unique_ptr<nn::Optimizer> opt;
    const std::string n = name;
    const double lr = o.at("lr").as_number(), wd = o.at("weight_decay").as_number();
    if (n == "adamw")
      opt = std::make_unique<nn::AdamW>(std::vector<Tensor>{p}, std::vector<Tensor>{g},
                                        nn::AdamW::Options{.lr = lr, .weightDecay = wd});
    if (n == "adam_l2")
      opt = std::make_unique<nn::Adam>(std::vector<Tensor>{p}, std::vector<Tensor>{g},
                                       nn::Adam::Options{.lr = lr, .weightDecay = wd});
    if (n == "sgd_nesterov") {
      opt = std::make_unique<nn::SGD>(
          std::vector<Tensor>{p}, std::vector<Tensor>{g},
          nn::SGD::Options{.lr = lr, .momentum = o.at("momentum").as_number(), .weightDecay = wd, .nesterov = true});
    }
    const auto& grads = r.at("grads").as_array();
    for (size_t k = 0; k < grads.size(); ++k) {
      INFO("step ", k + 1);
      g.copy_(tensor_of(grads[k]));
      opt->step();
      check_close(p, numbers(r.at("params").as_array().at(k)), 1e-12);
    }
  }
}

TEST_CASE("clipGradNorm and clipGradValue give torch.nn.utils' norms and gradients") {
  for (const char* name : {"norm2_above", "norm2_below", "inf_above"}) {
    INFO(name);
    const Json& c = reference().at("clip").at(name);
    std::vector<Tensor> grads;
    for (const Json& g : c.at("grads").as_array()) grads.push_back(tensor_of(g));
    const double normType =
        c.at("norm_type").is_string() ? std::numeric_limits<double>::infinity() : c.at("norm_type").as_number();
    const Tensor total = nn::clipGradNorm(grads, c.at("max_norm").as_number(), normType);
    CHECK(total.item() == doctest::Approx(c.at("total_norm").as_number()).epsilon(1e-12));
    for (size_t i = 0; i < grads.size(); ++i) check_close(grads[i], numbers(c.at("clipped").as_array().at(i)), 1e-12);
  }
  const Json& v = reference().at("clip").at("value");
  std::vector<Tensor> grads{tensor_of(v.at("grads").as_array().at(0))};
  nn::clipGradValue(grads, v.at("clip_value").as_number());
  check_close(grads[0], numbers(v.at("clipped").as_array().at(0)), 1e-15);
}

TEST_CASE("GradScaler: torch.amp.GradScaler's scales, skipped steps and parameters over overflows") {
  const Json& r = reference().at("grad_scaler");
  Tensor p = tensor_of(r.at("params0"), DType::Float32), g = zeros_like(p);
  nn::SGD opt(std::vector<Tensor>{p}, std::vector<Tensor>{g}, nn::SGD::Options{.lr = r.at("lr").as_number()});
  nn::GradScaler scaler(
      {.initScale = r.at("init_scale").as_number(), .growthInterval = r.at("growth_interval").as_int()});
  std::vector<int64_t> overflow;
  for (const Json& k : r.at("overflow").as_array()) overflow.push_back(k.as_int());
  const auto& unscaled = r.at("unscaled").as_array();
  int64_t skipped = 0;
  for (size_t k = 0; k < unscaled.size(); ++k) {
    INFO("step ", k);
    g.copy_(tensor_of(unscaled[k], DType::Float32).mul(scaler.scale()));
    if (std::find(overflow.begin(), overflow.end(), static_cast<int64_t>(k)) != overflow.end()) {
      g.set({1}, std::numeric_limits<double>::infinity());
    }
    const bool stepped = scaler.step(opt);
    scaler.update();
    CHECK(stepped == r.at("stepped").as_array().at(k).as_bool());
    skipped += stepped ? 0 : 1;
    CHECK(scaler.scale() == r.at("scales").as_array().at(k).as_number());
    check_close(p, numbers(r.at("params").as_array().at(k)), 1e-6);
  }
  CHECK(scaler.skippedSteps() == skipped);
}

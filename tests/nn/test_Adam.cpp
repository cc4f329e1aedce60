// test_Adam.cpp
#include <doctest/doctest.h>

#include <cmath>

#include "nn/Adam.h"
#include "nn/AdamW.h"
#include "nn/Linear.h"
#include "tensor/AdamScalars.h"
#include "tests/support/GradCheck.h"

using namespace tensor;

TEST_CASE("Adam steps match hand-computed updates (one parameter, two steps)") {
  Tensor p = full({1}, 1.0, DType::Float64), g = zeros({1}, DType::Float64);
  nn::Adam opt({p}, {g}, 0.1);
  g.fill_(0.5);
  opt.step();
  // t = 1: m = 0.05, v = 0.00025; m^ = 0.5, v^ = 0.25 -> p = 1 - 0.1 * 0.5 / (0.5 + 1e-8)
  const double p1 = 1 - 0.1 * 0.5 / (0.5 + 1e-8);
  CHECK(p.item() == doctest::Approx(p1).epsilon(1e-15));
  g.fill_(-1);
  opt.step();
  // t = 2: m = 0.045 - 0.1 = -0.055, v = 0.00024975 + 0.001 = 0.00124975
  const double m2 = 0.9 * 0.05 + 0.1 * -1, v2 = 0.999 * 0.00025 + 0.001 * 1;
  const double mhat = m2 / (1 - 0.81), vhat = v2 / (1 - 0.999 * 0.999);
  const double p2 = p1 - 0.1 * mhat / (std::sqrt(vhat) + 1e-8);
  CHECK(p.item() == doctest::Approx(p2).epsilon(1e-14));
  CHECK(opt.state(0).at("step").item() == 2);
  CHECK(opt.state(0).at("exp_avg").item() == doctest::Approx(-0.055).epsilon(1e-15));
  CHECK(opt.state(0).at("exp_avg_sq").item() == doctest::Approx(0.00124975).epsilon(1e-14));
}

TEST_CASE("Adam with weight decay and in float32") {
  for (DType dt : {DType::Float64, DType::Float32}) {
    Tensor p = full({1}, 2.0, dt), g = zeros({1}, dt);
    nn::Adam opt({p}, {g}, {.lr = 0.01, .beta1 = 0.5, .beta2 = 0.75, .eps = 1e-3, .weightDecay = 0.5});
    g.fill_(1);
    opt.step();
    // g' = 1 + 0.5 * 2 = 2; m^ = 2, v^ = 4 -> p = 2 - 0.01 * 2 / (2 + 1e-3)
    const double p1 = 2 - 0.01 * 2 / (2 + 1e-3);
    CHECK(p.item() == doctest::Approx(p1).epsilon(dt == DType::Float64 ? 1e-15 : 1e-6));
    g.fill_(0);
    opt.step();
    // g' = 0.5 p1; m = 0.5 * 1 + 0.5 g', v = 0.75 * 1 + 0.25 g'^2 (first moments were 0.5 * 2, 0.25 * 4)
    const double gd = 0.5 * p1, m = 0.5 * 1 + 0.5 * gd, v = 0.75 * 1 + 0.25 * gd * gd;
    const double p2 = p1 - 0.01 * (m / 0.75) / (std::sqrt(v / (1 - 0.5625)) + 1e-3);
    CHECK(p.item() == doctest::Approx(p2).epsilon(dt == DType::Float64 ? 1e-14 : 1e-6));
  }
}

TEST_CASE("Adam on a module, stateDict round trip and errors") {
  manual_seed(2);
  nn::Linear m(2, 2);
  nn::Adam opt(m, 0.01);
  CHECK(opt.type_name() == "nn.Adam");
  const Tensor w0 = m.weight.clone();
  m.gradWeight.fill_(3);
  m.gradBias.fill_(-3);
  opt.step();
  // the first Adam step moves every coordinate by lr against the gradient's sign (eps aside)
  CHECK(max_abs_diff(m.weight, w0.sub(0.01)) < 1e-6);
  opt.zeroGrad();
  CHECK(m.gradWeight.abs().max().item() == 0);

  nn::Linear copy(2, 2);
  copy.loadStateDict(m.stateDict());
  nn::Adam resumed(copy, 0.01);
  const auto state = opt.stateDict();
  CHECK(state.size() == 6);
  CHECK(state.count("1.exp_avg_sq"));
  resumed.loadStateDict(state);
  CHECK(resumed.state(0).at("step").dtype() == DType::Int64);
  for (auto* l : {&m, &copy}) {
    l->gradWeight.fill_(0.25);
    l->gradBias.fill_(1);
  }
  opt.step();
  resumed.step();
  CHECK(max_abs_diff(m.weight, copy.weight) == 0);
  CHECK(max_abs_diff(m.bias, copy.bias) == 0);
  CHECK(resumed.state(1).at("step").item() == 2);

  Tensor p = zeros({2}), g = zeros({2});
  CHECK_THROWS_WITH_AS(nn::Adam({p}, {g}, 0.1, 1.0), "nn.Adam::Adam: expected 0 <= beta1 < 1, got 1.000000", Error);
  CHECK_THROWS_WITH_AS(nn::Adam({p}, {g}, 0.1, 0.9, -0.5), "nn.Adam::Adam: expected 0 <= beta2 < 1, got -0.500000",
                       Error);
  CHECK_THROWS_WITH_AS(nn::Adam({p}, {g}, 0.1, 0.9, 0.999, -1), "nn.Adam::Adam: expected eps >= 0, got -1.000000",
                       Error);
  CHECK_THROWS_WITH_AS(nn::Adam({zeros({2}, DType::Int64)}, {zeros({2}, DType::Int64)}),
                       "nn.Adam: expected floating parameter 0, got int64 [2] on cpu", Error);
  CHECK_THROWS_WITH_AS(resumed.loadStateDict({{"0.step", zeros({2})}}),
                       "nn.Adam::loadStateDict: expected a one-element '0.step', got float32 [2] on cpu", Error);
}

TEST_CASE("Adam's state checks: checkStateDict names the key, and a refused load changes nothing") {
  Tensor p = zeros({2}), g = full({2}, 1.0);
  nn::Adam opt({p}, {g}, 0.1);
  opt.step();
  const auto good = opt.stateDict();
  opt.checkStateDict(good);
  auto with = [&](const std::string& key, const Tensor& t) {
    auto s = good;
    s[key] = t;
    return s;
  };
  CHECK_THROWS_WITH_AS(opt.checkStateDict(with("0.step", full({}, 1.5))),
                       "nn.Adam::checkStateDict: expected an integer '0.step' >= 0, got 1.5", Error);
  CHECK_THROWS_WITH_AS(opt.checkStateDict(with("0.step", full({}, -1.0))),
                       "nn.Adam::checkStateDict: expected an integer '0.step' >= 0, got -1", Error);
  CHECK_THROWS_WITH_AS(opt.checkStateDict(with("0.step", zeros({1, 2}))),
                       "nn.Adam::checkStateDict: expected a one-element '0.step', got float32 [1 x 2] on cpu", Error);
  CHECK_THROWS_WITH_AS(opt.checkStateDict(with("0.exp_avg", zeros({2}, DType::Int64))),
                       "nn.Adam::checkStateDict: expected a floating '0.exp_avg', got int64 [2] on cpu", Error);
  CHECK_THROWS_WITH_AS(opt.checkStateDict(with("0.exp_avg", Tensor())),
                       "nn.Adam::checkStateDict: '0.exp_avg' is undefined", Error);
  for (const char* key : {"0.", ".step", "00x.step", "1.step", "99999999999999999999.step"}) {
    INFO(key);
    CHECK_THROWS_WITH_AS(opt.checkStateDict(with(key, full({}, 1.0))),
                         doctest::Contains("nn.Adam::checkStateDict: expected keys '<parameter index>.<name>'"), Error);
  }
  // loadStateDict runs the same checks first: the state it refuses leaves the old one
  CHECK_THROWS_WITH_AS(opt.loadStateDict(with("0.step", full({}, 1.5))),
                       "nn.Adam::loadStateDict: expected an integer '0.step' >= 0, got 1.5", Error);
  CHECK(opt.state(0).at("step").item() == 1);
  CHECK(max_abs_diff(opt.state(0).at("exp_avg"), good.at("0.exp_avg")) == 0);
}

TEST_CASE("Adam's fused CPU step (contiguous tensors) gives its tensor-op step's bits (strided ones, and CUDA)") {
  for (DType dt : {DType::Float64, DType::Float32}) {
    INFO(name(dt));
    Generator gen(5);
    const Tensor start = uniform({40, 70}, -1, 1, gen, dt);
    Tensor pa = start.clone(), ga = zeros({40, 70}, dt);
    // the same values as strided views: a transposed copy seen through .t()
    Tensor pb = start.t().contiguous().t(), gb = zeros({70, 40}, dt).t();
    REQUIRE_FALSE(pb.is_contiguous());
    const nn::Adam::Options o{.lr = 0.01, .beta1 = 0.8, .beta2 = 0.9, .eps = 1e-6, .weightDecay = 0.1};
    nn::Adam fused({pa}, {ga}, o), ops({pb}, {gb}, o);
    for (int step = 0; step < 5; ++step) {
      const Tensor g = uniform({40, 70}, -1, 1, gen, dt);
      ga.copy_(g);
      gb.copy_(g);
      fused.step();
      ops.step();
    }
    // bit for bit: the GPU runs the tensor ops, and the optimizer tests hold CPU and GPU to
    // the same bits (tests/cudnn/test_Optimizers.cpp)
    CHECK(max_abs_diff(pa, pb) == 0);
    CHECK(max_abs_diff(fused.state(0).at("exp_avg"), ops.state(0).at("exp_avg")) == 0);
    CHECK(max_abs_diff(fused.state(0).at("exp_avg_sq"), ops.state(0).at("exp_avg_sq")) == 0);
    CHECK(max_abs_diff(pa, start) > 0.01);  // it moved
  }
}

TEST_CASE("Adam with fused = false takes the tensor ops and gives the fused step's bits (several parameters)") {
  // sizes around nothing in particular on the CPU, a strided parameter, a tensor listed twice,
  // and step counts that differ between parameters (loaded state)
  for (DType dt : {DType::Float64, DType::Float32}) {
    for (double weightDecay : {0.0, 0.05}) {
      INFO(name(dt), " weightDecay ", weightDecay);
      auto make = [&](std::vector<Tensor>& p, std::vector<Tensor>& g) {
        Generator gen(6);
        const Tensor shared = uniform({7}, -1, 1, gen, dt);
        p = {uniform({1}, -1, 1, gen, dt), shared, uniform({4097}, -1, 1, gen, dt),
             uniform({20, 30}, -1, 1, gen, dt).t(), shared};
        g.clear();
        for (const Tensor& t : p) g.push_back(zeros_like(t));
      };
      std::vector<Tensor> pa, ga, pb, gb;
      make(pa, ga);
      make(pb, gb);
      REQUIRE_FALSE(pa[3].is_contiguous());
      const nn::Adam::Options o{.lr = 0.02, .beta1 = 0.7, .beta2 = 0.95, .eps = 1e-5, .weightDecay = weightDecay};
      nn::Adam fused(pa, ga, o), ops(pb, gb, o);
      CHECK(fused.fused);
      ops.fused = false;
      const std::map<std::string, Tensor> state{{"2.step", scalar_tensor(4, DType::Int64)},
                                                {"2.exp_avg", full({4097}, 0.1, dt)},
                                                {"2.exp_avg_sq", full({4097}, 0.2, dt)}};
      fused.loadStateDict(state);
      ops.loadStateDict(state);
      Generator gen(7);
      for (int step = 0; step < 4; ++step) {
        for (size_t i = 0; i < ga.size(); ++i) {
          const Tensor g = uniform(ga[i].sizes(), -1, 1, gen, dt);
          ga[i].copy_(g);
          gb[i].copy_(g);
        }
        fused.step();
        ops.step();
      }
      for (size_t i = 0; i < pa.size(); ++i) {
        INFO("parameter ", i);
        CHECK(max_abs_diff(pa[i], pb[i]) == 0);
        CHECK(max_abs_diff(fused.state(i).at("exp_avg"), ops.state(i).at("exp_avg")) == 0);
        CHECK(max_abs_diff(fused.state(i).at("exp_avg_sq"), ops.state(i).at("exp_avg_sq")) == 0);
      }
      CHECK(fused.state(2).at("step").item() == 8);
      CHECK(fused.state(0).at("step").item() == 4);
    }
  }
}

// Note [Bias corrections on the device] (tensor/AdamScalars.h): the device's scalars come from a
// double-double power; run here on the host with the same IEEE operations, they must give the host
// path's float scalars (what float32, float16 and bfloat16 parameters use) over many steps.
TEST_CASE("capturable Adam's device bias corrections give the host path's float scalars") {
  int64_t doubleDiffers = 0, cases = 0;
  for (double beta : {0.9, 0.95, 0.98, 0.99, 0.999, 0.9999, 0.5, 0.0}) {
    for (double lr : {1e-3, 6e-4, 3e-4 * 0.37}) {
      for (int64_t t = 1; t <= 30000; t += (t < 3000 ? 1 : 7)) {
        const tensor::adam::Scalars s = tensor::adam::scalars(lr, beta, beta, 0.1, t);
        const double bias = 1 - std::pow(beta, static_cast<double>(t));
        ++cases;
        doubleDiffers += s.a != -lr / bias;
        REQUIRE(static_cast<float>(s.a) == static_cast<float>(-lr / bias));
        REQUIRE(static_cast<float>(s.b) == static_cast<float>(1.0 / std::sqrt(bias)));
        REQUIRE(s.keep == 1 - lr * 0.1);
      }
    }
  }
  // glibc's pow is not always correctly rounded: a few doubles may differ by an ulp
  CHECK(doubleDiffers < cases / 100);
  // step 0 and far beyond: bias corrections 0 and 1
  CHECK(tensor::adam::pow_steps(0.9, 0) == 1);
  CHECK(tensor::adam::pow_steps(0.9, int64_t{1} << 40) == 0);
  CHECK(tensor::adam::pow_steps(0.5, 10) == std::pow(0.5, 10));
}

TEST_CASE("capturable Adam and AdamW refuse CPU parameters, naming the optimizer and the option") {
  Tensor p = ones({3}), g = zeros({3});
  CHECK_THROWS_WITH_AS(nn::Adam({p}, {g}, nn::Adam::Options{.capturable = true}),
                       doctest::Contains("nn.Adam::Adam: capturable expects CUDA parameters"), Error);
  CHECK_THROWS_WITH_AS(
      nn::AdamW({p}, {g}, nn::AdamW::Options{.capturable = true}),
      doctest::Contains("nn.AdamW::AdamW: capturable expects CUDA parameters (Note [Capturable Adam]), "
                        "got parameter 0: float32 [3]"),
      Error);
  // the default stays the host path on CPU tensors
  nn::AdamW opt({p}, {g});
  CHECK_FALSE(opt.capturable());
  g.fill_(1);
  opt.step();
  CHECK(opt.state(0).at("step").is_cpu());
  CHECK(opt.stateDict().at("0.step").item() == 1);
}

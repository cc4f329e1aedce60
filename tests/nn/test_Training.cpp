// test_Training.cpp: modules, criteria and optimizers together. A small LeNet-style
// classifier (View -> Linear -> Residual(Linear) -> Dropout -> Linear; Linear layers stand
// in for convolutions) learns separable random data with SGD+momentum and with Adam, and a
// one-weight model takes hand-computed steps through forward, backward and step().
#include <doctest/doctest.h>

#include <cmath>
#include <functional>

#include "nn/Adam.h"
#include "nn/ClassNLLCriterion.h"
#include "nn/CrossEntropyCriterion.h"
#include "nn/Dropout.h"
#include "nn/Linear.h"
#include "nn/MSECriterion.h"
#include "nn/Residual.h"
#include "nn/SGD.h"
#include "nn/Sequential.h"
#include "nn/View.h"
#include "tests/support/GradCheck.h"

using namespace tensor;

namespace {

constexpr int64_t kClasses = 4, kSamples = 64;

struct Data {
  Tensor images;  // [kSamples x 1 x 8 x 8]
  Tensor labels;  // [kSamples], 0-based
};

// Each class is a random 8x8 prototype; samples are prototypes plus noise.
Data make_data(uint64_t seed) {
  Generator gen(seed);
  const Tensor prototypes = normal({kClasses, 64}, 0, 1, gen);
  Data d;
  d.labels = empty({kSamples}, DType::Int64);
  d.images = normal({kSamples, 64}, 0, 0.5, gen);
  for (int64_t i = 0; i < kSamples; ++i) {
    const int64_t c = i % kClasses;
    d.labels.set({i}, static_cast<double>(c));
    d.images[i].add_(prototypes[c]);
  }
  d.images = d.images.view({kSamples, 1, 8, 8});
  return d;
}

std::shared_ptr<nn::Sequential> lenet() {
  auto flatten = std::make_shared<nn::View>(-1);
  flatten->setNumInputDims(3);
  auto block = std::make_shared<nn::Sequential>(std::initializer_list<nn::ModulePtr>{
      std::make_shared<nn::Linear>(16, 16), std::make_shared<nn::Linear>(16, 16)});
  return std::make_shared<nn::Sequential>(std::initializer_list<nn::ModulePtr>{
      flatten, std::make_shared<nn::Linear>(64, 16), std::make_shared<nn::Residual>(block),
      std::make_shared<nn::Dropout>(0.2), std::make_shared<nn::Linear>(16, kClasses)});
}

double accuracy(const Tensor& scores, const Tensor& labels) {
  return scores.argmax(1).eq(labels).to(DType::Float64).mean().item();
}

// Trains for `steps` full-batch steps; returns {initial loss, final evaluation loss}.
std::pair<double, double> train(nn::Module& net, nn::Criterion& loss, nn::Optimizer& opt, const Data& d,
                                int steps) {
  net.evaluate();
  const double initial = loss.forward(net.forward(d.images), d.labels);
  net.train();
  for (int s = 0; s < steps; ++s) {
    opt.zeroGrad();
    const Tensor& out = net.forward(d.images);
    loss.forward(out, d.labels);
    net.backward(d.images, loss.backward(out, d.labels));
    opt.step();
  }
  net.evaluate();
  const Tensor& out = net.forward(d.images);
  const double final_loss = loss.forward(out, d.labels);
  INFO("initial loss ", initial, ", final ", final_loss);
  CHECK(accuracy(out, d.labels) == 1.0);
  return {initial, final_loss};
}

}  // namespace

TEST_CASE("A LeNet-style network learns separable data with SGD + momentum") {
  manual_seed(2024);
  INFO("seed 2024");
  const Data d = make_data(7);
  auto net = lenet();
  nn::CrossEntropyCriterion ce;
  nn::SGD opt(*net, {.lr = 0.05, .momentum = 0.9});
  const auto [initial, final_loss] = train(*net, ce, opt, d, 40);
  CHECK(initial > 0.5);
  CHECK(final_loss < initial / 20);
}

TEST_CASE("A LeNet-style network learns separable data with Adam (ClassNLL on the log-probabilities)") {
  manual_seed(2025);
  INFO("seed 2025");
  const Data d = make_data(8);
  auto net = lenet();
  nn::CrossEntropyCriterion ce;
  nn::Adam opt(*net, 0.01);
  const auto [initial, final_loss] = train(*net, ce, opt, d, 40);
  CHECK(final_loss < initial / 20);
  // the trained scores, turned into log-probabilities, give the same loss through ClassNLL
  nn::ClassNLLCriterion nll;
  CHECK(nll.forward(ce.logProbs, d.labels) == doctest::Approx(final_loss).epsilon(1e-6));
}

TEST_CASE("One weight, two steps: forward, backward and the optimizers by hand") {
  // y = w x with w0 = 2, x = 3, target 1: loss (3w - 1)^2, gradient 6 (3w - 1)
  auto grad = [](double w) { return 6 * (3 * w - 1); };
  auto run = [](const std::function<std::unique_ptr<nn::Optimizer>(nn::Module&)>& make) {
    nn::Linear m(1, 1, false);
    m.to(DType::Float64);
    m.weight.fill_(2);
    auto opt = make(m);
    nn::MSECriterion mse;
    const Tensor x = full({1, 1}, 3, DType::Float64), y = full({1, 1}, 1, DType::Float64);
    std::vector<double> ws;
    for (int s = 0; s < 2; ++s) {
      opt->zeroGrad();
      m.forward(x);
      mse.forward(m.output, y);
      m.backward(x, mse.backward(m.output, y));
      opt->step();
      ws.push_back(m.weight.item());
    }
    return ws;
  };
  const auto sgd = run([](nn::Module& m) { return std::make_unique<nn::SGD>(m, 0.01, 0.9); });
  // w1 = 2 - 0.01 * 30 = 1.7; buf = 0.9 * 30 + 24.6 = 51.6 -> w2 = 1.7 - 0.516 = 1.184
  CHECK(sgd[0] == doctest::Approx(1.7).epsilon(1e-14));
  CHECK(sgd[1] == doctest::Approx(1.184).epsilon(1e-14));
  CHECK(grad(1.7) == doctest::Approx(24.6));

  const auto adam = run([](nn::Module& m) { return std::make_unique<nn::Adam>(m, 0.1); });
  const double g1 = grad(2), w1 = 2 - 0.1 * (0.1 * g1 / 0.1) / (std::sqrt(0.001 * g1 * g1 / 0.001) + 1e-8);
  const double g2 = grad(w1), m2 = 0.9 * 0.1 * g1 + 0.1 * g2, v2 = 0.999 * 0.001 * g1 * g1 + 0.001 * g2 * g2;
  const double w2 = w1 - 0.1 * (m2 / (1 - 0.9 * 0.9)) / (std::sqrt(v2 / (1 - 0.999 * 0.999)) + 1e-8);
  CHECK(adam[0] == doctest::Approx(w1).epsilon(1e-14));
  CHECK(adam[1] == doctest::Approx(w2).epsilon(1e-14));
}

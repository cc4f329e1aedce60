// test_RNNReLU.cpp: nn.RNNReLU (h = relu(W_ih x + b_ih + W_hh h + b_hh)) against PyTorch, finite differences
// (tests/nn/RNNCheck.h), variable lengths against single sequences, dropout (statistically too),
// rememberStates, model files, errors.
#include <doctest/doctest.h>

#include "nn/RNNReLU.h"
#include "tests/nn/RNNCheck.h"

using namespace tensor;

namespace {

std::shared_ptr<nn::RNNBase> make(int64_t in, int64_t hidden, int64_t layers, bool bi, bool batchFirst,
                                  double p) {
  return std::make_shared<nn::RNNReLU>(in, hidden, layers, batchFirst, p, bi);
}

}  // namespace

TEST_CASE("RNNReLU matches PyTorch (float64: outputs, final states, every gradient)") {
  for (const char* name : {"relu_deep", "relu_bi", "relu_varlen"})
    rnncheck::expect_matches_pytorch(name, make);
}

TEST_CASE("RNNReLU gradients: layers, directions, batchFirst, states, lengths, dropout") {
  rnncheck::expect_all_gradients_ok(make);
}

TEST_CASE("RNNReLU variable lengths: each sequence alone gives the padded batch's numbers") {
  Generator gen(17);
  for (bool batchFirst : {false, true}) {
    auto m = make(3, 4, 2, false, batchFirst, 0.0);
    m->to(DType::Float64);
    const Tensor x = uniform(rnncheck::input_shape(*m, 6, 4), -1, 1, gen, DType::Float64);
    rnncheck::expect_lengths_match_single(*m, x, {3, 6, 1, 4});
  }
}

TEST_CASE("RNNReLU dropout (exact with p = 0 and in evaluate mode) and rememberStates") {
  rnncheck::expect_dropout_exact(make, false);
  rnncheck::expect_remember_states_ok(make, false);
}

TEST_CASE("RNNReLU parameters, accumulation, model file, printing, errors") {
  rnncheck::expect_parameters_ok(make);
  rnncheck::expect_float32_matches_float64(make);
  Generator gen(2);
  auto m = make(3, 4, 2, false, true, 0.25);
  m->to(DType::Float64);
  testing::expect_accumulation_ok(*m, uniform({2, 5, 3}, -1, 1, gen, DType::Float64));
  testing::expect_prints_type(*m);
  m->setPersist(true);
  m->rememberStates(true);
  rnncheck::expect_model_file_ok(m, uniform({2, 5, 3}, -1, 1, gen, DType::Float64));
  CHECK(m->str() == "nn.RNNReLU(3 -> 4, 2 layers, batchFirst, dropout 0.25, persist)");
  CHECK(nn::RNNReLU(3, 4).str() == "nn.RNNReLU(3 -> 4)");
  CHECK(nn::RNNReLU(3, 4, 1, false, 0, true).str() == "nn.RNNReLU(3 -> 4, bidirectional)");
  rnncheck::expect_errors_ok(make);
}

TEST_CASE("RNNReLU dropout between layers: Bernoulli masks scaled by 1/(1-p), the same in backward") {
  // Identity input weights and nothing else: layer 0 passes x > 0 through, the mask drops or
  // scales it, layer 1 passes it on; so output / input is the mask itself.
  for (double p : {0.5, 0.2}) {
    INFO("p = ", p);
    nn::RNNReLU m(4, 4, 2, false, p);
    for (auto& q : m.params) q.value.zero_();
    for (size_t w : {m.paramIndex(0, 0, 0), m.paramIndex(1, 0, 0)}) {
      for (int64_t i = 0; i < 4; ++i) m.params[w].value.set({i, i}, 1.0);
    }
    manual_seed(31);
    Generator gen(6);
    const Tensor x = uniform({50, 20, 4}, 0.5, 1, gen);
    const Tensor ratio = m.forward(x).div(x);
    const double zeroed = ratio.eq(0).to(DType::Float32).mean().item();
    CHECK(std::abs(zeroed - p) < 0.04);  // 4000 draws: 5 standard deviations
    const double kept = 1 / (1 - p);
    CHECK(ratio.sub(kept).abs().mul(ratio.ne(0).to(DType::Float32)).max().item() < 1e-5);
    // backward applies the same mask
    const Tensor gy = uniform({50, 20, 4}, -1, 1, gen);
    CHECK(max_abs_diff(m.backward(x, gy), gy.mul(ratio)) < 1e-5);
    // a second forward draws a new mask
    CHECK(max_abs_diff(m.forward(x).div(x), ratio) > 0.5);
    // no dropout after the last layer, nor in evaluate mode
    nn::RNNReLU one(4, 4, 1, false, p);
    for (auto& q : one.params) q.value.zero_();
    for (int64_t i = 0; i < 4; ++i) one.params[0].value.set({i, i}, 1.0);
    CHECK(max_abs_diff(one.forward(x), x) == 0);
    m.evaluate();
    CHECK(max_abs_diff(m.forward(x), x) == 0);
  }
}

TEST_CASE("RNNReLU hand-computed steps and an empty batch") {
  // one unit, weights 1: h_t = relu(x_t + h_{t-1})
  nn::RNNReLU m(1, 1);
  for (auto& q : m.params) q.value.fill_(0.5);  // w_ih = w_hh = 0.5, b_ih + b_hh = 1
  const Tensor x = from_vector<float>({1, -4, 2}, {3, 1, 1});
  m.hiddenInput = from_vector<float>({2}, {1, 1, 1});
  // h1 = relu(0.5 + 1 + 1) = 2.5, h2 = relu(-2 + 1.25 + 1) = 0.25, h3 = relu(1 + 0.125 + 1) = 2.125
  CHECK(m.forward(x).to_vector<float>() == std::vector<float>{2.5f, 0.25f, 2.125f});
  CHECK(m.hiddenOutput.to_vector<float>() == std::vector<float>{2.125f});
  // an empty batch gives empty outputs and states
  m.hiddenInput = Tensor();
  CHECK(m.forward(zeros({3, 0, 1})).sizes() == Shape{3, 0, 1});
  CHECK(m.hiddenOutput.sizes() == Shape{1, 0, 1});
  CHECK(m.backward(zeros({3, 0, 1}), zeros({3, 0, 1})).sizes() == Shape{3, 0, 1});
}

// test_RNNFamily.cpp: the six recurrent modules (nn.RNNReLU, RNNTanh, LSTM, GRU, BLSTM, BGRU) as one
// table: each row names the type, how to build it, its PyTorch float64 reference cases and how it
// prints; every row goes through the same checks (tests/support/RNNChecks.h): PyTorch's outputs, final
// states and gradients, finite differences over inputs, states and parameters (layers,
// directions, batchFirst, lengths, dropout), each sequence alone against the padded batch,
// dropout exact with p = 0 and in evaluate mode, rememberStates, accumulation, model files,
// printing and errors. A new recurrent type is one row; its own cases follow the table.
#include <doctest/doctest.h>

#include "nn/BGRU.h"
#include "nn/BLSTM.h"
#include "nn/GRU.h"
#include "nn/LSTM.h"
#include "nn/RNNReLU.h"
#include "nn/RNNTanh.h"
#include "tests/support/RNNChecks.h"

using namespace tensor;

namespace {

// A type that takes `bidirectional` gets it from the factory's argument; BLSTM/BGRU always are.
template <class M>
rnncheck::Factory factory() {
  return [](int64_t in, int64_t hidden, int64_t layers, bool bi, bool batchFirst,
            double p) -> std::shared_ptr<nn::RNNBase> {
    if constexpr (std::is_constructible_v<M, int64_t, int64_t, int64_t, bool, double, bool>) {
      return std::make_shared<M>(in, hidden, layers, batchFirst, p, bi);
    } else {
      (void)bi;
      return std::make_shared<M>(in, hidden, layers, batchFirst, p);
    }
  };
}

struct RNNType {
  const char* name;
  rnncheck::Factory make;
  std::vector<std::string> references;  // case names in tests/data/nn/rnn_reference.safetensors
  bool alwaysBidirectional;             // BLSTM, BGRU
  bool bidirectional;                   // the direction the shared cases below use
  const char* printed;                  // make(3, 4, 2, bidirectional, true, 0.25) with persist
};

const std::vector<RNNType>& types() {
  static const std::vector<RNNType> rows = {
      {"RNNReLU",
       factory<nn::RNNReLU>(),
       {"relu_deep", "relu_bi", "relu_varlen"},
       false,
       false,
       "nn.RNNReLU(3 -> 4, 2 layers, batchFirst, dropout 0.25, persist)"},
      {"RNNTanh",
       factory<nn::RNNTanh>(),
       {"tanh_deep", "tanh_bi", "tanh_varlen"},
       false,
       true,
       "nn.RNNTanh(3 -> 4, 2 layers, bidirectional, batchFirst, dropout 0.25, persist)"},
      {"LSTM",
       factory<nn::LSTM>(),
       {"lstm_deep", "lstm_bi", "lstm_varlen", "lstm_file"},
       false,
       false,
       "nn.LSTM(3 -> 4, 2 layers, batchFirst, dropout 0.25, persist)"},
      {"GRU",
       factory<nn::GRU>(),
       {"gru_deep", "gru_bi", "gru_varlen"},
       false,
       true,
       "nn.GRU(3 -> 4, 2 layers, bidirectional, batchFirst, dropout 0.25, persist)"},
      {"BLSTM",
       factory<nn::BLSTM>(),
       {"lstm_bi", "lstm_varlen"},
       true,
       true,
       "nn.BLSTM(3 -> 4, 2 layers, batchFirst, dropout 0.25, persist)"},
      {"BGRU",
       factory<nn::BGRU>(),
       {"gru_bi", "gru_varlen"},
       true,
       true,
       "nn.BGRU(3 -> 4, 2 layers, batchFirst, dropout 0.25, persist)"},
  };
  return rows;
}

}  // namespace

TEST_CASE("every recurrent type matches PyTorch (float64: outputs, final states, every gradient)") {
  for (const RNNType& t : types()) {
    for (const auto& name : t.references) {
      INFO(t.name, " on ", name);
      rnncheck::expect_matches_pytorch(name, t.make);
    }
  }
}

TEST_CASE("every recurrent type's gradients: layers, directions, batchFirst, states, lengths, dropout") {
  for (const RNNType& t : types()) {
    INFO(t.name);
    rnncheck::expect_all_gradients_ok(t.make, t.alwaysBidirectional);
  }
}

TEST_CASE("every recurrent type with variable lengths: each sequence alone gives the padded batch's numbers") {
  for (const RNNType& t : types()) {
    Generator gen(17);
    for (bool batchFirst : {false, true}) {
      INFO(t.name, batchFirst ? " batchFirst" : "");
      auto m = t.make(3, 4, 2, t.bidirectional, batchFirst, 0.0);
      m->to(DType::Float64);
      const Tensor x = uniform(rnncheck::input_shape(*m, 6, 4), -1, 1, gen, DType::Float64);
      rnncheck::expect_lengths_match_single(*m, x, {3, 6, 1, 4});
    }
  }
}

TEST_CASE("every recurrent type: dropout exact with p = 0 and in evaluate mode, rememberStates") {
  for (const RNNType& t : types()) {
    INFO(t.name);
    rnncheck::expect_dropout_exact(t.make, t.bidirectional);
    rnncheck::expect_remember_states_ok(t.make, t.bidirectional);
  }
}

TEST_CASE("every recurrent type: parameters, accumulation, model file, printing, errors") {
  for (const RNNType& t : types()) {
    INFO(t.name);
    rnncheck::expect_parameters_ok(t.make);
    rnncheck::expect_float32_matches_float64(t.make);
    Generator gen(2);
    auto m = t.make(3, 4, 2, t.bidirectional, true, 0.25);
    m->to(DType::Float64);
    testing::expect_accumulation_ok(*m, uniform({2, 5, 3}, -1, 1, gen, DType::Float64));
    testing::expect_prints_type(*m);
    m->setPersist(true);
    m->rememberStates(true);
    rnncheck::expect_model_file_ok(m, uniform({2, 5, 3}, -1, 1, gen, DType::Float64));
    CHECK(m->str() == t.printed);
    if (t.alwaysBidirectional) {
      CHECK(m->bidirectional);
      CHECK(m->config().find("bidirectional") == nullptr);  // implied by the type
    }
    rnncheck::expect_errors_ok(t.make);
  }
  CHECK(nn::RNNReLU(3, 4).str() == "nn.RNNReLU(3 -> 4)");
  CHECK(nn::RNNReLU(3, 4, 1, false, 0, true).str() == "nn.RNNReLU(3 -> 4, bidirectional)");
  CHECK(nn::RNNTanh(3, 4, 3).str() == "nn.RNNTanh(3 -> 4, 3 layers)");
  CHECK(nn::LSTM(10, 20, 2, false, 0.5).str() == "nn.LSTM(10 -> 20, 2 layers, dropout 0.5)");
}

// ---- the types' own cases ----

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

TEST_CASE("LSTM: a PyTorch LSTM's state_dict, saved with safetensors, loads straight in") {
  // torch.nn.LSTM(5, 4, num_layers=2).state_dict() through safetensors.torch.save_file
  nn::LSTM m(5, 4, 2);
  nn::load_weights(m, std::string(CUDNN_NN_TEST_DATA) + "/nn/lstm_state_dict.safetensors");
  CHECK(m.params[0].value.dtype() == DType::Float32);  // loaded into the module's dtype
  m.to(DType::Float64);
  nn::load_weights(m, std::string(CUDNN_NN_TEST_DATA) + "/nn/lstm_state_dict.safetensors");
  const auto& ref = rnncheck::reference();
  m.hiddenInput = ref.at("lstm_file.h0");
  m.cellInput = ref.at("lstm_file.c0");
  CHECK(max_rel_error(m.forward(ref.at("lstm_file.input")), ref.at("lstm_file.output")) < 1e-10);
  CHECK(max_rel_error(m.hiddenOutput, ref.at("lstm_file.hn")) < 1e-10);
  CHECK(max_rel_error(m.cellOutput, ref.at("lstm_file.cn")) < 1e-10);
  // and a module of another size says which tensors do not fit
  nn::LSTM wrong(5, 3, 2);
  CHECK_THROWS_WITH_AS(nn::load_weights(wrong, std::string(CUDNN_NN_TEST_DATA) + "/nn/lstm_state_dict.safetensors"),
                       doctest::Contains("'weight_hh_l0' has shape [16 x 4], expected [12 x 3]"), Error);
}

// test_RNNFamily.cpp: the six recurrent modules (nn.RNNReLU, RNNTanh, LSTM, GRU, BLSTM, BGRU) as one
// table: each row names the type, how to build it, its PyTorch float64 reference cases and how it
// prints; every row goes through the same checks (tests/support/RNNChecks.h): PyTorch's outputs, final
// states and gradients, finite differences over inputs, states and parameters (layers,
// directions, batchFirst, lengths, dropout), each sequence alone against the padded batch,
// dropout exact with p = 0 and in evaluate mode, rememberStates, accumulation, model files,
// printing and errors. A new recurrent type is one row; its own cases follow the table.
#include <doctest/doctest.h>

#include <functional>
#include <limits>
#include <memory>

#include "nn/BGRU.h"
#include "nn/BLSTM.h"
#include "nn/GRU.h"
#include "nn/LSTM.h"
#include "nn/RNNReLU.h"
#include "nn/RNNTanh.h"
#include "tests/support/ErrorText.h"
#include "tests/support/RNNChecks.h"

using namespace tensor;
using testing::error_of;
using testing::has;

namespace {

// The factory's `bidirectional` through the options; BLSTM/BGRU always are.
template <class M>
rnncheck::Factory factory() {
  return [](int64_t in, int64_t hidden, int64_t layers, bool bi, bool batchFirst,
            double p) -> std::shared_ptr<nn::RNNBase> {
    return std::make_shared<M>(nn::RNNOptions{.inputSize = in,
                                              .hiddenSize = hidden,
                                              .numLayers = layers,
                                              .batchFirst = batchFirst,
                                              .dropout = p,
                                              .bidirectional = bi});
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
      CHECK(m->bidirectional());
      CHECK(m->config().find("bidirectional") == nullptr);  // implied by the type
    }
    rnncheck::expect_errors_ok(t.make);
  }
  CHECK(nn::RNNReLU(3, 4).str() == "nn.RNNReLU(3 -> 4)");
  CHECK(nn::RNNReLU(nn::RNNOptions{.inputSize = 3, .hiddenSize = 4, .bidirectional = true}).str() ==
        "nn.RNNReLU(3 -> 4, bidirectional)");
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

namespace {
// Before, the configuration was public fields: m.numLayers = 3 read past the parameters,
// m.dropout = 1 made every output NaN.
template <class M>
concept AssignableConfiguration = requires(M m) { m.numLayers = 3; } || requires(M m) { m.inputDim = 3; } ||
                                  requires(M m) { m.outputDim = 3; } || requires(M m) { m.dropout = 1.0; } ||
                                  requires(M m) { m.batchFirst = true; } || requires(M m) { m.bidirectional = true; };
}  // namespace

TEST_CASE("recurrent configuration is fixed at construction: accessors, no assignable fields") {
  CHECK_FALSE(AssignableConfiguration<nn::RNNBase>);
  CHECK_FALSE(AssignableConfiguration<nn::LSTM>);
  CHECK_FALSE(AssignableConfiguration<nn::BGRU>);
  const nn::GRU m(3, 4, 2, true, 0.25);
  CHECK(m.inputDim() == 3);
  CHECK(m.outputDim() == 4);
  CHECK(m.numLayers() == 2);
  CHECK(m.batchFirst());
  CHECK(m.dropout() == 0.25);
  CHECK_FALSE(m.bidirectional());
  CHECK(m.bias());
}

TEST_CASE("recurrent constructors: PyTorch's options by name, cudnn.torch's order by position") {
  // nn::LSTM(6, 5, 2, true) ported from PyTorch meant bias = true; by name it says so
  const nn::LSTM a(nn::RNNOptions{.inputSize = 6, .hiddenSize = 5, .numLayers = 2, .bias = true});
  CHECK_FALSE(a.batchFirst());
  CHECK(a.numLayers() == 2);
  // cudnn.LSTM(inputSize, hiddenSize, numLayers, batchFirst, dropout, rememberStates)
  const nn::LSTM b(6, 5, 2, true, 0.5, true);
  CHECK(b.batchFirst());
  CHECK(b.dropout() == 0.5);
  CHECK(b.remembersStates());
  CHECK_FALSE(b.bidirectional());
  const nn::RNNTanh c(nn::RNNOptions{.inputSize = 2, .hiddenSize = 3, .batchFirst = true, .bidirectional = true});
  CHECK(c.bidirectional());
  CHECK(c.str() == "nn.RNNTanh(2 -> 3, bidirectional, batchFirst)");
  const nn::BLSTM d(nn::RNNOptions{.inputSize = 2, .hiddenSize = 3});  // bidirectional by type
  CHECK(d.bidirectional());
  CHECK(nn::BGRU(2, 3, 1, false, 0, true).remembersStates());
}

TEST_CASE("recurrent constructors' errors name the type constructed (BLSTM and BGRU too, not their mode's)") {
  CHECK_THROWS_WITH_AS(nn::BLSTM(0, 5), "nn.BLSTM: expected positive inputDim and outputDim, got 0 -> 5", Error);
  CHECK_THROWS_WITH_AS(nn::BGRU(3, 0), "nn.BGRU: expected positive inputDim and outputDim, got 3 -> 0", Error);
  CHECK_THROWS_WITH_AS(nn::BLSTM(3, 4, 0), "nn.BLSTM: expected numLayers in [1, 4096], got 0", Error);
  CHECK_THROWS_WITH_AS(nn::BGRU(3, 4, 1, false, 1.5), doctest::Contains("nn.BGRU: expected dropout in [0, 1), got 1.5"),
                       Error);
  CHECK_THROWS_WITH_AS(nn::BLSTM(nn::RNNOptions{.inputSize = -1, .hiddenSize = 2}),
                       "nn.BLSTM: expected positive inputDim and outputDim, got -1 -> 2", Error);
  CHECK(has(error_of([] { (void)nn::BGRU(nn::RNNOptions{.inputSize = 1, .hiddenSize = int64_t{1} << 62}); }),
            "nn.BGRU (inputDim 1"));
  // the others as before
  CHECK_THROWS_WITH_AS(nn::LSTM(0, 5), "nn.LSTM: expected positive inputDim and outputDim, got 0 -> 5", Error);
  CHECK_THROWS_WITH_AS(nn::GRU(0, 5), "nn.GRU: expected positive inputDim and outputDim, got 0 -> 5", Error);
  CHECK_THROWS_WITH_AS(nn::RNNReLU(0, 5), "nn.RNNReLU: expected positive inputDim and outputDim, got 0 -> 5", Error);
  CHECK_THROWS_WITH_AS(nn::RNNTanh(0, 5), "nn.RNNTanh: expected positive inputDim and outputDim, got 0 -> 5", Error);
}

TEST_CASE("bias = false: no bias parameters, and the numbers of zero biases (PyTorch's bias=False)") {
  for (bool bidirectional : {false, true}) {
    INFO("bidirectional ", bidirectional);
    nn::RNNOptions o{.inputSize = 3, .hiddenSize = 4, .numLayers = 2, .bias = false, .bidirectional = bidirectional};
    manual_seed(7);
    nn::GRU m(o);
    o.bias = true;
    nn::GRU ref(o);
    std::vector<std::string> names;
    for (const auto& [name, _] : m.namedParameters()) names.push_back(name);
    std::vector<std::string> want = {"weight_ih_l0", "weight_hh_l0"};
    if (bidirectional) want.insert(want.end(), {"weight_ih_l0_reverse", "weight_hh_l0_reverse"});
    want.insert(want.end(), {"weight_ih_l1", "weight_hh_l1"});
    if (bidirectional) want.insert(want.end(), {"weight_ih_l1_reverse", "weight_hh_l1_reverse"});
    CHECK(names == want);
    CHECK(has(m.str(), ", without bias"));
    // the same weights and zero biases give the same outputs and gradients
    for (auto& p : ref.params) p.value.zero_();
    ref.loadStateDict(m.stateDict(), false);
    m.to(DType::Float64);
    ref.to(DType::Float64);
    Generator gen(8);
    const Tensor x = uniform({5, 2, 3}, -1, 1, gen, DType::Float64);
    CHECK(max_abs_diff(m.forward(x), ref.forward(x)) <= 1e-12);
    const Tensor gy = uniform(m.output.sizes(), -1, 1, gen, DType::Float64);
    CHECK(max_abs_diff(m.backward(x, gy), ref.backward(x, gy)) <= 1e-12);
    const auto grads = ref.namedGradParameters();
    for (const auto& [name, g] : m.namedGradParameters()) {
      INFO(name);
      for (const auto& [rname, rg] : grads) {
        if (rname == name) CHECK(max_abs_diff(g, rg) <= 1e-12);
      }
    }
    // model files carry it
    const tensor::Json config = m.config();
    CHECK(config.find("bias") != nullptr);
    const nn::ModulePtr back = nn::GRU::fromConfig(config);
    CHECK_FALSE(std::static_pointer_cast<nn::GRU>(back)->bias());
    CHECK(back->parameters().size() == m.parameters().size());
  }
}

TEST_CASE("recurrent sizes: checked arithmetic, and bounded before anything is allocated") {
  auto err = [](const nn::RNNOptions& o) { return error_of([&] { (void)nn::LSTM(o); }); };
  // gateCount() * outputDim was a signed overflow (a 123-byte model file reached it)
  const std::string hidden = err({.inputSize = 1, .hiddenSize = int64_t{1} << 62});
  CHECK(has(hidden, "nn.LSTM"));
  CHECK(has(hidden, "overflows int64"));
  CHECK(has(err({.inputSize = 1, .hiddenSize = 1, .numLayers = int64_t{1} << 40}),
            "nn.LSTM: expected numLayers in [1, 4096], got 1099511627776"));
  CHECK(has(err({.inputSize = int64_t{1} << 16, .hiddenSize = int64_t{1} << 15}),
            "parameter elements (nn::kMaxRNNParameters)"));
  CHECK(has(err({.inputSize = std::numeric_limits<int64_t>::max(), .hiddenSize = 1}), "overflows int64"));
  // a model file is refused by fromConfig before finish(), so while it is validated
  const tensor::Json file = tensor::Json::Object{{"inputDim", 1}, {"outputDim", int64_t{1} << 62}};
  CHECK(has(error_of([&] { (void)nn::LSTM::fromConfig(file); }), "overflows int64"));
}

TEST_CASE("to() between forward and backward: backward asks for a new forward, on both paths") {
  Generator gen(9);
  const Tensor x = uniform({5, 2, 3}, -1, 1, gen);
  for (bool toDevice : {false, true}) {
    nn::LSTM m(3, 4);
    m.forward(x);
    if (toDevice) {
      m.to(Device::cpu());
    } else {
      m.to(DType::Float64);
    }
    // before, the float64 conversion was read as float32: "tensor is float64, asked for float32"
    const std::string e = error_of([&] { m.backward(x, zeros({5, 2, 4})); });
    CHECK(has(e, "expected a forward() in training mode on this input first"));
    CHECK(has(e, "got last forward: none"));
    m.to(DType::Float32);
    m.forward(x);
    CHECK_NOTHROW(m.backward(x, zeros({5, 2, 4})));
  }
}

TEST_CASE("recurrent parameters replaced by hand: the count and each shape are checked") {
  nn::RNNTanh m(3, 4);
  const Tensor x = zeros({5, 2, 3});
  m.params.pop_back();
  CHECK(has(error_of([&] { m.forward(x); }), "nn.RNNTanh::updateOutput: expected 4 parameters"));
  nn::RNNTanh n(3, 4);
  n.params[1].value = zeros({4, 3});  // weight_hh [4 x 4]
  CHECK(has(error_of([&] { n.forward(x); }), "expected weight_hh_l0 of [4 x 4] (contiguous), got float32 [4 x 3]"));
  n.params[1].value = zeros({4, 4}).t();  // the right shape, not dense as the kernels read it
  CHECK(has(error_of([&] { n.forward(x); }), "(not contiguous)"));
}

// Note [The zero initial state in the recurrent weight gradient]: without a hiddenInput, the
// first step of each sequence meets the zero state, and a NaN or Inf in its gate gradients must
// not turn into NaN in weight_hh's gradient through Inf x 0 (cuDNN leaves that step out).
TEST_CASE("every recurrent type: NaN and Inf at a sequence's first step stay out of weight_hh's gradient") {
  Generator gen(20261126);
  manual_seed(20261126);  // the modules' initial weights
  const std::vector<std::function<std::shared_ptr<nn::RNNBase>()>> makers = {
      [] { return std::make_shared<nn::RNNTanh>(3, 4); }, [] { return std::make_shared<nn::RNNReLU>(3, 4); },
      [] { return std::make_shared<nn::LSTM>(3, 4); },    [] { return std::make_shared<nn::GRU>(3, 4); },
      [] { return std::make_shared<nn::BLSTM>(3, 4); },   [] { return std::make_shared<nn::BGRU>(3, 4); }};
  for (const auto& make : makers) {
    auto m = make();
    m->to(DType::Float64);
    const bool bidirectional = m->numDirections() == 2;
    INFO(m->str());
    const int64_t S = 4, H = 4;
    const Tensor x = uniform({S, 2, 3}, -1, 1, gen, DType::Float64);
    const Tensor y = m->forward(x).clone();
    // the forward direction's first step is t = 0; the reverse direction's, t = S - 1, its
    // output the second half of the features
    const int64_t t = bidirectional ? S - 1 : 0, j = bidirectional ? H : 0;
    Tensor g = uniform(y.sizes(), -1, 1, gen, DType::Float64);
    g.select(0, t).narrow(1, j, H).zero_();  // its term in weight_hh is gh h_{-1} = 0 then
    const std::string name = bidirectional ? "weight_hh_l0_reverse" : "weight_hh_l0";
    const auto grad_of = [&](const Tensor& gy) {
      m->forward(x);
      m->zeroGradParameters();
      m->backward(x, gy);
      for (const nn::RNNParameter& p : m->params) {
        if (p.name == name) return p.grad.clone();
      }
      FAIL("no parameter ", name);
      return Tensor();
    };
    const Tensor want = grad_of(g);
    Tensor bad = g.clone();
    bad.set({t, 0, j + 1}, std::nan(""));
    bad.set({t, 1, j + 2}, INFINITY);
    const Tensor got = grad_of(bad);
    CHECK_FALSE(has_nonfinite(got));
    CHECK(max_abs_diff(got, want) < 1e-12);
    // the input's gradient at that step does see it (ReLU's may mask it: a gate at or below 0)
    if (m->type_name() != "nn.RNNReLU") CHECK(has_nonfinite(m->gradInput));
  }
}

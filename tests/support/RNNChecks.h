// RNNChecks.h: what the recurrent modules' tests share (the rows of tests/nn/test_RNNFamily.cpp):
// a finite-difference check that also covers the initial states and gradients on the final
// states, the PyTorch reference cases (scripts/make_rnn_reference.py), variable lengths against
// each sequence run alone, dropout, rememberStates, model files, and the errors.
#pragma once

#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "convert/ModelFile.h"
#include "nn/RNNBase.h"
#include "tensor/Safetensors.h"
#include "tests/support/GradCheck.h"

namespace rnncheck {

using tensor::DType;
using tensor::Generator;
using tensor::Shape;
using tensor::Tensor;

// Builds the module under test: (inputDim, hidden, numLayers, bidirectional, batchFirst, dropout).
using Factory = std::function<std::shared_ptr<nn::RNNBase>(int64_t, int64_t, int64_t, bool, bool, double)>;

inline Shape input_shape(const nn::RNNBase& m, int64_t seq, int64_t batch) {
  return m.batchFirst() ? Shape{batch, seq, m.inputDim()} : Shape{seq, batch, m.inputDim()};
}
inline Shape output_shape(const nn::RNNBase& m, int64_t seq, int64_t batch) {
  const int64_t c = m.outputDim() * m.numDirections();
  return m.batchFirst() ? Shape{batch, seq, c} : Shape{seq, batch, c};
}
inline int64_t batch_dim(const nn::RNNBase& m) { return m.batchFirst() ? 0 : 1; }
inline int64_t time_dim(const nn::RNNBase& m) { return m.batchFirst() ? 1 : 0; }
inline bool is_lstm(const nn::RNNBase& m) { return m.mode() == nn::RNNMode::LSTM; }

// ---- finite differences over the input, the initial states and every parameter ----

struct StateGradOptions {
  bool initialStates = true;  // random hiddenInput (cellInput); else undefined (zeros)
  bool finalGrads = true;     // the loss includes the final states (gradHiddenOutput/gradCellOutput set)
  int64_t maxSamples = 40;    // entries checked per tensor
  double eps = 1e-6, tolerance = 1e-6;
  uint64_t seed = 4242;  // the module is reseeded with it before every forward (dropout)
};

// L = sum(y * R) + sum(hn * Rh) + sum(cn * Rc) for a float64 module; the analytic gradients
// from one backward are compared with central differences at sampled entries of the input,
// hiddenInput, cellInput and every parameter (kinks, where the one-sided differences
// disagree, are skipped). Returns the number of entries checked.
inline int64_t expect_state_gradients_ok(nn::RNNBase& m, const Tensor& input,
                                         const StateGradOptions& o = {}) {
  Generator gen(o.seed);
  Tensor x = input.clone();
  const int64_t seq = x.size(time_dim(m)), batch = x.size(batch_dim(m));
  const Shape states = {m.numLayers() * m.numDirections(), batch, m.outputDim()};
  m.hiddenInput = o.initialStates ? tensor::uniform(states, -1, 1, gen, DType::Float64) : Tensor();
  m.cellInput =
      o.initialStates && is_lstm(m) ? tensor::uniform(states, -1, 1, gen, DType::Float64) : Tensor();
  const Tensor R = tensor::uniform(output_shape(m, seq, batch), -1, 1, gen, DType::Float64);
  const Tensor Rh = o.finalGrads ? tensor::uniform(states, -1, 1, gen, DType::Float64) : Tensor();
  const Tensor Rc =
      o.finalGrads && is_lstm(m) ? tensor::uniform(states, -1, 1, gen, DType::Float64) : Tensor();
  auto loss = [&]() {
    tensor::manual_seed(o.seed);
    const Tensor& y = m.forward(x);
    double L = y.mul(R).sum().item();
    if (Rh.defined()) L += m.hiddenOutput.mul(Rh).sum().item();
    if (Rc.defined()) L += m.cellOutput.mul(Rc).sum().item();
    return L;
  };
  const double L0 = loss();
  m.gradHiddenOutput = Rh;
  m.gradCellOutput = Rc;
  m.zeroGradParameters();
  const Tensor gx = m.backward(x, R).clone();
  struct Target {
    std::string name;
    Tensor* value;
    Tensor analytic;
  };
  std::vector<Target> targets{{"input", &x, gx}};
  if (m.hiddenInput.defined()) targets.push_back({"hiddenInput", &m.hiddenInput, m.gradHiddenInput.clone()});
  if (m.cellInput.defined()) targets.push_back({"cellInput", &m.cellInput, m.gradCellInput.clone()});
  if (!o.initialStates) {
    // the gradients to zero initial states are still defined and checked against a zero state
    m.hiddenInput = tensor::zeros(states, DType::Float64);
    targets.push_back({"hiddenInput(zeros)", &m.hiddenInput, m.gradHiddenInput.clone()});
    if (is_lstm(m)) {
      m.cellInput = tensor::zeros(states, DType::Float64);
      targets.push_back({"cellInput(zeros)", &m.cellInput, m.gradCellInput.clone()});
    }
  }
  for (auto& p : m.params) targets.push_back({p.name, &p.value, p.grad.clone()});
  int64_t checked = 0, skipped = 0;
  double worst = 0;
  std::string worst_at;
  for (auto& t : targets) {
    REQUIRE(t.value->is_contiguous());
    REQUIRE(t.analytic.sizes() == t.value->sizes());
    const int64_t n = t.value->numel();
    double* v = t.value->data<double>();
    const std::vector<double> a = t.analytic.to_vector<double>();
    std::vector<int64_t> idx(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) idx[static_cast<size_t>(i)] = i;
    if (n > o.maxSamples) {
      for (int64_t i = 0; i < o.maxSamples; ++i) std::swap(idx[i], idx[i + gen.randint(n - i)]);
      idx.resize(static_cast<size_t>(o.maxSamples));
    }
    for (int64_t i : idx) {
      const double keep = v[i];
      v[i] = keep + o.eps;
      const double Lp = loss();
      v[i] = keep - o.eps;
      const double Lm = loss();
      v[i] = keep;
      if (std::abs(Lp - 2 * L0 + Lm) > 1e-9 * std::max(1.0, std::abs(L0))) {
        ++skipped;
        continue;
      }
      const double num = (Lp - Lm) / (2 * o.eps), ana = a[static_cast<size_t>(i)];
      const double err = std::abs(num - ana) / std::max({std::abs(num), std::abs(ana), 1.0});
      if (err > worst) {
        worst = err;
        worst_at = t.name + "[" + std::to_string(i) + "] analytic " + std::to_string(ana) + " numeric " +
                   std::to_string(num);
      }
      ++checked;
    }
  }
  m.gradHiddenOutput = m.gradCellOutput = Tensor();
  INFO(m.str(), " initialStates ", o.initialStates, " finalGrads ", o.finalGrads, ": worst ", worst_at, ", ",
       checked, " checked, ", skipped, " kinks skipped");
  CHECK(worst <= o.tolerance);
  CHECK(checked > skipped);
  return checked;
}

// Every cell-independent variation: 1 and 2 layers, both directions, batchFirst, with and
// without initial states and final-state gradients, variable lengths, dropout (reseeded).
inline void expect_all_gradients_ok(const Factory& make, bool bidirectionalOnly = false) {
  Generator gen(20261123);
  INFO("size seed 20261123");
  for (int64_t layers : {1, 2}) {
    for (bool bi : {false, true}) {
      if (bidirectionalOnly && !bi) continue;
      for (bool batchFirst : {false, true}) {
        auto m = make(3, 3, layers, bi, batchFirst, 0.0);
        m->to(DType::Float64);
        const int64_t seq = 4, batch = 3;
        const Tensor x = tensor::uniform(input_shape(*m, seq, batch), -1, 1, gen, DType::Float64);
        if (layers == 2)
          testing::expect_gradients_ok(*m, x);  // the shared checker agrees (input, parameters)
        for (bool states : {false, true}) {
          StateGradOptions o;
          o.initialStates = states;
          o.finalGrads = states == batchFirst;  // every combination over the batchFirst loop
          expect_state_gradients_ok(*m, x, o);
        }
        m->sequenceLengths = {2, 4, 1};
        expect_state_gradients_ok(*m, x);
        m->sequenceLengths.clear();
      }
    }
  }
  // dropout between layers, its masks drawn again (same seed) at every forward
  auto m = make(2, 3, 3, !bidirectionalOnly ? false : true, false, 0.4);
  m->to(DType::Float64);
  expect_state_gradients_ok(*m, tensor::uniform(input_shape(*m, 3, 2), -1, 1, gen, DType::Float64));
}

// ---- PyTorch's numbers (scripts/make_rnn_reference.py) ----

inline const std::map<std::string, Tensor>& reference() {
  static const auto ref =
      tensor::load_safetensors(std::string(CUDNN_NN_TEST_DATA) + "/nn/rnn_reference.safetensors").tensors;
  return ref;
}

// Builds the case's module with `make`, loads PyTorch's state_dict through loadStateDict
// (strict: the names must be PyTorch's) and compares output, final states and every gradient.
inline void expect_matches_pytorch(const std::string& name, const Factory& make) {
  INFO("reference case ", name);
  const auto& ref = reference();
  auto get = [&](const std::string& key) -> const Tensor& {
    auto it = ref.find(name + "." + key);
    REQUIRE_MESSAGE(it != ref.end(), "missing " << name << "." << key);
    return it->second;
  };
  const std::vector<int64_t> cfg = get("config").to_vector<int64_t>();
  REQUIRE(cfg.size() == 6);
  auto m = make(cfg[1], cfg[2], cfg[3], cfg[4] != 0, cfg[5] != 0, 0.0);
  REQUIRE(static_cast<int64_t>(m->mode()) == cfg[0]);
  m->to(DType::Float64);
  std::map<std::string, Tensor> state;
  const std::string prefix = name + ".param.";
  for (const auto& [key, t] : ref) {
    if (key.rfind(prefix, 0) == 0) state[key.substr(prefix.size())] = t;
  }
  m->loadStateDict(state);  // strict
  if (ref.count(name + ".lengths")) m->sequenceLengths = get("lengths").to_vector<int64_t>();
  m->hiddenInput = get("h0").clone();
  if (is_lstm(*m)) m->cellInput = get("c0").clone();
  const Tensor x = get("input");
  const double tol = 1e-10;
  CHECK(tensor::max_rel_error(m->forward(x), get("output")) < tol);
  CHECK(tensor::max_rel_error(m->hiddenOutput, get("hn")) < tol);
  if (is_lstm(*m)) CHECK(tensor::max_rel_error(m->cellOutput, get("cn")) < tol);
  m->gradHiddenOutput = get("gHn");
  if (is_lstm(*m)) m->gradCellOutput = get("gCn");
  m->zeroGradParameters();
  CHECK(tensor::max_rel_error(m->backward(x, get("gOut")), get("grad.input")) < tol);
  CHECK(tensor::max_rel_error(m->gradHiddenInput, get("grad.h0")) < tol);
  if (is_lstm(*m)) CHECK(tensor::max_rel_error(m->gradCellInput, get("grad.c0")) < tol);
  int64_t grads = 0;
  for (const auto& [pname, g] : m->namedGradParameters()) {
    INFO("gradient ", pname);
    CHECK(tensor::max_rel_error(g, get("grad." + pname)) < tol);
    ++grads;
  }
  CHECK(grads == static_cast<int64_t>(state.size()));
}

// ---- variable lengths: each sequence alone gives what it gives in the padded batch ----

inline void expect_lengths_match_single(nn::RNNBase& m, const Tensor& x,
                                        const std::vector<int64_t>& lengths) {
  Generator gen(99);
  const int64_t bd = batch_dim(m), td = time_dim(m), batch = x.size(bd), seq = x.size(td);
  const Shape states = {m.numLayers() * m.numDirections(), batch, m.outputDim()};
  const bool lstm = is_lstm(m);
  const Tensor h0 = tensor::uniform(states, -1, 1, gen, DType::Float64);
  const Tensor c0 = tensor::uniform(states, -1, 1, gen, DType::Float64);
  const Tensor R = tensor::uniform(output_shape(m, seq, batch), -1, 1, gen, DType::Float64);
  const Tensor Rh = tensor::uniform(states, -1, 1, gen, DType::Float64);
  const Tensor Rc = tensor::uniform(states, -1, 1, gen, DType::Float64);
  m.sequenceLengths = lengths;
  m.hiddenInput = h0;
  m.cellInput = lstm ? c0 : Tensor();
  m.gradHiddenOutput = Rh;
  m.gradCellOutput = lstm ? Rc : Tensor();
  m.zeroGradParameters();
  const Tensor y = m.forward(x).clone(), hn = m.hiddenOutput.clone();
  const Tensor cn = lstm ? m.cellOutput.clone() : Tensor();
  const Tensor gx = m.backward(x, R).clone(), gh0 = m.gradHiddenInput.clone();
  const Tensor gc0 = lstm ? m.gradCellInput.clone() : Tensor();
  std::vector<Tensor> gw;
  for (auto& g : m.gradParameters()) gw.push_back(g.clone());
  m.sequenceLengths.clear();
  m.zeroGradParameters();
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t len = lengths[static_cast<size_t>(b)];
    INFO(m.str(), " sequence ", b, " of length ", len);
    auto one = [&](const Tensor& t, int64_t dim) { return t.narrow(dim, b, 1); };
    const Tensor xb = one(x, bd).narrow(td, 0, len).clone();
    m.hiddenInput = one(h0, 1).clone();
    m.cellInput = lstm ? one(c0, 1).clone() : Tensor();
    m.gradHiddenOutput = one(Rh, 1).clone();
    m.gradCellOutput = lstm ? one(Rc, 1).clone() : Tensor();
    const Tensor yb = m.forward(xb).clone();
    CHECK(tensor::max_abs_diff(yb, one(y, bd).narrow(td, 0, len)) < 1e-12);
    if (len < seq) CHECK(one(y, bd).narrow(td, len, seq - len).abs().max().item() == 0);
    CHECK(tensor::max_abs_diff(m.hiddenOutput, one(hn, 1)) < 1e-12);
    if (lstm) CHECK(tensor::max_abs_diff(m.cellOutput, one(cn, 1)) < 1e-12);
    const Tensor gxb = m.backward(xb, one(R, bd).narrow(td, 0, len).clone());
    CHECK(tensor::max_abs_diff(gxb, one(gx, bd).narrow(td, 0, len)) < 1e-12);
    if (len < seq) CHECK(one(gx, bd).narrow(td, len, seq - len).abs().max().item() == 0);
    CHECK(tensor::max_abs_diff(m.gradHiddenInput, one(gh0, 1)) < 1e-12);
    if (lstm) CHECK(tensor::max_abs_diff(m.gradCellInput, one(gc0, 1)) < 1e-12);
  }
  const auto summed = m.gradParameters();
  REQUIRE(summed.size() == gw.size());
  for (size_t k = 0; k < gw.size(); ++k) {
    INFO(m.str(), " parameter gradient ", k, " summed over the sequences");
    CHECK(tensor::max_abs_diff(summed[k], gw[k]) < 1e-10);
  }
  m.hiddenInput = m.cellInput = m.gradHiddenOutput = m.gradCellOutput = Tensor();
}

// ---- dropout: nothing changes with p = 0 or in evaluate mode ----

inline void expect_dropout_exact(const Factory& make, bool bidirectional) {
  Generator gen(5);
  auto a = make(3, 4, 3, bidirectional, false, 0.0);
  auto b = make(3, 4, 3, bidirectional, false, 0.6);
  b->loadStateDict(a->stateDict());
  const Tensor x = tensor::uniform(input_shape(*a, 5, 2), -1, 1, gen);
  const Tensor ya = a->forward(x).clone();
  b->evaluate();
  CHECK(tensor::max_abs_diff(b->forward(x), ya) == 0);
  CHECK(tensor::max_abs_diff(b->hiddenOutput, a->hiddenOutput) == 0);
  a->evaluate();
  CHECK(tensor::max_abs_diff(a->forward(x), ya) == 0);  // p = 0: training and evaluate agree
  b->train();
  CHECK(tensor::max_abs_diff(b->forward(x), ya) > 1e-3);  // and p > 0 does change the training output
  // evaluate mode keeps nothing for backward, so backward says so
  b->evaluate();
  b->forward(x);
  CHECK_THROWS_WITH_AS(b->backward(x, ya), doctest::Contains("expected a forward() in training mode"),
                       tensor::Error);
}

// ---- rememberStates: two chunks give what the whole sequence gives ----

inline void expect_remember_states_ok(const Factory& make, bool bidirectional) {
  Generator gen(8);
  auto m = make(3, 4, 2, bidirectional, false, 0.0);
  m->to(DType::Float64);
  const Tensor x = tensor::uniform(input_shape(*m, 6, 2), -1, 1, gen, DType::Float64);
  const Tensor whole = m->forward(x).clone(), hn = m->hiddenOutput.clone();
  m->rememberStates(true);
  CHECK(m->remembersStates());
  m->resetStates();  // the whole sequence's final state must not be carried into the first chunk
  const Tensor first = m->forward(x.narrow(0, 0, 4)).clone();
  const Tensor second = m->forward(x.narrow(0, 4, 2)).clone();
  if (!bidirectional) {  // the reverse direction does not see the future chunk: only unidirectional splits
    CHECK(tensor::max_abs_diff(first, whole.narrow(0, 0, 4)) < 1e-12);
    CHECK(tensor::max_abs_diff(second, whole.narrow(0, 4, 2)) < 1e-12);
    CHECK(tensor::max_abs_diff(m->hiddenOutput, hn) < 1e-12);
  }
  // the carried state is the previous final state, and backward gives its gradient
  CHECK(m->hiddenInput.defined());
  const Tensor carried = m->hiddenInput.clone();
  m->backward(x.narrow(0, 4, 2), second);
  CHECK(m->gradHiddenInput.sizes() == carried.sizes());
  m->resetStates();
  CHECK_FALSE(m->hiddenInput.defined());
  CHECK_FALSE(m->hiddenOutput.defined());
  const Tensor fresh = m->forward(x).clone();
  CHECK(tensor::max_abs_diff(fresh, whole) < 1e-12);  // from zeros again
  // a batch of another size after carrying: a clear error, then resetStates() fixes it
  CHECK_THROWS_WITH_AS(m->forward(tensor::uniform(input_shape(*m, 2, 3), -1, 1, gen, DType::Float64)),
                       doctest::Contains("resetStates()"), tensor::Error);
  m->resetStates();
  CHECK(m->forward(tensor::uniform(input_shape(*m, 2, 3), -1, 1, gen, DType::Float64)).size(1) == 3);
  m->rememberStates(false);
  // carrying by hand without a copy (hiddenInput shares the final state's storage) is the same
  m->resetStates();
  m->forward(x.narrow(0, 0, 4));
  m->hiddenInput = m->hiddenOutput;
  m->cellInput = m->cellOutput;
  CHECK(tensor::max_abs_diff(m->forward(x.narrow(0, 4, 2)), second) < 1e-12);
  m->resetStates();
}

// ---- model files, printing, accumulation ----

inline void expect_model_file_ok(const std::shared_ptr<nn::RNNBase>& m, const Tensor& x) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("cudnn_nn_test_rnn_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string stem = (dir / m->type_name()).string();
  m->evaluate();
  m->resetStates();  // the loaded module starts from zero states (states are not saved)
  const Tensor y = m->forward(x).clone();
  nn::save_model(*m, stem);
  const nn::ModulePtr back = nn::load_model(stem);
  auto r = std::dynamic_pointer_cast<nn::RNNBase>(back);
  REQUIRE(r);
  CHECK(back->type_name() == m->type_name());
  CHECK(back->str() == m->str());
  CHECK(back->config().dump() == m->config().dump());
  CHECK(r->persist == m->persist);
  CHECK(r->remembersStates() == m->remembersStates());
  CHECK(tensor::max_abs_diff(back->forward(x), y) == 0);
  std::error_code ec;
  fs::remove_all(dir, ec);
  m->train();
}

// ---- float32 (VecMath's exp/tanh) agrees with float64 ----

inline void expect_float32_matches_float64(const Factory& make) {
  Generator gen(4);
  auto a = make(6, 5, 2, true, false, 0.0), b = make(6, 5, 2, true, false, 0.0);
  b->to(DType::Float64);
  b->loadStateDict(a->stateDict());
  a->sequenceLengths = b->sequenceLengths = {7, 3, 5};
  const Tensor x = tensor::uniform(input_shape(*a, 7, 3), -2, 2, gen);
  const Tensor gy = tensor::uniform(output_shape(*a, 7, 3), -1, 1, gen);
  CHECK(tensor::max_abs_diff(a->forward(x), b->forward(x.to(DType::Float64))) < 1e-5);
  CHECK(tensor::max_abs_diff(a->hiddenOutput, b->hiddenOutput) < 1e-5);
  a->zeroGradParameters();
  b->zeroGradParameters();
  CHECK(tensor::max_abs_diff(a->backward(x, gy), b->backward(x.to(DType::Float64), gy.to(DType::Float64))) <
        1e-5);
  CHECK(tensor::max_abs_diff(a->gradHiddenInput, b->gradHiddenInput) < 1e-5);
  const auto ga = a->gradParameters(), gb = b->gradParameters();
  for (size_t k = 0; k < ga.size(); ++k) CHECK(tensor::max_abs_diff(ga[k], gb[k]) < 1e-4);
}

// ---- errors name the module, the contract and what came ----

inline void expect_errors_ok(const Factory& make) {
  using doctest::Contains;
  using tensor::Error;
  auto m = make(3, 4, 2, false, false, 0.0);
  const std::string t = m->type_name();
  const int64_t S = 2 * m->numDirections();  // numLayers * numDirections
  CHECK_THROWS_WITH_AS(m->forward(tensor::zeros({5, 3})),
                       (t + "::updateOutput: expected input of [seqLength x batch x 3], got [5 x 3]").c_str(),
                       Error);
  CHECK_THROWS_WITH_AS(
      m->forward(tensor::zeros({5, 2, 4})),
      (t + "::updateOutput: expected input of [seqLength x batch x 3], got [5 x 2 x 4]").c_str(), Error);
  CHECK_THROWS_WITH_AS(m->forward(tensor::zeros({5, 2, 3}, DType::Float64)),
                       Contains("expected input of weight_ih_l0's dtype and device (float32 on cpu)"), Error);
  m->hiddenInput = tensor::zeros({S, 3, 4});
  CHECK_THROWS_WITH_AS(
      m->forward(tensor::zeros({5, 2, 3})),
      (t + "::updateOutput: expected hiddenInput of [" + std::to_string(S) +
       " x 2 x 4] (numLayers*numDirections x batch x outputDim), got [" + std::to_string(S) + " x 3 x 4]")
          .c_str(),
      Error);
  m->hiddenInput = Tensor();
  m->cellInput = tensor::zeros({S, 2, 5});
  CHECK_THROWS_WITH_AS(
      m->forward(tensor::zeros({5, 2, 3})),
      Contains(is_lstm(*m) ? "expected cellInput of [" : "expected no cellInput (LSTM only)"), Error);
  m->cellInput = Tensor();
  m->sequenceLengths = {5, 0};
  CHECK_THROWS_WITH_AS(
      m->forward(tensor::zeros({5, 2, 3})),
      (t + "::updateOutput: expected sequenceLengths of 2 entries (one per batch entry) in [1, 5], "
           "got [5, 0]")
          .c_str(),
      Error);
  m->sequenceLengths = {5, 6};
  CHECK_THROWS_WITH_AS(m->forward(tensor::zeros({5, 2, 3})), Contains("got [5, 6]"), Error);
  m->sequenceLengths = {5};
  CHECK_THROWS_WITH_AS(m->forward(tensor::zeros({5, 2, 3})),
                       Contains("expected sequenceLengths of 2 entries"), Error);
  m->sequenceLengths.clear();
  // backward: gradOutput's shape first, then a training forward on this input
  const Tensor x = tensor::zeros({5, 2, 3});
  CHECK_THROWS_WITH_AS(m->backward(x, tensor::zeros({5, 2, 3})),
                       (t + "::updateGradInput: expected gradOutput of [5 x 2 x " +
                        std::to_string(4 * m->numDirections()) + "] (the output's shape), got [5 x 2 x 3]")
                           .c_str(),
                       Error);
  const Tensor gy = tensor::zeros({5, 2, 4 * m->numDirections()});
  CHECK_THROWS_WITH_AS(m->backward(x, gy),
                       Contains((t + "::updateGradInput: expected a forward() in training mode").c_str()),
                       Error);
  m->forward(tensor::zeros({4, 2, 3}));
  CHECK_THROWS_WITH_AS(m->backward(tensor::zeros({5, 2, 3}), gy),
                       Contains("got last forward: training mode, float32 [4 x 2 x 3]"), Error);
  m->forward(x);
  m->gradHiddenOutput = tensor::zeros({S, 2, 5});
  CHECK_THROWS_WITH_AS(m->backward(x, gy),
                       Contains(("expected gradHiddenOutput of [" + std::to_string(S) + " x 2 x 4]").c_str()),
                       Error);
  m->gradHiddenOutput = Tensor();
  CHECK_THROWS_WITH_AS(m->accGradParameters(x, gy),
                       Contains("expected updateGradInput() after the forward first"), Error);
  m->backward(x, gy);
  CHECK(m->gradInput.sizes() == x.sizes());
  // a parameter replaced by hand with a strided view
  const Shape whh = m->params[1].value.sizes();
  m->params[1].value = tensor::zeros({whh[1], whh[0]}).t();
  const std::string whhWanted = "expected weight_hh_l0 of " + tensor::shape_str(whh) + " (contiguous)";
  CHECK_THROWS_WITH_AS(m->forward(x), Contains(whhWanted.c_str()), Error);
  // the constructor
  CHECK_THROWS_WITH_AS(make(0, 4, 1, false, false, 0.0), Contains("expected positive inputDim and outputDim"),
                       Error);
  CHECK_THROWS_WITH_AS(make(3, 4, 0, false, false, 0.0), Contains("expected numLayers in [1, 4096], got 0"), Error);
  CHECK_THROWS_WITH_AS(make(3, 4, 2, false, false, 1.0), Contains("expected dropout in [0, 1)"), Error);
  CHECK_THROWS_WITH_AS(make(3, 4, 2, false, false, std::nan("")), Contains("expected dropout in [0, 1)"),
                       Error);
}

// Names and shapes of the parameters, in PyTorch's state_dict order, and Torch's initialisation.
inline void expect_parameters_ok(const Factory& make) {
  tensor::manual_seed(12);
  auto m = make(5, 16, 2, true, false, 0.0);
  const int64_t G = m->gateCount() * 16, D = m->numDirections();
  std::vector<std::string> names;
  std::vector<Shape> shapes;
  for (int64_t l = 0; l < 2; ++l) {
    for (int64_t d = 0; d < D; ++d) {
      const std::string sfx = "_l" + std::to_string(l) + (d ? "_reverse" : "");
      const int64_t in = l == 0 ? 5 : 16 * D;
      names.insert(names.end(), {"weight_ih" + sfx, "weight_hh" + sfx, "bias_ih" + sfx, "bias_hh" + sfx});
      shapes.insert(shapes.end(), {{G, in}, {G, 16}, {G}, {G}});
    }
  }
  const auto named = m->namedParameters();
  REQUIRE(named.size() == names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    CHECK(named[i].first == names[i]);
    CHECK(named[i].second.sizes() == shapes[i]);
    CHECK(m->params[i].name == names[i]);
    CHECK(m->paramIndex(static_cast<int64_t>(i / (4 * D)), static_cast<int64_t>(i / 4 % D),
                        static_cast<int>(i % 4)) == i);
    // U(-1/sqrt(hidden), 1/sqrt(hidden)) = U(-0.25, 0.25)
    CHECK(named[i].second.abs().max().item() <= 0.25);
  }
  CHECK(m->params[0].value.abs().max().item() > 0.24);
  CHECK(m->gradParameters().size() == names.size());
  m->reset(0.01);
  CHECK(m->params[1].value.abs().max().item() <= 0.01);
}

}  // namespace rnncheck

// RNNTwinChecks.h: what every recurrent twin is checked for (the rows of
// tests/cudnn/test_RNNFamily.cpp), as templates over the nn type and its twin:
//   expect_rnn_family      twin vs nn (float64 reference on the twin's own rounded weights and
//                          inputs): output, final states, gradInput, gradHiddenInput,
//                          gradCellInput and every parameter gradient, over rnn_cases() (1 and
//                          2 layers, bidirectional, batchFirst, initial states and gradients
//                          on the final states, variable lengths, evaluate mode, dropout 0,
//                          persistent kernels asked for) in float32 (TF32 off), float64,
//                          float16 and bfloat16 within TwinTolerance::for_dtype;
//   expect_flat_parameters parameters()/gradParameters() are views into the two flat cuDNN
//                          buffers; an SGD step through parameters() changes what cuDNN
//                          computes; to(dtype) re-views; reset() goes back into the buffer;
//   expect_rnn_lifecycle   steady state (no device malloc), convert both ways (bit-exact),
//                          a model-file round trip, rememberStates, backward after evaluate;
//   expect_rnn_empty_batch an empty batch in both layouts gives nn's empty shapes and gradients.
#pragma once

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "convert/Convert.h"
#include "convert/ModelFile.h"
#include "cudnn/core/Config.h"
#include "nn/RNNBase.h"
#include "nn/SGD.h"
#include "tensor/Cuda.h"
#include "tests/support/ErrorText.h"
#include "tests/support/SteadyState.h"
#include "tests/support/TwinCheck.h"

namespace testing {

struct RNNCase {
  const char* name;
  int64_t inputDim = 5, hidden = 4, layers = 1;
  bool batchFirst = false;
  int64_t seq = 4, batch = 3;
  std::vector<int64_t> lengths = {};  // empty: all seq
  bool states = false;                // initial states in, gradients on the final states
  bool evaluate = false;              // forward in evaluate mode (cuDNN's inference), no backward
  double dropout = 0;
  bool persist = false;
};

inline const std::vector<RNNCase>& rnn_cases() {
  static const std::vector<RNNCase> cases = {
      {"1 layer"},
      {"2 layers", 5, 4, 2},
      {"batchFirst, 2 layers", 5, 4, 2, true},
      {"initial states and gradients on the final states", 5, 4, 2, false, 4, 3, {}, true},
      {"variable lengths", 5, 4, 2, false, 5, 3, {5, 2, 3}, true},
      {"variable lengths, batchFirst", 3, 6, 1, true, 5, 3, {1, 5, 4}, true},
      {"evaluate mode (inference), dropout 0.5", 5, 4, 2, false, 4, 3, {}, true, true, 0.5},
      {"3 layers, dropout 0", 3, 6, 3, false, 6, 2, {}, false, false, 0.0},
      {"persistent kernels asked for", 8, 8, 1, false, 5, 4, {}, true, false, 0, true},
      {"batch of one, odd sizes", 7, 3, 1, false, 3, 1},
  };
  return cases;
}

// Nn or its twin, built from a case (BLSTM/BGRU take no `bidirectional`).
template <class M>
std::shared_ptr<M> make_rnn(const RNNCase& c, bool bidirectional) {
  return std::make_shared<M>(nn::RNNOptions{.inputSize = c.inputDim,
                                            .hiddenSize = c.hidden,
                                            .numLayers = c.layers,
                                            .batchFirst = c.batchFirst,
                                            .dropout = c.dropout,
                                            .bidirectional = bidirectional});
}

template <class M>
constexpr bool takes_bidirectional() {
  return !M::kAlwaysBidirectional;
}

inline void expect_close(const std::string& what, const tensor::Tensor& got, const tensor::Tensor& want,
                         double tol) {
  INFO(what);
  REQUIRE(got.defined() == want.defined());
  if (!want.defined()) return;
  REQUIRE(got.sizes() == want.sizes());
  if (want.numel() == 0) return;
  const tensor::Tensor g = got.to(tensor::Device::cpu(), tensor::DType::Float64);
  CHECK_FALSE(tensor::has_nonfinite(g));
  const double err = tensor::rel_norm_error(g, want.to(tensor::DType::Float64));
  INFO("relative error ", err, " (tolerance ", tol, ")");
  CHECK(err <= tol);
}

// A tensor of `dtype` on the GPU and the same (rounded) values in float64 on the CPU.
inline std::pair<tensor::Tensor, tensor::Tensor> rounded_uniform(const tensor::Shape& s,
                                                                 tensor::Generator& gen,
                                                                 tensor::DType dtype) {
  const tensor::Tensor g =
      tensor::uniform(s, -1, 1, gen, tensor::DType::Float64).to(tensor::Device::cuda(0), dtype);
  return {g, g.to(tensor::Device::cpu(), tensor::DType::Float64)};
}

// The twin (in `dtype` on the GPU) and the nn module (float64, CPU) on the same weights.
template <class Nn, class Cu>
std::pair<std::shared_ptr<Nn>, std::shared_ptr<Cu>> rnn_pair(const RNNCase& c, bool bidirectional,
                                                             tensor::DType dtype) {
  auto ref = make_rnn<Nn>(c, bidirectional);
  auto twin = make_rnn<Cu>(c, bidirectional);
  ref->to(tensor::DType::Float64);
  twin->to(tensor::Device::cuda(0));
  twin->to(dtype);
  twin->loadStateDict(ref->stateDict());
  ref->loadStateDict(twin->stateDict());  // the reference computes on the twin's rounded weights
  ref->zeroGradParameters();
  twin->zeroGradParameters();
  return {ref, twin};
}

template <class Nn, class Cu>
void expect_rnn_twin_matches(const RNNCase& c, bool bidirectional, tensor::DType dtype, TwinTolerance tol,
                             uint64_t seed) {
  using tensor::Tensor;
  INFO(std::string(c.name), " in ", std::string(tensor::name(dtype)), bidirectional ? ", bidirectional" : "",
       " (seed ", seed, ")");
  tensor::manual_seed(seed);
  auto [ref, twin] = rnn_pair<Nn, Cu>(c, bidirectional, dtype);
  CHECK(twin->type_name() == "cudnn" + ref->type_name().substr(2));
  if (c.persist) twin->setPersist(true);
  if (c.evaluate) {
    ref->evaluate();
    twin->evaluate();
  }
  tensor::Generator gen(seed);
  const int64_t T = c.seq, B = c.batch, LD = c.layers * ref->numDirections();
  const bool lstm = ref->mode() == nn::RNNMode::LSTM;
  auto [xg, x] = rounded_uniform(
      c.batchFirst ? tensor::Shape{B, T, c.inputDim} : tensor::Shape{T, B, c.inputDim}, gen, dtype);
  ref->sequenceLengths = c.lengths;
  twin->sequenceLengths = c.lengths;
  if (c.states) {
    auto [hg, h] = rounded_uniform({LD, B, c.hidden}, gen, dtype);
    ref->hiddenInput = h;
    twin->hiddenInput = hg;
    if (lstm) {
      auto [cg, cc] = rounded_uniform({LD, B, c.hidden}, gen, dtype);
      ref->cellInput = cc;
      twin->cellInput = cg;
    }
  }
  const Tensor y = ref->forward(x).clone();
  const Tensor yg = twin->forward(xg).clone();
  CHECK(yg.dtype() == dtype);
  expect_close("output", yg, y, tol.forward);
  expect_close("hiddenOutput", twin->hiddenOutput, ref->hiddenOutput, tol.forward);
  expect_close("cellOutput", twin->cellOutput, ref->cellOutput, tol.forward);
  if (c.evaluate) {
    CHECK_THROWS_WITH_AS(twin->backward(xg, yg), doctest::Contains("expected a forward() in training mode"),
                         tensor::Error);
    return;
  }
  auto [gg, g] = rounded_uniform(y.sizes(), gen, dtype);
  if (c.states) {
    auto [hg, h] = rounded_uniform({LD, B, c.hidden}, gen, dtype);
    ref->gradHiddenOutput = h;
    twin->gradHiddenOutput = hg;
    if (lstm) {
      auto [cg, cc] = rounded_uniform({LD, B, c.hidden}, gen, dtype);
      ref->gradCellOutput = cc;
      twin->gradCellOutput = cg;
    }
  }
  const Tensor gx = ref->backward(x, g).clone();
  const Tensor gxg = twin->backward(xg, gg).clone();
  expect_close("gradInput", gxg, gx, tol.backward);
  expect_close("gradHiddenInput", twin->gradHiddenInput, ref->gradHiddenInput, tol.backward);
  expect_close("gradCellInput", twin->gradCellInput, ref->gradCellInput, tol.backward);
  const auto rp = ref->namedGradParameters(), tp = twin->namedGradParameters();
  REQUIRE(rp.size() == tp.size());
  for (size_t i = 0; i < rp.size(); ++i) {
    CHECK(tp[i].first == rp[i].first);
    expect_close("grad of " + rp[i].first, tp[i].second, rp[i].second, tol.backward);
  }
}

// Every case in every dtype (and both directions where the type takes one).
template <class Nn, class Cu>
void expect_rnn_family(uint64_t seed) {
  cudnn::ScopedConfig flags("allow_tf32=false");
  const tensor::DType dtypes[] = {tensor::DType::Float32, tensor::DType::Float64, tensor::DType::Float16,
                                  tensor::DType::BFloat16};
  for (const RNNCase& c : rnn_cases()) {
    for (bool bidirectional : {false, true}) {
      if (bidirectional && !takes_bidirectional<Nn>()) continue;
      for (tensor::DType dt : dtypes) {
        expect_rnn_twin_matches<Nn, Cu>(c, bidirectional, dt, TwinTolerance::for_dtype(dt), seed++);
      }
    }
  }
}

template <class Nn, class Cu>
void expect_flat_parameters(uint64_t seed) {
  using tensor::Tensor;
  cudnn::ScopedConfig flags("allow_tf32=false");
  const RNNCase c{"2 layers", 5, 4, 2};
  tensor::manual_seed(seed);
  auto [ref, twin] = rnn_pair<Nn, Cu>(c, true, tensor::DType::Float32);
  const Tensor w = twin->weightBuffer(), dw = twin->gradWeightBuffer();
  REQUIRE(w.defined());
  REQUIRE(dw.defined());
  CHECK(w.dim() == 1);
  CHECK(w.is_cuda());
  CHECK_FALSE(w.shares_storage(dw));
  int64_t total = 0;
  for (const auto& [name, p] : twin->namedParameters()) {
    INFO(name);
    CHECK(p.shares_storage(w));
    total += p.numel();
  }
  for (const Tensor& g : twin->gradParameters()) CHECK(g.shares_storage(dw));
  CHECK(total <= w.numel());

  // an optimizer step through parameters() is what cuDNN computes with next
  tensor::Generator gen(seed);
  auto [xg, x] = rounded_uniform({c.seq, c.batch, c.inputDim}, gen, tensor::DType::Float32);
  const Tensor before = twin->forward(xg).clone();
  auto [gg, g] = rounded_uniform(before.sizes(), gen, tensor::DType::Float32);
  twin->backward(xg, gg);
  nn::SGD sgd(*twin, 0.5);
  sgd.step();
  const Tensor after = twin->forward(xg).clone();
  CHECK(tensor::max_abs_diff(after, before) > 1e-3);
  ref->loadStateDict(twin->stateDict());
  expect_close("output after an SGD step", after, ref->forward(x), 1e-5);
  for (const Tensor& p : twin->parameters()) CHECK(p.shares_storage(w));  // still the same buffer

  // reset() and plain assignment: the next forward puts the new values into the buffer
  twin->reset(0.2);
  twin->params[1].value = tensor::full(twin->params[1].value.sizes(), 0.05, tensor::DType::Float32);
  const Tensor y = twin->forward(xg).clone();
  for (const Tensor& p : twin->parameters()) CHECK(p.shares_storage(w));
  CHECK(twin->params[1].value.is_cuda());
  CHECK(tensor::max_abs_diff(twin->params[1].value.cpu(),
                             tensor::full(twin->params[1].value.sizes(), 0.05, tensor::DType::Float32)) == 0);
  ref->loadStateDict(twin->stateDict());
  expect_close("output after reset()", y, ref->forward(x), 1e-5);

  // to(dtype) makes new buffers of that dtype, with the values (float32 -> float64 exactly)
  const auto state32 = twin->stateDict();
  twin->to(tensor::DType::Float64);
  const Tensor w64 = twin->weightBuffer();
  CHECK(w64.dtype() == tensor::DType::Float64);
  for (const auto& [name, p] : twin->namedParameters()) {
    INFO(name);
    CHECK(p.shares_storage(w64));
    CHECK(p.dtype() == tensor::DType::Float64);
    CHECK(tensor::max_abs_diff(p, state32.at(name)) == 0);
  }
  for (const Tensor& gr : twin->gradParameters()) CHECK(gr.shares_storage(twin->gradWeightBuffer()));
}

// An empty batch (Note [Empty RNN batches] in cudnn/ops/rnn.cpp), time-first and batchFirst, with
// and without initial states and gradients on the final states, 2 layers in both directions where
// the type takes them: the twin gives nn's empty output, final states, gradInput and state
// gradients, and leaves the parameter gradients as they were (scale 1 and 0.5), in training and
// evaluation. An empty sequence (seqLength 0) is the same error on both, naming each module.
template <class Nn, class Cu>
void expect_rnn_empty_batch(uint64_t seed) {
  using tensor::Tensor;
  const tensor::Device gpu = tensor::Device::cuda(0);
  tensor::Generator gen(seed);
  for (bool batchFirst : {false, true}) {
    for (bool states : {false, true}) {
      for (bool training : {true, false}) {
        const RNNCase c{"empty batch", 3, 4, 2, batchFirst, 5, 0, {}, states};
        const std::string what = std::string(batchFirst ? "batchFirst" : "time-first") +
                                 (states ? ", with states" : "") + (training ? ", training" : ", evaluation");
        INFO(what);
        tensor::manual_seed(seed);
        auto [ref, twin] = rnn_pair<Nn, Cu>(c, true, tensor::DType::Float32);
        if (!training) {
          ref->evaluate();
          twin->evaluate();
        }
        const int64_t LD = c.layers * ref->numDirections();
        const bool lstm = ref->mode() == nn::RNNMode::LSTM;
        std::vector<Tensor> before;
        for (size_t i = 0; i < ref->params.size(); ++i) {  // not zero: "unchanged" is seen
          const Tensor g = tensor::uniform(ref->params[i].grad.sizes(), -1, 1, gen, tensor::DType::Float32);
          ref->params[i].grad.copy_(g);
          twin->params[i].grad.copy_(g);
          before.push_back(g.to(tensor::DType::Float64));
        }
        const tensor::Shape xs = batchFirst ? tensor::Shape{0, c.seq, c.inputDim} : tensor::Shape{c.seq, 0, c.inputDim};
        const tensor::Shape ss{LD, 0, c.hidden};
        if (states) {
          ref->hiddenInput = tensor::zeros(ss, tensor::DType::Float64);
          twin->hiddenInput = tensor::zeros(ss, tensor::DType::Float32, gpu);
          if (lstm) {
            ref->cellInput = tensor::zeros(ss, tensor::DType::Float64);
            twin->cellInput = tensor::zeros(ss, tensor::DType::Float32, gpu);
          }
        }
        const Tensor x = tensor::zeros(xs, tensor::DType::Float64), xg = tensor::zeros(xs, tensor::DType::Float32, gpu);
        const Tensor y = ref->forward(x).clone();
        Tensor yg;
        REQUIRE(error_of([&] { yg = twin->forward(xg).clone(); }) == "(no error)");
        CHECK(y.sizes() == tensor::Shape{batchFirst ? 0 : c.seq, batchFirst ? c.seq : 0, c.hidden * 2});
        expect_close("output", yg, y, 0);
        expect_close("hiddenOutput", twin->hiddenOutput, ref->hiddenOutput, 0);
        expect_close("cellOutput", twin->cellOutput, ref->cellOutput, 0);
        if (!training) continue;
        if (states) {
          ref->gradHiddenOutput = tensor::zeros(ss, tensor::DType::Float64);
          twin->gradHiddenOutput = tensor::zeros(ss, tensor::DType::Float32, gpu);
          if (lstm) {
            ref->gradCellOutput = tensor::zeros(ss, tensor::DType::Float64);
            twin->gradCellOutput = tensor::zeros(ss, tensor::DType::Float32, gpu);
          }
        }
        for (double scale : {1.0, 0.5}) {
          INFO("scale ", scale);
          const Tensor gx = ref->backward(x, tensor::zeros(y.sizes(), tensor::DType::Float64), scale).clone();
          Tensor gxg;
          REQUIRE(error_of([&] {
                    gxg = twin->backward(xg, tensor::zeros(y.sizes(), tensor::DType::Float32, gpu), scale).clone();
                  }) == "(no error)");
          CHECK(gxg.sizes() == xs);
          expect_close("gradInput", gxg, gx, 0);
          expect_close("gradHiddenInput", twin->gradHiddenInput, ref->gradHiddenInput, 0);
          expect_close("gradCellInput", twin->gradCellInput, ref->gradCellInput, 0);
          for (size_t i = 0; i < ref->params.size(); ++i) {
            INFO(ref->params[i].name);
            CHECK(tensor::max_abs_diff(ref->params[i].grad, before[i]) == 0);
            CHECK(tensor::max_abs_diff(twin->params[i].grad.to(tensor::Device::cpu(), tensor::DType::Float64),
                                       before[i]) == 0);
          }
        }
      }
    }
  }
  // seqLength 0: nn refuses it (a sequence has a first step); the twin refuses it alike
  for (bool batchFirst : {false, true}) {
    const RNNCase c{"empty sequence", 3, 4, 1, batchFirst, 0, 2};
    auto [ref, twin] = rnn_pair<Nn, Cu>(c, false, tensor::DType::Float32);
    const tensor::Shape xs = batchFirst ? tensor::Shape{2, 0, 3} : tensor::Shape{0, 2, 3};
    const std::string e = error_of([&] { ref->forward(tensor::zeros(xs, tensor::DType::Float64)); });
    const std::string eg = error_of([&] { twin->forward(tensor::zeros(xs, tensor::DType::Float32, gpu)); });
    INFO(e, " / ", eg);
    CHECK(e.find(ref->type_name() + "::updateOutput: expected seqLength >= 1") == 0);
    CHECK(eg.find(twin->type_name() + "::updateOutput: expected seqLength >= 1") == 0);
    CHECK(eg.substr(twin->type_name().size()) == e.substr(ref->type_name().size()));
  }
}

struct RNNTempDir {
  std::filesystem::path dir;
  RNNTempDir() {
    dir = std::filesystem::temp_directory_path() / ("cudnn_nn_test_rnn_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  ~RNNTempDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

template <class Nn, class Cu>
void expect_rnn_lifecycle(uint64_t seed) {
  using tensor::Tensor;
  const tensor::Device gpu = tensor::Device::cuda(0);
  const RNNCase c{"2 layers", 5, 4, 2, false, 6, 3};
  tensor::Generator gen(seed);
  tensor::manual_seed(seed);

  SUBCASE("steady state: no device allocation once warm, variable lengths and states included") {
    auto twin = make_rnn<Cu>(c, false);
    twin->to(gpu);
    twin->sequenceLengths = {6, 3, 5};
    twin->hiddenInput = tensor::uniform({c.layers * twin->numDirections(), c.batch, c.hidden}, -1, 1, gen,
                                        tensor::DType::Float32, gpu);
    expect_no_steady_state_allocations(
        *twin, tensor::uniform({c.seq, c.batch, c.inputDim}, -1, 1, gen, tensor::DType::Float32, gpu));
  }

  SUBCASE("convert both ways keeps the weights bit-exact") {
    expect_convert_roundtrip(make_rnn<Nn>(c, false),
                             tensor::uniform({c.seq, c.batch, c.inputDim}, -1, 1, gen));
  }

  SUBCASE("model file round trip") {
    auto twin = make_rnn<Cu>(c, false);
    twin->to(gpu);
    twin->setPersist(true);
    twin->evaluate();
    const Tensor x = tensor::uniform({c.seq, c.batch, c.inputDim}, -1, 1, gen, tensor::DType::Float32, gpu);
    const Tensor y = twin->forward(x).clone();
    RNNTempDir tmp;
    const std::string path = (tmp.dir / "rnn").string();
    nn::save_model(*twin, path);
    nn::ModulePtr loaded = nn::load_model(path);
    CHECK(loaded->type_name() == twin->type_name());
    CHECK(loaded->str() == twin->str());
    CHECK_FALSE(loaded->isTraining());
    loaded->to(gpu);
    CHECK(tensor::max_abs_diff(loaded->forward(x), y) <= 1e-6);
    auto asTwin = std::dynamic_pointer_cast<Cu>(loaded);
    REQUIRE(asTwin);
    CHECK(asTwin->persist);
    for (const Tensor& p : asTwin->parameters()) CHECK(p.shares_storage(asTwin->weightBuffer()));
  }

  SUBCASE("rememberStates carries the final states into the next forward, as nn does") {
    cudnn::ScopedConfig flags("allow_tf32=false");
    auto [ref, twin] = rnn_pair<Nn, Cu>(c, false, tensor::DType::Float64);
    ref->rememberStates(true);
    twin->rememberStates(true);
    for (int step = 0; step < 3; ++step) {
      auto [xg, x] = rounded_uniform({c.seq, c.batch, c.inputDim}, gen, tensor::DType::Float64);
      expect_close("output of step " + std::to_string(step), twin->forward(xg), ref->forward(x), 1e-10);
      expect_close("hiddenOutput of step " + std::to_string(step), twin->hiddenOutput, ref->hiddenOutput,
                   1e-10);
    }
    twin->resetStates();
    ref->resetStates();
    auto [xg, x] = rounded_uniform({c.seq, c.batch, c.inputDim}, gen, tensor::DType::Float64);
    expect_close("output after resetStates", twin->forward(xg), ref->forward(x), 1e-10);
  }

  SUBCASE("backward after an evaluate-mode forward, and accGradParameters alone, are clear errors") {
    auto twin = make_rnn<Cu>(c, false);
    twin->to(gpu);
    const Tensor x = tensor::uniform({c.seq, c.batch, c.inputDim}, -1, 1, gen, tensor::DType::Float32, gpu);
    twin->evaluate();
    const Tensor y = twin->forward(x).clone();
    CHECK_THROWS_WITH_AS(twin->backward(x, y), doctest::Contains("expected a forward() in training mode"),
                         tensor::Error);
    twin->train();
    twin->forward(x);
    CHECK_THROWS_WITH_AS(twin->accGradParameters(x, y), doctest::Contains("expected updateGradInput()"),
                         tensor::Error);
    CHECK_THROWS_WITH_AS(twin->forward(x.cpu()), doctest::Contains("expected input on a CUDA device"),
                         tensor::Error);
    CHECK_THROWS_WITH_AS(twin->forward(x.to(tensor::DType::Float64)), doctest::Contains("dtype"),
                         tensor::Error);
    // updateGradInput twice after one forward (Torch allows it): the same answer
    twin->forward(x);
    const Tensor g1 = twin->updateGradInput(x, y).clone();
    const Tensor g2 = twin->updateGradInput(x, y).clone();
    CHECK(tensor::max_abs_diff(g1, g2) == 0);
    // an error of the op below (cudnn::RNNBlock) names the module, the method and the input
    auto dropping = make_rnn<Cu>(RNNCase{"dropout", 5, 4, 2, false, 6, 3, {}, false, false, 0.5}, false);
    dropping->to(gpu);
    const Tensor yd = dropping->forward(x).clone();
    dropping->updateGradInput(x, yd);
    const std::string e = error_of([&] { dropping->updateGradInput(x, yd); });
    INFO(e);
    CHECK(e.find(dropping->type_name() + "::updateGradInput: input float32 [6 x 3 x 5] on cuda:0: "
                 "cudnn::RNNBlock::backward_data: expected one backward per forward with dropout") == 0);
  }
}

}  // namespace testing

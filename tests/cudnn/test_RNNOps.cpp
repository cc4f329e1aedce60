// test_RNNOps.cpp: cudnn::RNNBlock, Theano's functional RNN op: splitParams gives the gates
// in Theano's documented order (an nn module's weights written gate by gate through it give
// the nn module's outputs), apply() and grad() against nn's forward and backward for every
// cell, both directions, 1 and 2 layers; skip input mode; the errors.
#include <doctest/doctest.h>

#include <memory>

#include "cudnn/core/Config.h"
#include "cudnn/ops/rnn.h"
#include "nn/GRU.h"
#include "nn/LSTM.h"
#include "nn/RNNReLU.h"
#include "nn/RNNTanh.h"
#include "tests/support/RNNTwinChecks.h"

using namespace tensor;
using namespace testing;

namespace {

const Device gpu = Device::cuda(0);

std::shared_ptr<nn::RNNBase> make_nn(nn::RNNMode mode, int64_t I, int64_t H, int64_t L, bool bidirectional) {
  const nn::RNNOptions options{.inputSize = I, .hiddenSize = H, .numLayers = L, .bidirectional = bidirectional};
  switch (mode) {
    case nn::RNNMode::ReLU:
      return std::make_shared<nn::RNNReLU>(options);
    case nn::RNNMode::Tanh:
      return std::make_shared<nn::RNNTanh>(options);
    case nn::RNNMode::LSTM:
      return std::make_shared<nn::LSTM>(options);
    case nn::RNNMode::GRU:
      return std::make_shared<nn::GRU>(options);
  }
  return nullptr;
}

}  // namespace

TEST_CASE("cudnn::RNNBlock: gates in Theano's order, apply and grad equal nn's forward and backward") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  Generator gen(3201);
  const int64_t I = 3, H = 4, T = 5, B = 2;
  for (nn::RNNMode mode : {nn::RNNMode::ReLU, nn::RNNMode::Tanh, nn::RNNMode::LSTM, nn::RNNMode::GRU}) {
    for (int64_t L : {1, 2}) {
      for (bool bidirectional : {false, true}) {
        INFO(std::string(nn::rnn_mode_name(mode)), ", ", L, " layers",
             bidirectional ? ", bidirectional" : "");
        manual_seed(3202);
        auto ref = make_nn(mode, I, H, L, bidirectional);
        ref->to(DType::Float64);
        const int64_t D = ref->numDirections(), G = ref->gateCount();
        cudnn::RNNBlock block(
            DType::Float64, H, L, mode, cudnn::RNNInputMode::Linear,
            bidirectional ? cudnn::RNNDirection::Bidirectional : cudnn::RNNDirection::Unidirectional);
        const int64_t n = block.param_size(I);
        int64_t total = 0;
        for (const auto& p : ref->params) total += p.value.numel();
        CHECK(n >= total);
        const Tensor params = zeros({n}, DType::Float64, gpu);
        // Theano's order: the input-side linear layers (relu/tanh: 1; lstm: i, f, g, o; gru: r, z,
        // n), then the recurrent ones in the same order; our weights hold gate g in rows [gH, (g+1)H)
        for (int64_t l = 0; l < L; ++l) {
          for (int64_t d = 0; d < D; ++d) {
            const auto gates = block.split_params(params, l * D + d, I);
            REQUIRE(static_cast<int64_t>(gates.size()) == 2 * G);
            const size_t i = ref->paramIndex(l, d, 0);
            for (int64_t g = 0; g < G; ++g) {
              CHECK(gates[g].weight.sizes() == Shape{H, l == 0 ? I : H * D});
              CHECK(gates[G + g].weight.sizes() == Shape{H, H});
              Tensor(gates[g].weight).copy_(ref->params[i].value.narrow(0, g * H, H));
              Tensor(gates[G + g].weight).copy_(ref->params[i + 1].value.narrow(0, g * H, H));
              Tensor(gates[g].bias).copy_(ref->params[i + 2].value.narrow(0, g * H, H));
              Tensor(gates[G + g].bias).copy_(ref->params[i + 3].value.narrow(0, g * H, H));
            }
          }
        }
        const Tensor x = uniform({T, B, I}, -1, 1, gen, DType::Float64);
        const Tensor h0 = uniform({L * D, B, H}, -1, 1, gen, DType::Float64);
        const Tensor c0 = uniform({L * D, B, H}, -1, 1, gen, DType::Float64);
        const bool lstm = mode == nn::RNNMode::LSTM;
        ref->hiddenInput = h0;
        if (lstm) ref->cellInput = c0;
        const Tensor y = ref->forward(x).clone();
        const auto out = block.apply(params, x.to(gpu), h0.to(gpu), lstm ? c0.to(gpu) : Tensor());
        REQUIRE(out.size() == 3);
        expect_close("y", out[0], y, 1e-12);
        expect_close("hy", out[1], ref->hiddenOutput, 1e-12);
        CHECK(out[2].defined() == lstm);
        if (lstm) expect_close("cy", out[2], ref->cellOutput, 1e-12);

        const Tensor dy = uniform(y.sizes(), -1, 1, gen, DType::Float64);
        const Tensor dhy = uniform({L * D, B, H}, -1, 1, gen, DType::Float64);
        const Tensor dcy = uniform({L * D, B, H}, -1, 1, gen, DType::Float64);
        ref->gradHiddenOutput = dhy;
        if (lstm) ref->gradCellOutput = dcy;
        ref->zeroGradParameters();
        const Tensor dx = ref->backward(x, dy).clone();
        const auto grads = block.grad(params, dy.to(gpu), dhy.to(gpu), lstm ? dcy.to(gpu) : Tensor());
        REQUIRE(grads.size() == 4);
        expect_close("dx", grads[0], dx, 1e-11);
        expect_close("dh0", grads[1], ref->gradHiddenInput, 1e-11);
        if (lstm) expect_close("dc0", grads[2], ref->gradCellInput, 1e-11);
        for (int64_t l = 0; l < L; ++l) {
          for (int64_t d = 0; d < D; ++d) {
            const auto gates = block.split_params(grads[3], l * D + d, I);
            const size_t i = ref->paramIndex(l, d, 0);
            for (int64_t g = 0; g < G; ++g) {
              INFO("layer ", l, " direction ", d, " gate ", g);
              expect_close("dW_ih", gates[g].weight, ref->params[i].grad.narrow(0, g * H, H), 1e-11);
              expect_close("dW_hh", gates[G + g].weight, ref->params[i + 1].grad.narrow(0, g * H, H), 1e-11);
              expect_close("db_ih", gates[g].bias, ref->params[i + 2].grad.narrow(0, g * H, H), 1e-11);
              expect_close("db_hh", gates[G + g].bias, ref->params[i + 3].grad.narrow(0, g * H, H), 1e-11);
            }
          }
        }
      }
    }
  }
}

TEST_CASE("cudnn::RNNBlock skip input mode: layer 0 takes x as it is") {
  const int64_t H = 4, T = 3, B = 2;
  Generator gen(3203);
  cudnn::RNNBlock block(DType::Float64, H, 1, nn::RNNMode::Tanh, cudnn::RNNInputMode::Skip);
  const Tensor params = zeros({block.param_size(H)}, DType::Float64, gpu);
  const auto gates = block.split_params(params, 0, H);
  REQUIRE(gates.size() == 2);
  CHECK_FALSE(gates[0].weight.defined());  // no input matrix
  CHECK(gates[1].weight.sizes() == Shape{H, H});
  // recurrent weights and biases zero: y = tanh(x)
  const Tensor x = uniform({T, B, H}, -1, 1, gen, DType::Float64, gpu);
  const auto out = block.apply(params, x, Tensor());
  CHECK(max_abs_diff(out[0], x.tanh()) < 1e-12);
  CHECK_THROWS_WITH_AS(block.param_size(H + 1),
                       doctest::Contains("skip input mode expects inputDim == hidden"), Error);
}

TEST_CASE("cudnn::RNNBlock errors: grad without apply, backward after an inference forward, bad buffers") {
  const int64_t I = 3, H = 4;
  cudnn::RNNBlock block(DType::Float32, H, 1, nn::RNNMode::LSTM);
  const Tensor params = zeros({block.param_size(I)}, DType::Float32, gpu);
  CHECK_THROWS_WITH_AS(block.grad(params, zeros({2, 1, H}, DType::Float32, gpu)),
                       doctest::Contains("apply() first"), Error);
  cudnn::RNNSequence s;
  s.x = zeros({2, 1, I}, DType::Float32, gpu);
  s.training = false;
  Tensor y, hy, cy, dx, dhx, dcx;
  block.forward(params, s, y, hy, cy);
  CHECK(std::string(block.algorithm()) == "standard");
  CHECK_THROWS_WITH_AS(block.backward_data(params, y, Tensor(), Tensor(), dx, dhx, dcx),
                       doctest::Contains("expected a training-mode forward before backward"), Error);
  CHECK_THROWS_WITH_AS(block.split_params(zeros({3}, DType::Float32, gpu), 0, I),
                       doctest::Contains("expected a contiguous float32"), Error);
  CHECK_THROWS_WITH_AS(block.split_params(params, 1, I),
                       doctest::Contains("expected a pseudo-layer in [0, 1)"), Error);
  CHECK_THROWS_WITH_AS(
      block.apply(params, zeros({2, 1, I}, DType::Float32, gpu), zeros({1, 2, H}, DType::Float32, gpu)),
      doctest::Contains("expected h0 of [1 x 1 x 4]"), Error);
  CHECK_THROWS_AS(cudnn::RNNBlock(DType::Int64, H, 1, nn::RNNMode::GRU), Error);
}

TEST_CASE("cudnn::RNNBlock keeps at most conv.cache_limit shapes' plans, the least recently used going first") {
  cudnn::ScopedConfig flags("conv.cache_limit=2");
  const int64_t I = 3, H = 4;
  cudnn::RNNBlock block(DType::Float32, H, 1, nn::RNNMode::GRU);
  const Tensor params = zeros({block.param_size(I)}, DType::Float32, gpu);
  Tensor y, hy, cy;
  auto run = [&](int64_t T) {
    cudnn::RNNSequence s;
    s.x = zeros({T, 1, I}, DType::Float32, gpu);
    s.training = false;
    block.forward(params, s, y, hy, cy);
    return y.size(0);
  };
  for (const int64_t T : {2, 3, 4}) CHECK(run(T) == T);
  CHECK(block.plans() == 2);  // T = 2 went
  CHECK(run(2) == 2);         // made again
  CHECK(block.plans() == 2);
}

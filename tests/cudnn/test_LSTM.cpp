// test_LSTM.cpp: cudnn.LSTM (the LSTM on cuDNN's RNN API) against nn.LSTM, through the
// shared recurrent checks (tests/support/RNNTwinChecks.h), and the persistent kernels on sizes cuDNN takes them
// for.
#include <doctest/doctest.h>

#include "cudnn/LSTM.h"
#include "nn/LSTM.h"
#include "tests/support/RNNTwinChecks.h"

using namespace testing;

TEST_CASE("cudnn.LSTM matches nn.LSTM: output, final states and every gradient, in every dtype") {
  expect_rnn_family<nn::LSTM, cudnn::LSTM>(3600);
}

TEST_CASE("cudnn.LSTM float32 is exact float32 math even where TF32 is allowed (Note [float32 RNN math])") {
  // TF32 rounds the GEMM inputs to 10 mantissa bits (relative error ~1e-3 on hidden 64):
  // float32's tolerances hold only if cuDNN runs FMA math, as it must for RNNs.
  cudnn::ScopedConfig flags("allow_tf32=true");
  const RNNCase c{"2 layers, hidden 64, TF32 allowed", 64, 64, 2, false, 8, 5, {}, true};
  expect_rnn_twin_matches<nn::LSTM, cudnn::LSTM>(c, false, tensor::DType::Float32,
                                                 TwinTolerance::for_dtype(tensor::DType::Float32), 3640);
}

TEST_CASE("cudnn.LSTM parameters are views into one flat cuDNN weight buffer") {
  expect_flat_parameters<nn::LSTM, cudnn::LSTM>(3650);
}

TEST_CASE("cudnn.LSTM steady state, convert, model file, rememberStates and errors") {
  expect_rnn_lifecycle<nn::LSTM, cudnn::LSTM>(3660);
}

TEST_CASE("cudnn.LSTM persistent kernels: used where cuDNN takes them, the standard algorithm otherwise") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  // PyTorch's persistent case: float16, 1 layer, hidden a multiple of 128 (<= 1024)
  const RNNCase c{"persistent, float16, hidden 128", 128, 128, 1, false, 10, 16, {}, true, false, 0, true};
  auto [ref, twin] = rnn_pair<nn::LSTM, cudnn::LSTM>(c, false, tensor::DType::Float16);
  twin->setPersist(true);
  tensor::Generator gen(3690);
  auto [xg, x] = rounded_uniform({c.seq, c.batch, c.inputDim}, gen, tensor::DType::Float16);
  const tensor::Tensor y = ref->forward(x).clone();
  expect_close("output", twin->forward(xg), y, TwinTolerance::for_dtype(tensor::DType::Float16).forward);
  MESSAGE("cudnn.LSTM(128 -> 128) float16 ran the ", std::string(twin->algorithm()), " algorithm");
  CHECK(std::string(twin->algorithm()) == "persist_static");
  auto [gg, g] = rounded_uniform(y.sizes(), gen, tensor::DType::Float16);
  expect_close("gradInput", twin->backward(xg, gg), ref->backward(x, g),
               TwinTolerance::for_dtype(tensor::DType::Float16).backward);
  expect_close("grad of weight_hh_l0", twin->params[1].grad, ref->params[1].grad,
               TwinTolerance::for_dtype(tensor::DType::Float16).backward);
  // variable lengths: cuDNN's persistent kernels take none, so the standard algorithm runs
  twin->sequenceLengths = ref->sequenceLengths = std::vector<int64_t>(16, 10);
  twin->sequenceLengths[3] = ref->sequenceLengths[3] = 4;
  expect_close("output, variable lengths", twin->forward(xg), ref->forward(x),
               TwinTolerance::for_dtype(tensor::DType::Float16).forward);
  CHECK(std::string(twin->algorithm()) == "standard");
  // float64: never persistent
  auto [ref64, twin64] = rnn_pair<nn::LSTM, cudnn::LSTM>(c, false, tensor::DType::Float64);
  twin64->setPersist(true);
  twin64->forward(x.to(tensor::Device::cuda(0)));
  CHECK(std::string(twin64->algorithm()) == "standard");
}

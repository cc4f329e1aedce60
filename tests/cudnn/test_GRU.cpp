// test_GRU.cpp: cudnn.GRU (the GRU on cuDNN's RNN API) against nn.GRU, through the
// shared recurrent checks (tests/support/RNNTwinChecks.h), and variable lengths against running each sequence
// alone.
#include <doctest/doctest.h>

#include "cudnn/GRU.h"
#include "nn/GRU.h"
#include "tests/support/RNNTwinChecks.h"

using namespace testing;

TEST_CASE("cudnn.GRU matches nn.GRU: output, final states and every gradient, in every dtype") {
  expect_rnn_family<nn::GRU, cudnn::GRU>(3700);
}

TEST_CASE("cudnn.GRU parameters are views into one flat cuDNN weight buffer") {
  expect_flat_parameters<nn::GRU, cudnn::GRU>(3750);
}

TEST_CASE("cudnn.GRU steady state, convert, model file, rememberStates and errors") {
  expect_rnn_lifecycle<nn::GRU, cudnn::GRU>(3760);
}

TEST_CASE("cudnn.GRU with variable lengths equals running each sequence alone") {
  using tensor::Tensor;
  cudnn::ScopedConfig flags("allow_tf32=false");
  const tensor::Device gpu = tensor::Device::cuda(0);
  tensor::manual_seed(3790);
  tensor::Generator gen(3791);
  const int64_t T = 6, B = 3, I = 4, H = 5;
  cudnn::GRU twin(I, H, 2, false, 0, true);
  twin.to(gpu);
  twin.to(tensor::DType::Float64);
  const std::vector<int64_t> lengths = {6, 2, 4};
  const Tensor x = tensor::uniform({T, B, I}, -1, 1, gen, tensor::DType::Float64, gpu);
  twin.sequenceLengths = lengths;
  const Tensor y = twin.forward(x).clone(), h = twin.hiddenOutput.clone();
  twin.sequenceLengths.clear();
  for (int64_t b = 0; b < B; ++b) {
    INFO("sequence ", b, " of length ", lengths[b]);
    const Tensor xb = x.narrow(0, 0, lengths[b]).narrow(1, b, 1).contiguous();
    const Tensor yb = twin.forward(xb);
    CHECK(tensor::max_abs_diff(y.narrow(0, 0, lengths[b]).narrow(1, b, 1), yb) < 1e-12);
    CHECK(tensor::max_abs_diff(h.narrow(1, b, 1), twin.hiddenOutput) < 1e-12);
    if (lengths[b] < T)
      CHECK(y.narrow(0, lengths[b], T - lengths[b]).narrow(1, b, 1).abs().max().item() == 0);
  }
}

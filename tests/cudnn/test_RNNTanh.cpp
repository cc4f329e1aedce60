// test_RNNTanh.cpp: cudnn.RNNTanh (the tanh RNN on cuDNN's RNN API) against nn.RNNTanh, through the
// shared recurrent checks (tests/support/RNNTwinChecks.h).
#include <doctest/doctest.h>

#include "cudnn/RNNTanh.h"
#include "nn/RNNTanh.h"
#include "tests/support/RNNTwinChecks.h"

using namespace testing;

TEST_CASE("cudnn.RNNTanh matches nn.RNNTanh: output, final states and every gradient, in every dtype") {
  expect_rnn_family<nn::RNNTanh, cudnn::RNNTanh>(3500);
}

TEST_CASE("cudnn.RNNTanh parameters are views into one flat cuDNN weight buffer") {
  expect_flat_parameters<nn::RNNTanh, cudnn::RNNTanh>(3550);
}

TEST_CASE("cudnn.RNNTanh steady state, convert, model file, rememberStates and errors") {
  expect_rnn_lifecycle<nn::RNNTanh, cudnn::RNNTanh>(3560);
}

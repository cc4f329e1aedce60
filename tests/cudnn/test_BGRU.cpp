// test_BGRU.cpp: cudnn.BGRU (the bidirectional GRU on cuDNN's RNN API) against nn.BGRU, through the
// shared recurrent checks (tests/support/RNNTwinChecks.h).
#include <doctest/doctest.h>

#include "cudnn/BGRU.h"
#include "nn/BGRU.h"
#include "tests/support/RNNTwinChecks.h"

using namespace testing;

TEST_CASE("cudnn.BGRU matches nn.BGRU: output, final states and every gradient, in every dtype") {
  expect_rnn_family<nn::BGRU, cudnn::BGRU>(3900);
}

TEST_CASE("cudnn.BGRU parameters are views into one flat cuDNN weight buffer") {
  expect_flat_parameters<nn::BGRU, cudnn::BGRU>(3950);
}

TEST_CASE("cudnn.BGRU steady state, convert, model file, rememberStates and errors") {
  expect_rnn_lifecycle<nn::BGRU, cudnn::BGRU>(3960);
}

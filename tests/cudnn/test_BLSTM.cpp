// test_BLSTM.cpp: cudnn.BLSTM (the bidirectional LSTM on cuDNN's RNN API) against nn.BLSTM, through the
// shared recurrent checks (tests/support/RNNTwinChecks.h).
#include <doctest/doctest.h>

#include "cudnn/BLSTM.h"
#include "nn/BLSTM.h"
#include "tests/support/RNNTwinChecks.h"

using namespace testing;

TEST_CASE("cudnn.BLSTM matches nn.BLSTM: output, final states and every gradient, in every dtype") {
  expect_rnn_family<nn::BLSTM, cudnn::BLSTM>(3800);
}

TEST_CASE("cudnn.BLSTM parameters are views into one flat cuDNN weight buffer") {
  expect_flat_parameters<nn::BLSTM, cudnn::BLSTM>(3850);
}

TEST_CASE("cudnn.BLSTM steady state, convert, model file, rememberStates and errors") {
  expect_rnn_lifecycle<nn::BLSTM, cudnn::BLSTM>(3860);
}

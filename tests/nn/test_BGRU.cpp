// test_BGRU.cpp: nn.BGRU (the bidirectional GRU) against PyTorch, finite differences (tests/nn/RNNCheck.h),
// variable lengths against single sequences, dropout, rememberStates, model files, errors.
#include <doctest/doctest.h>

#include "nn/BGRU.h"
#include "tests/nn/RNNCheck.h"

using namespace tensor;

namespace {

std::shared_ptr<nn::RNNBase> make(int64_t in, int64_t hidden, int64_t layers, bool bi, bool batchFirst,
                                  double p) {
  (void)bi;
  return std::make_shared<nn::BGRU>(in, hidden, layers, batchFirst, p);
}

}  // namespace

TEST_CASE("BGRU matches PyTorch (float64: outputs, final states, every gradient)") {
  for (const char* name : {"gru_bi", "gru_varlen"}) rnncheck::expect_matches_pytorch(name, make);
}

TEST_CASE("BGRU gradients: layers, directions, batchFirst, states, lengths, dropout") {
  rnncheck::expect_all_gradients_ok(make, true);
}

TEST_CASE("BGRU variable lengths: each sequence alone gives the padded batch's numbers") {
  Generator gen(17);
  for (bool batchFirst : {false, true}) {
    auto m = make(3, 4, 2, true, batchFirst, 0.0);
    m->to(DType::Float64);
    const Tensor x = uniform(rnncheck::input_shape(*m, 6, 4), -1, 1, gen, DType::Float64);
    rnncheck::expect_lengths_match_single(*m, x, {3, 6, 1, 4});
  }
}

TEST_CASE("BGRU dropout (exact with p = 0 and in evaluate mode) and rememberStates") {
  rnncheck::expect_dropout_exact(make, true);
  rnncheck::expect_remember_states_ok(make, true);
}

TEST_CASE("BGRU parameters, accumulation, model file, printing, errors") {
  rnncheck::expect_parameters_ok(make);
  rnncheck::expect_float32_matches_float64(make);
  Generator gen(2);
  auto m = make(3, 4, 2, true, true, 0.25);
  m->to(DType::Float64);
  testing::expect_accumulation_ok(*m, uniform({2, 5, 3}, -1, 1, gen, DType::Float64));
  testing::expect_prints_type(*m);
  m->setPersist(true);
  m->rememberStates(true);
  rnncheck::expect_model_file_ok(m, uniform({2, 5, 3}, -1, 1, gen, DType::Float64));
  CHECK(m->str() == "nn.BGRU(3 -> 4, 2 layers, batchFirst, dropout 0.25, persist)");
  CHECK(m->bidirectional);
  CHECK(m->config().find("bidirectional") == nullptr);
  rnncheck::expect_errors_ok(make);
}

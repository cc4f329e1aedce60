// test_LSTM.cpp: nn.LSTM (gates i, f, g, o) against PyTorch, finite differences (tests/nn/RNNCheck.h),
// variable lengths against single sequences, dropout, rememberStates, model files, errors; a PyTorch
// state_dict file loads straight in.
#include <doctest/doctest.h>

#include "nn/LSTM.h"
#include "tests/nn/RNNCheck.h"

using namespace tensor;

namespace {

std::shared_ptr<nn::RNNBase> make(int64_t in, int64_t hidden, int64_t layers, bool bi, bool batchFirst,
                                  double p) {
  return std::make_shared<nn::LSTM>(in, hidden, layers, batchFirst, p, bi);
}

}  // namespace

TEST_CASE("LSTM matches PyTorch (float64: outputs, final states, every gradient)") {
  for (const char* name : {"lstm_deep", "lstm_bi", "lstm_varlen", "lstm_file"})
    rnncheck::expect_matches_pytorch(name, make);
}

TEST_CASE("LSTM gradients: layers, directions, batchFirst, states, lengths, dropout") {
  rnncheck::expect_all_gradients_ok(make);
}

TEST_CASE("LSTM variable lengths: each sequence alone gives the padded batch's numbers") {
  Generator gen(17);
  for (bool batchFirst : {false, true}) {
    auto m = make(3, 4, 2, false, batchFirst, 0.0);
    m->to(DType::Float64);
    const Tensor x = uniform(rnncheck::input_shape(*m, 6, 4), -1, 1, gen, DType::Float64);
    rnncheck::expect_lengths_match_single(*m, x, {3, 6, 1, 4});
  }
}

TEST_CASE("LSTM dropout (exact with p = 0 and in evaluate mode) and rememberStates") {
  rnncheck::expect_dropout_exact(make, false);
  rnncheck::expect_remember_states_ok(make, false);
}

TEST_CASE("LSTM parameters, accumulation, model file, printing, errors") {
  rnncheck::expect_parameters_ok(make);
  rnncheck::expect_float32_matches_float64(make);
  Generator gen(2);
  auto m = make(3, 4, 2, false, true, 0.25);
  m->to(DType::Float64);
  testing::expect_accumulation_ok(*m, uniform({2, 5, 3}, -1, 1, gen, DType::Float64));
  testing::expect_prints_type(*m);
  m->setPersist(true);
  m->rememberStates(true);
  rnncheck::expect_model_file_ok(m, uniform({2, 5, 3}, -1, 1, gen, DType::Float64));
  CHECK(m->str() == "nn.LSTM(3 -> 4, 2 layers, batchFirst, dropout 0.25, persist)");
  CHECK(nn::LSTM(10, 20, 2, false, 0.5).str() == "nn.LSTM(10 -> 20, 2 layers, dropout 0.5)");
  rnncheck::expect_errors_ok(make);
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
  CHECK_THROWS_WITH_AS(
      nn::load_weights(wrong, std::string(CUDNN_NN_TEST_DATA) + "/nn/lstm_state_dict.safetensors"),
      doctest::Contains("'weight_hh_l0' has shape [16 x 4], expected [12 x 3]"), Error);
}

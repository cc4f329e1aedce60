// test_RNNFamily.cpp: the six recurrent twins (cudnn.RNNReLU, RNNTanh, LSTM, GRU, BLSTM, BGRU) against
// their nn modules, as one table (as tests/nn/test_RNNFamily.cpp is for nn): each row names the type
// pair and the seed of its cases; every row goes through the same checks (tests/support/RNNTwinChecks.h):
// output, final states and every gradient in every dtype; parameters as views into one flat cuDNN
// weight buffer; steady state, convert, model file, rememberStates, errors and empty batches. A new recurrent
// twin is one row; the types' own cases follow the table (dropout between layers, float32 math
// where TF32 is allowed, persistent kernels, variable lengths against each sequence alone).
#include <doctest/doctest.h>

#include <cmath>
#include <functional>

#include "cudnn/BGRU.h"
#include "cudnn/BLSTM.h"
#include "cudnn/GRU.h"
#include "cudnn/LSTM.h"
#include "cudnn/RNNReLU.h"
#include "cudnn/RNNTanh.h"
#include "nn/BGRU.h"
#include "nn/BLSTM.h"
#include "nn/GRU.h"
#include "nn/LSTM.h"
#include "nn/RNNReLU.h"
#include "nn/RNNTanh.h"
#include "tests/support/RNNTwinChecks.h"

using namespace testing;

namespace {

struct RNNTwin {
  const char* name;
  // the twin comparison's; the flat-buffer check takes seed + 50, the lifecycle seed + 60, the empty
  // batch seed + 70
  uint64_t seed;
  std::function<void(uint64_t)> family, flatParameters, lifecycle, emptyBatch;
};

template <class Nn, class Cu>
RNNTwin row(const char* name, uint64_t seed) {
  return {name,
          seed,
          [](uint64_t s) { expect_rnn_family<Nn, Cu>(s); },
          [](uint64_t s) { expect_flat_parameters<Nn, Cu>(s); },
          [](uint64_t s) { expect_rnn_lifecycle<Nn, Cu>(s); },
          [](uint64_t s) { expect_rnn_empty_batch<Nn, Cu>(s); }};
}

const std::vector<RNNTwin>& rnns() {
  static const std::vector<RNNTwin> rows = {
      row<nn::RNNReLU, cudnn::RNNReLU>("RNNReLU", 3400), row<nn::RNNTanh, cudnn::RNNTanh>("RNNTanh", 3500),
      row<nn::LSTM, cudnn::LSTM>("LSTM", 3600),          row<nn::GRU, cudnn::GRU>("GRU", 3700),
      row<nn::BLSTM, cudnn::BLSTM>("BLSTM", 3800),       row<nn::BGRU, cudnn::BGRU>("BGRU", 3900),
  };
  return rows;
}

}  // namespace

TEST_CASE("recurrent twins match nn: output, final states and every gradient, in every dtype") {
  for (const RNNTwin& t : rnns()) {
    INFO(t.name);
    t.family(t.seed);
  }
}

TEST_CASE("recurrent twins: parameters are views into one flat cuDNN weight buffer") {
  for (const RNNTwin& t : rnns()) {
    INFO(t.name);
    t.flatParameters(t.seed + 50);
  }
}

TEST_CASE("recurrent twins: steady state, convert, model file, rememberStates and errors") {
  for (const RNNTwin& t : rnns()) {
    INFO(t.name);
    t.lifecycle(t.seed + 60);
  }
}

TEST_CASE("recurrent twins: an empty batch gives nn's empty shapes; parameter gradients stay as they were") {
  for (const RNNTwin& t : rnns()) {
    INFO(t.name);
    t.emptyBatch(t.seed + 70);
  }
}

// ---- the types' own cases ----

TEST_CASE(
    "cudnn.RNNReLU dropout between layers: drops a fraction p, scales by 1/(1-p), reproducible from its "
    "seed") {
  using tensor::Tensor;
  cudnn::ScopedConfig flags("allow_tf32=false");  // TF32 would round the kept 0.5 / 0.7 in layer 1's GEMM
  const tensor::Device gpu = tensor::Device::cuda(0);
  const double p = 0.3, level = 0.5;
  const int64_t H = 32, T = 16, B = 64;
  // layer 0 outputs relu(bias) = level everywhere; layer 1 is the identity on its (dropped) input
  cudnn::RNNReLU twin(H, H, 2, false, p);
  twin.to(gpu);
  for (auto& prm : twin.params) prm.value.zero_();
  twin.params[twin.paramIndex(0, 0, 2)].value.fill_(level);
  Tensor eye = tensor::zeros({H, H});
  for (int64_t i = 0; i < H; ++i) eye.set({i, i}, 1.0);
  twin.params[twin.paramIndex(1, 0, 0)].value.copy_(eye);
  const Tensor x = tensor::zeros({T, B, H}, tensor::DType::Float32, gpu);
  twin.seedDropout(42);
  const Tensor y1 = twin.forward(x).cpu();
  const double n = static_cast<double>(y1.numel());
  const double kept = level / (1 - p);
  const Tensor zero = y1.eq(0.0).to(tensor::DType::Float64),
               scaled = y1.sub(kept).abs().lt(1e-6).to(tensor::DType::Float64);
  const double zeros = zero.sum().item(), scaledCount = scaled.sum().item();
  INFO("fraction dropped ", zeros / n, " of ", n, ", p = ", p);
  CHECK(zeros + scaledCount == n);  // every element is dropped or scaled by 1/(1-p)
  CHECK(std::abs(zeros / n - p) < 5 * std::sqrt(p * (1 - p) / n));
  // the state advances: a new mask; re-seeding gives the first one back
  const Tensor y2 = twin.forward(x).cpu();
  CHECK(tensor::max_abs_diff(y1, y2) > 0);
  twin.seedDropout(7);
  twin.forward(x);
  twin.seedDropout(42);
  CHECK(tensor::max_abs_diff(twin.forward(x).cpu(), y1) == 0);
  // gradients follow the mask: d output / d bias_ih_l0 is nonzero only through kept units
  twin.zeroGradParameters();
  const Tensor y3 = twin.forward(x).clone();
  twin.backward(x, tensor::ones({T, B, H}, tensor::DType::Float32, gpu));
  const double keptCount = y3.cpu().ne(0.0).to(tensor::DType::Float64).sum().item();
  // layer 1 is the identity after the mask and ReLU passes everything positive through:
  // sum over bias_ih_l0's gradient = (kept units) / (1 - p) (layer 0 has no recurrence)
  CHECK(twin.params[twin.paramIndex(0, 0, 2)].grad.cpu().to(tensor::DType::Float64).sum().item() ==
        doctest::Approx(keptCount / (1 - p)).epsilon(1e-4));
  // evaluate mode: no dropout
  twin.evaluate();
  CHECK(tensor::max_abs_diff(twin.forward(x).cpu(), tensor::full({T, B, H}, level)) < 1e-7);
}

TEST_CASE("cudnn.LSTM float32 follows allow_tf32: TF32 tensor cores when allowed, exact FMA math when not") {
  // Note [float32 RNN math]: TF32 rounds the GEMM inputs to 10 mantissa bits (relative error
  // ~1e-3 on hidden 64), so allowed it holds TF32's tolerance (the convolutions'), and off it
  // holds float32's; the two runs must differ, or the flag changed nothing.
  const RNNCase c{"2 layers, hidden 64", 64, 64, 2, false, 8, 5, {}, true};
  {
    cudnn::ScopedConfig flags("allow_tf32=true");
    expect_rnn_twin_matches<nn::LSTM, cudnn::LSTM>(c, false, tensor::DType::Float32, TwinTolerance{5e-3, 1e-2}, 3640);
  }
  {
    cudnn::ScopedConfig flags("allow_tf32=false");
    expect_rnn_twin_matches<nn::LSTM, cudnn::LSTM>(c, false, tensor::DType::Float32,
                                                   TwinTolerance::for_dtype(tensor::DType::Float32), 3640);
  }
  auto [ref, twin] = rnn_pair<nn::LSTM, cudnn::LSTM>(c, false, tensor::DType::Float32);
  tensor::Generator gen(3641);
  const tensor::Tensor x = tensor::uniform({c.seq, c.batch, c.inputDim}, -1, 1, gen).to(tensor::Device::cuda(0));
  tensor::Tensor tf32, fma;
  {
    cudnn::ScopedConfig flags("allow_tf32=true");
    tf32 = twin->forward(x).clone();
  }
  {
    cudnn::ScopedConfig flags("allow_tf32=false");
    fma = twin->forward(x).clone();
  }
  CHECK(tensor::max_abs_diff(tf32.cpu(), fma.cpu()) > 0);
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

TEST_CASE("cudnn.GRU with variable lengths equals running each sequence alone") {
  using tensor::Tensor;
  cudnn::ScopedConfig flags("allow_tf32=false");
  const tensor::Device gpu = tensor::Device::cuda(0);
  tensor::manual_seed(3790);
  tensor::Generator gen(3791);
  const int64_t T = 6, B = 3, I = 4, H = 5;
  nn::RNNOptions options;
  options.inputSize = I, options.hiddenSize = H, options.numLayers = 2, options.bidirectional = true;
  cudnn::GRU twin(options);
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
    if (lengths[b] < T) CHECK(y.narrow(0, lengths[b], T - lengths[b]).narrow(1, b, 1).abs().max().item() == 0);
  }
}

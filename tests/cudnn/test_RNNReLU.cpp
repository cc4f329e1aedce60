// test_RNNReLU.cpp: cudnn.RNNReLU (the ReLU RNN on cuDNN's RNN API) against nn.RNNReLU, through the
// shared recurrent checks (tests/support/RNNTwinChecks.h), and cuDNN's dropout between layers checked
// statistically.
#include <doctest/doctest.h>

#include <cmath>

#include "cudnn/RNNReLU.h"
#include "nn/RNNReLU.h"
#include "tests/support/RNNTwinChecks.h"

using namespace testing;

TEST_CASE("cudnn.RNNReLU matches nn.RNNReLU: output, final states and every gradient, in every dtype") {
  expect_rnn_family<nn::RNNReLU, cudnn::RNNReLU>(3400);
}

TEST_CASE("cudnn.RNNReLU parameters are views into one flat cuDNN weight buffer") {
  expect_flat_parameters<nn::RNNReLU, cudnn::RNNReLU>(3450);
}

TEST_CASE("cudnn.RNNReLU steady state, convert, model file, rememberStates and errors") {
  expect_rnn_lifecycle<nn::RNNReLU, cudnn::RNNReLU>(3460);
}

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

// test_Padding.cpp: Padding (Torch's along one dimension, before or after, with value, index
// and nInputDim) and the spatial paddings (zero with cropping, reflection, replication):
// closed-form cases, PyTorch's F.pad outputs and input gradients
// (tests/data/nn/staples_reference.safetensors, scripts/make_staples_reference.py), gradients,
// state round trips, printing, NaN and errors.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include "nn/Padding.h"
#include "nn/SpatialReflectionPadding.h"
#include "nn/SpatialReplicationPadding.h"
#include "nn/SpatialZeroPadding.h"
#include "tensor/Safetensors.h"
#include "tests/support/GradCheck.h"

using namespace tensor;
using namespace testing;

TEST_CASE("Padding appends for pad > 0 and prepends for pad < 0, with value, index and nInputDim") {
  const Tensor x = arange(6, DType::Float64).view({2, 3}).add(1.0);
  nn::Padding after(1, 2, 0, -1.5);
  CHECK(after.forward(x).sizes() == Shape{2, 5});
  CHECK(after.output.to_vector<double>() == std::vector<double>{1, 2, 3, -1.5, -1.5, 4, 5, 6, -1.5, -1.5});
  nn::Padding before(1, -1);
  CHECK(before.forward(x).to_vector<double>() == std::vector<double>{0, 1, 2, 3, 0, 4, 5, 6});
  // index: that many input elements stay beyond the padding
  CHECK(nn::Padding(1, 1, 0, 9, 1).forward(x).to_vector<double>() == std::vector<double>{1, 2, 9, 3, 4, 5, 9, 6});
  CHECK(nn::Padding(1, -1, 0, 9, 1).forward(x).to_vector<double>() == std::vector<double>{1, 9, 2, 3, 4, 9, 5, 6});
  // nInputDim 1: a [2 x 3] input is a batch of [3] samples, so dim 0 is the samples' first
  CHECK(nn::Padding(0, 1, 1).forward(x).sizes() == Shape{2, 4});
  CHECK(nn::Padding(0, 1, 1).forward(x.select(0, 0)).sizes() == Shape{4});
  CHECK(nn::Padding(-2, 1).forward(x).sizes() == Shape{3, 3});
  const Tensor g = arange(10, DType::Float64).view({2, 5});
  CHECK(after.backward(x, g).to_vector<double>() == std::vector<double>{0, 1, 2, 5, 6, 7});
  nn::Padding mid(1, 2, 0, 0, 1);
  mid.forward(x);
  CHECK(mid.backward(x, g).to_vector<double>() == std::vector<double>{0, 1, 4, 5, 6, 9});
}

TEST_CASE("Padding gradients, state round trip, printing and errors") {
  Generator gen(91);
  for (int64_t pad : {3, -2}) {
    nn::Padding p(1, pad, 0, 0.5, 1);
    expect_gradients_ok(p, uniform({2, 3, 2}, -1, 1, gen, DType::Float64));
  }
  nn::Padding a(0, -2, 2, 0.25, 1), b(0, -2, 2, 0.25, 1);
  expect_state_roundtrip_ok(a, b, uniform({3, 4, 2}, -1, 1, gen));
  expect_prints_type(a);
  CHECK(a.str() == "nn.Padding(0, -2, nInputDim 2, value 0.25, index 1)");
  CHECK(nn::Padding(1, 2).str() == "nn.Padding(1, 2)");
  CHECK_THROWS_WITH_AS(nn::Padding(2, 1).forward(zeros({2, 5})),
                       "nn.Padding::updateOutput: expected an input with dimension 2, got [2 x 5]", Error);
  CHECK_THROWS_WITH_AS(nn::Padding(1, 1, 0, 0, 6).forward(zeros({2, 5})),
                       "nn.Padding::updateOutput: expected index 6 to lie in dimension 1 of size 5, got input [2 x 5]",
                       Error);
  nn::Padding ok(1, 1);
  ok.forward(zeros({2, 4}));
  CHECK_THROWS_WITH_AS(
      ok.backward(zeros({2, 4}), zeros({2, 4})),
      "nn.Padding::updateGradInput: expected gradOutput of the output's shape [2 x 5] (input [2 x 4]), "
      "got [2 x 4]",
      Error);
}

TEST_CASE("spatial paddings: closed form on a 3 x 3 plane") {
  const Tensor x = arange(9, DType::Float64).view({1, 1, 3, 3});
  nn::SpatialReflectionPadding r(2, 1, 1, 0);
  const Tensor yr = r.forward(x);
  CHECK(yr.sizes() == Shape{1, 1, 4, 6});
  // row 0 mirrors row 1; columns: 2 1 | 0 1 2 | 1
  CHECK(yr.to_vector<double>() ==
        std::vector<double>{5, 4, 3, 4, 5, 4, 2, 1, 0, 1, 2, 1, 5, 4, 3, 4, 5, 4, 8, 7, 6, 7, 8, 7});
  nn::SpatialReplicationPadding p(1, 0, 0, 1);
  CHECK(p.forward(x).to_vector<double>() == std::vector<double>{0, 0, 1, 2, 3, 3, 4, 5, 6, 6, 7, 8, 6, 6, 7, 8});
  nn::SpatialZeroPadding z(1, -1, -1, 0);  // one column added left, one cut right, the top row cut
  CHECK(z.forward(x).to_vector<double>() == std::vector<double>{0, 3, 4, 0, 6, 7});
  nn::SpatialZeroPadding same(1);
  CHECK(same.pad_r == 1);
  CHECK(same.pad_t == 1);
  CHECK(same.pad_b == 1);
  CHECK(same.forward(x.select(0, 0)).sizes() == Shape{1, 5, 5});
  // the corner of a replication gathers its whole corner block
  const Tensor g = ones({1, 1, 4, 4}, DType::Float64);
  CHECK(p.backward(x, g).to_vector<double>() == std::vector<double>{2, 1, 1, 2, 1, 1, 4, 2, 2});
  CHECK(r.backward(x, ones({1, 1, 4, 6}, DType::Float64)).to_vector<double>() ==
        std::vector<double>{1, 3, 2, 2, 6, 4, 1, 3, 2});
}

TEST_CASE("spatial paddings match PyTorch's F.pad, forward and backward") {
  const auto file = load_safetensors(std::string(CUDNN_NN_TEST_DATA) + "/nn/staples_reference.safetensors");
  const auto get = [&](const std::string& key) {
    REQUIRE(file.tensors.count(key));
    return file.tensors.at(key);
  };
  const std::pair<std::string, std::shared_ptr<nn::SpatialPaddingBase>> cases[] = {
      {"reflect_4d", std::make_shared<nn::SpatialReflectionPadding>(2, 1, 3, 0)},
      {"reflect_3d", std::make_shared<nn::SpatialReflectionPadding>(1, 3, 2, 2)},
      {"replicate_4d", std::make_shared<nn::SpatialReplicationPadding>(3, 1, 0, 2)},
      {"replicate_3d", std::make_shared<nn::SpatialReplicationPadding>(2, 2, 4, 1)},
      {"zero_crop_4d", std::make_shared<nn::SpatialZeroPadding>(2, -1, -1, 3)},
  };
  for (const auto& [name, m] : cases) {
    INFO(name);
    const Tensor x = get(name + ".input");
    CHECK(max_abs_diff(m->forward(x), get(name + ".output")) <= 1e-12);
    CHECK(max_abs_diff(m->backward(x, get(name + ".grad_output")), get(name + ".grad_input")) <= 1e-12);
    // float32, and a non-contiguous gradOutput
    const Tensor gy = get(name + ".grad_output");
    const Tensor gyT = gy.transpose(-1, -2).contiguous().transpose(-1, -2);
    REQUIRE_FALSE(gyT.is_contiguous());
    m->to(DType::Float32);
    CHECK(max_abs_diff(m->forward(x.to(DType::Float32)), get(name + ".output")) <= 1e-5);
    CHECK(max_abs_diff(m->backward(x.to(DType::Float32), gyT.to(DType::Float32)), get(name + ".grad_input")) <= 1e-5);
  }
}

TEST_CASE("spatial paddings: gradients, state round trip, printing, NaN and errors") {
  Generator gen(92);
  nn::SpatialReflectionPadding r(2, 0, 1, 2);
  expect_gradients_ok(r, uniform({2, 2, 3, 4}, -1, 1, gen, DType::Float64));
  nn::SpatialReplicationPadding p(3, 1, 0, 2);
  expect_gradients_ok(p, uniform({2, 2, 3, 2}, -1, 1, gen, DType::Float64));
  nn::SpatialZeroPadding z(-1, 2, 1, -1);
  expect_gradients_ok(z, uniform({2, 3, 4}, -1, 1, gen, DType::Float64));
  nn::SpatialReflectionPadding a(1, 2, 0, 1), b(1, 2, 0, 1);
  expect_state_roundtrip_ok(a, b, uniform({2, 2, 3, 3}, -1, 1, gen));
  expect_prints_type(a);
  CHECK(a.str() == "nn.SpatialReflectionPadding(l=1, r=2, t=0, b=1)");
  CHECK(z.str() == "nn.SpatialZeroPadding(l=-1, r=2, t=1, b=-1)");
  // a NaN reaches the outputs that read it and the gradient of the inputs they read
  Tensor x = zeros({1, 1, 3, 3}, DType::Float64);
  x.set({0, 0, 0, 1}, std::numeric_limits<double>::quiet_NaN());
  const Tensor y = r.forward(x);
  int64_t nans = 0;
  for (double v : y.to_vector<double>()) nans += std::isnan(v);
  CHECK(nans == 4);  // its column (two rows of it, one mirrored) and its mirror image two columns left
  CHECK_THROWS_WITH_AS(
      r.forward(zeros({2, 3})),
      "nn.SpatialReflectionPadding::updateOutput: expected 3D [C x H x W] or 4D [N x C x H x W] input, "
      "got [2 x 3]",
      Error);
  CHECK_THROWS_WITH_AS(r.forward(zeros({1, 2, 2, 5})),
                       "nn.SpatialReflectionPadding::updateOutput: expected pads (l=2, r=0, t=1, b=2) smaller than the "
                       "input's height and width, got input [1 x 2 x 2 x 5]",
                       Error);
  CHECK_THROWS_WITH_AS(nn::SpatialZeroPadding(-2, -1, 0, 0).forward(zeros({1, 3, 3})),
                       "nn.SpatialZeroPadding::updateOutput: expected an output of at least 1 x 1 from pads (l=-2, "
                       "r=-1, t=0, b=0), got input [1 x 3 x 3] and output [1 x 3 x 0]",
                       Error);
  p.forward(zeros({1, 2, 3, 3}));
  CHECK_THROWS_WITH_AS(
      p.backward(zeros({1, 2, 3, 3}), zeros({1, 2, 3, 3})),
      "nn.SpatialReplicationPadding::updateGradInput: expected gradOutput of the output's shape [1 x 2 "
      "x 5 x 7] (input [1 x 2 x 3 x 3]), got [1 x 2 x 3 x 3]",
      Error);
}

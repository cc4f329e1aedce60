// test_UpSampling.cpp: SpatialUpSamplingNearest and SpatialUpSamplingBilinear (align_corners
// true and false, from a scale or a size, up and down): closed-form cases, PyTorch's
// F.interpolate outputs and input gradients (tests/data/nn/staples_reference.safetensors,
// scripts/make_staples_reference.py), gradients, state round trips, printing and errors.
#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "nn/SpatialUpSamplingBilinear.h"
#include "nn/SpatialUpSamplingNearest.h"
#include "tensor/Safetensors.h"
#include "tests/support/GradCheck.h"

using namespace tensor;
using namespace testing;
using Bilinear = nn::SpatialUpSamplingBilinear;

TEST_CASE("SpatialUpSamplingNearest repeats each pixel into a block; backward sums the block") {
  const Tensor x = arange(4, DType::Float64).view({1, 2, 2});
  nn::SpatialUpSamplingNearest up(2);
  CHECK(up.forward(x).to_vector<double>() == std::vector<double>{0, 0, 1, 1, 0, 0, 1, 1, 2, 2, 3, 3, 2, 2, 3, 3});
  const Tensor g = arange(16, DType::Float64).view({1, 4, 4});
  CHECK(up.backward(x, g).to_vector<double>() == std::vector<double>{10, 18, 42, 50});
}

TEST_CASE("SpatialUpSamplingBilinear: Torch's corner-aligned grid, and PyTorch's pixel areas") {
  const Tensor x = arange(2, DType::Float64).view({1, 1, 1, 2});
  Bilinear aligned(2);  // (W - 1) 2 + 1 = 3 columns: 0, 0.5, 1
  CHECK(aligned.forward(x).sizes() == Shape{1, 1, 1, 3});
  CHECK(aligned.output.to_vector<double>() == std::vector<double>{0, 0.5, 1});
  Bilinear areas(2, false);  // 2 x 4; columns at (o + 1/2) / 2 - 1/2: 0 (clamped), 0.25, 0.75, 1 (last)
  CHECK(areas.forward(x).sizes() == Shape{1, 1, 2, 4});
  Bilinear row(Bilinear::Size{1, 4}, false);
  CHECK(row.forward(x).to_vector<double>() == std::vector<double>{0, 0.25, 0.75, 1});
  CHECK(row.backward(x, ones({1, 1, 1, 4}, DType::Float64)).to_vector<double>() == std::vector<double>{2, 2});
  CHECK(Bilinear(Bilinear::Size{3, 5}).forward(x).sizes() == Shape{1, 1, 3, 5});
}

TEST_CASE("the up-samplings match PyTorch's F.interpolate, forward and backward") {
  const auto file = load_safetensors(std::string(CUDNN_NN_TEST_DATA) + "/nn/staples_reference.safetensors");
  const auto get = [&](const std::string& key) {
    REQUIRE(file.tensors.count(key));
    return file.tensors.at(key);
  };
  const std::pair<std::string, std::shared_ptr<nn::SpatialUpSamplingBase>> cases[] = {
      {"nearest_x2", std::make_shared<nn::SpatialUpSamplingNearest>(2)},
      {"nearest_x3_3d", std::make_shared<nn::SpatialUpSamplingNearest>(3)},
      {"bilinear_ac_x3", std::make_shared<Bilinear>(3)},
      {"bilinear_ac_size", std::make_shared<Bilinear>(Bilinear::Size{7, 3})},
      {"bilinear_ac_row", std::make_shared<Bilinear>(Bilinear::Size{3, 7}, true)},
      {"bilinear_x2", std::make_shared<Bilinear>(2, false)},
      {"bilinear_size", std::make_shared<Bilinear>(Bilinear::Size{7, 4}, false)},
      {"bilinear_size_3d", std::make_shared<Bilinear>(Bilinear::Size{9, 7}, false)},
  };
  for (const auto& [name, m] : cases) {
    INFO(name);
    const Tensor x = get(name + ".input");
    CHECK(max_abs_diff(m->forward(x), get(name + ".output")) <= 1e-12);
    CHECK(max_abs_diff(m->backward(x, get(name + ".grad_output")), get(name + ".grad_input")) <= 1e-12);
    const Tensor gyT = get(name + ".grad_output").transpose(-1, -2).contiguous().transpose(-1, -2);
    m->to(DType::Float32);
    CHECK(max_abs_diff(m->forward(x.to(DType::Float32)), get(name + ".output")) <= 1e-5);
    CHECK(max_abs_diff(m->backward(x.to(DType::Float32), gyT.to(DType::Float32)), get(name + ".grad_input")) <= 1e-5);
  }
}

TEST_CASE("the up-samplings: gradients, state round trip, printing and errors") {
  Generator gen(93);
  nn::SpatialUpSamplingNearest n(3);
  expect_gradients_ok(n, uniform({2, 2, 2, 3}, -1, 1, gen, DType::Float64));
  for (bool align : {true, false}) {
    INFO("align_corners ", align);
    Bilinear up(2, align), size(Bilinear::Size{5, 2}, align);
    expect_gradients_ok(up, uniform({2, 2, 3, 2}, -1, 1, gen, DType::Float64));
    expect_gradients_ok(size, uniform({2, 3, 4}, -1, 1, gen, DType::Float64));
  }
  nn::SpatialUpSamplingNearest a(2), b(2);
  expect_state_roundtrip_ok(a, b, uniform({2, 2, 3, 3}, -1, 1, gen));
  Bilinear c(Bilinear::Size{4, 7}, false), d(Bilinear::Size{4, 7}, false);
  expect_state_roundtrip_ok(c, d, uniform({2, 2, 3, 3}, -1, 1, gen));
  expect_prints_type(a);
  expect_prints_type(c);
  CHECK(a.str() == "nn.SpatialUpSamplingNearest(2)");
  CHECK(c.str() == "nn.SpatialUpSamplingBilinear(4x7, align_corners=false)");
  CHECK(Bilinear(3).str() == "nn.SpatialUpSamplingBilinear(3)");
  CHECK_THROWS_WITH_AS(nn::SpatialUpSamplingNearest(0), "nn.SpatialUpSamplingNearest: expected scale >= 1, got 0",
                       Error);
  CHECK_THROWS_WITH_AS(Bilinear(Bilinear::Size{0, 3}),
                       "nn.SpatialUpSamplingBilinear: expected an output size of at least 1 x 1, got 0 x 3", Error);
  CHECK_THROWS_WITH_AS(
      a.forward(zeros({2, 3})),
      "nn.SpatialUpSamplingNearest::updateOutput: expected 3D [C x H x W] or 4D [N x C x H x W] input, "
      "got [2 x 3]",
      Error);
  CHECK_THROWS_WITH_AS(a.forward(zeros({2, 3, 0, 2})),
                       "nn.SpatialUpSamplingNearest::updateOutput: expected planes of at least 1 x 1, got input [2 x 3 "
                       "x 0 x 2]",
                       Error);
  c.forward(zeros({1, 2, 3, 3}));
  CHECK_THROWS_WITH_AS(
      c.backward(zeros({1, 2, 3, 3}), zeros({1, 2, 3, 3})),
      "nn.SpatialUpSamplingBilinear::updateGradInput: expected gradOutput of the output's shape [1 x 2 "
      "x 4 x 7] (input [1 x 2 x 3 x 3]), got [1 x 2 x 3 x 3]",
      Error);
}

// test_SpatialDilatedConvolution.cpp
#include <doctest/doctest.h>

#include "nn/SpatialDilatedConvolution.h"
#include "tests/support/GradCheck.h"
#include "tests/support/ConvReference.h"

using namespace tensor;
using namespace testing;

namespace {

struct Config {
  int64_t nIn, nOut, kW, kH, dW, dH, padW, padH, dilationW, dilationH, batch, iH, iW;
};

nn::SpatialDilatedConvolution make(const Config& c) {
  return nn::SpatialDilatedConvolution(c.nIn, c.nOut, c.kW, c.kH, c.dW, c.dH, c.padW, c.padH, c.dilationW,
                                       c.dilationH);
}

convref::Params params_of(const nn::SpatialDilatedConvolution& m) {
  return {{m.dH, m.dW}, {m.padH, m.padW}, {m.dilationH, m.dilationW}, {}, m.groups};
}

// dilation 1 (plain), square and not, with stride and padding, kernels wider than the
// undilated input, batch 1, odd sizes
const std::vector<Config> configs = {
    {2, 3, 3, 3, 1, 1, 0, 0, 2, 2, 2, 7, 7}, {3, 2, 3, 2, 1, 2, 2, 1, 3, 2, 1, 9, 8},
    {2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 2, 5, 6}, {1, 4, 3, 3, 2, 1, 2, 2, 2, 4, 3, 7, 6},
    {3, 3, 5, 1, 1, 1, 0, 0, 2, 1, 2, 3, 11},
};

}  // namespace

TEST_CASE("SpatialDilatedConvolution forward matches a hand computation") {
  // a 2x2 kernel with dilation 2 reads the corners of each 3x3 window
  nn::SpatialDilatedConvolution m(1, 1, 2, 2, 1, 1, 0, 0, 2, 2);
  m.weight.copy_(from_vector<float>({1, 2, 3, 4}, {1, 1, 2, 2}));
  m.bias.zero_();
  const Tensor x = arange(16).view({1, 4, 4});
  // output (0,0): x[0,0] + 2 x[0,2] + 3 x[2,0] + 4 x[2,2] = 0 + 4 + 24 + 40
  const Tensor y = m.forward(x);
  CHECK(y.sizes() == Shape{1, 2, 2});
  CHECK(y.to_vector<float>() == std::vector<float>{68, 78, 108, 118});
}

TEST_CASE("SpatialDilatedConvolution forward and gradients against the direct loop") {
  Generator gen(20261204);
  INFO("data seed 20261204");
  for (const Config& c : configs) {
    auto m = make(c);
    INFO(m.str(), " input ", c.batch, "x", c.nIn, "x", c.iH, "x", c.iW);
    const Tensor x = uniform({c.batch, c.nIn, c.iH, c.iW}, -1, 1, gen);
    const Tensor ref = convref::conv(x, m.weight, m.bias, params_of(m));
    REQUIRE(m.forward(x).sizes() == ref.sizes());
    CHECK(max_abs_diff(m.output, ref) < 1e-5);
    CHECK(max_abs_diff(m.forward(x[0]), ref[0]) < 1e-5);
    m.to(DType::Float64);
    const Tensor x64 = x.to(DType::Float64);
    CHECK(max_abs_diff(m.forward(x64), ref) < 1e-12);
    expect_gradients_ok(m, x64);
    expect_gradients_ok(m, x64[0].contiguous());
  }
  // groups set through the field (Torch's constructor has none): parameters re-made to match
  auto g = nn::SpatialDilatedConvolution(4, 2, 3, 3, 1, 1, 1, 1, 2, 1);
  g.groups = 2;
  g.weight = uniform({2, 2, 3, 3}, -1, 1, gen, DType::Float64);
  g.gradWeight = zeros({2, 2, 3, 3}, DType::Float64);
  g.to(DType::Float64);
  const Tensor x = uniform({2, 4, 6, 5}, -1, 1, gen, DType::Float64);
  CHECK(max_abs_diff(g.forward(x), convref::conv(x, g.weight, g.bias, params_of(g))) < 1e-12);
  expect_gradients_ok(g, x);
}

TEST_CASE("SpatialDilatedConvolution accumulation, state round trip, printing") {
  Generator gen(3);
  nn::SpatialDilatedConvolution m(2, 3, 3, 3, 1, 1, 2, 2, 2, 2);
  m.to(DType::Float64);
  expect_accumulation_ok(m, uniform({3, 2, 5, 6}, -1, 1, gen, DType::Float64));
  nn::SpatialDilatedConvolution a(2, 3, 3, 3, 1, 1, 2, 2, 2, 2), b(2, 3, 3, 3, 1, 1, 2, 2, 2, 2);
  expect_state_roundtrip_ok(a, b, uniform({2, 2, 5, 6}, -1, 1, gen));
  expect_prints_type(a);
  CHECK(a.type_name() == "nn.SpatialDilatedConvolution");
  CHECK(a.str() == "nn.SpatialDilatedConvolution(2 -> 3, 3x3, 1,1, 2,2, 2,2)");
  CHECK(nn::SpatialDilatedConvolution(3, 8, 3, 5).str() == "nn.SpatialDilatedConvolution(3 -> 8, 3x5, 1,1)");
  CHECK(nn::SpatialDilatedConvolution(3, 8, 3, 3, 2, 1, 0, 0, 4, 2).str() ==
        "nn.SpatialDilatedConvolution(3 -> 8, 3x3, 2,1, 4,2)");
  a.noBias();
  CHECK(a.str() == "nn.SpatialDilatedConvolution(2 -> 3, 3x3, 1,1, 2,2, 2,2) without bias");
  // it is a SpatialConvolution: exclusion predicates written against it keep working
  CHECK(dynamic_cast<nn::SpatialConvolution*>(&a) != nullptr);
}

TEST_CASE("SpatialDilatedConvolution errors") {
  CHECK_THROWS_WITH_AS(nn::SpatialDilatedConvolution(3, 8, 3, 3, 1, 1, 0, 0, 0, 1),
                       "nn.SpatialDilatedConvolution: expected positive dilation, got "
                       "nn.SpatialDilatedConvolution(3 -> 8, 3x3, 0,1)",
                       Error);
  nn::SpatialDilatedConvolution m(3, 8, 3, 3, 1, 1, 1, 1, 3, 3);
  CHECK_THROWS_WITH_AS(m.forward(zeros({2, 3, 4, 8})),
                       "nn.SpatialDilatedConvolution::updateOutput: expected input of at least 7x7 (H x W) after "
                       "padding for a kernel 3x3 with stride 1x1, padding 1x1 and dilation 3x3, got "
                       "[2 x 3 x 4 x 8]: padded size 6x10 gives output size 0x4, too small",
                       Error);
}

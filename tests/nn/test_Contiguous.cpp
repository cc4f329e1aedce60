// test_Contiguous.cpp: nn.Contiguous lays its input out in its memory format, shares it where
// it already is, hands the gradient back in the input's layout, and refuses a channels-last
// layout of a rank that has none. Finite differences and the state round trip: test_EveryModule.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "nn/Contiguous.h"
#include "tests/support/GradCheck.h"

using namespace tensor;

namespace {
bool same(const Tensor& a, const Tensor& b) { return a.sizes() == b.sizes() && max_abs_diff(a, b) == 0; }
}  // namespace

TEST_CASE("Contiguous(channels_last) lays a row-major batch out NHWC and the gradient back row-major") {
  Generator gen(4101);
  for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    nn::Contiguous m(MemoryFormat::ChannelsLast);
    const Tensor x = uniform({2, 3, 4, 5}, -1, 1, gen, dt);
    const Tensor& y = m.forward(x);
    CHECK(y.is_contiguous(MemoryFormat::ChannelsLast));
    CHECK_FALSE(y.is_contiguous());
    CHECK(same(y, x));
    const Tensor g = uniform({2, 3, 4, 5}, -1, 1, gen, dt).contiguous(MemoryFormat::ChannelsLast);
    const Tensor& gi = m.backward(x, g);
    CHECK(gi.is_contiguous());
    CHECK(same(gi, g));
  }
  nn::Contiguous m5(MemoryFormat::ChannelsLast);
  const Tensor v = uniform({2, 3, 2, 3, 4}, -1, 1, gen);
  CHECK(m5.forward(v).is_contiguous(MemoryFormat::ChannelsLast));
  CHECK(same(m5.output, v));
}

TEST_CASE("Contiguous shares a tensor already in its format, and makes other strides dense") {
  Generator gen(4102);
  const Tensor nhwc = uniform({2, 3, 4, 5}, -1, 1, gen).contiguous(MemoryFormat::ChannelsLast);
  nn::Contiguous toNhwc(MemoryFormat::ChannelsLast);
  CHECK(toNhwc.forward(nhwc).is_same_view(nhwc));
  const Tensor g = uniform({2, 3, 4, 5}, -1, 1, gen).contiguous(MemoryFormat::ChannelsLast);
  CHECK(toNhwc.backward(nhwc, g).is_same_view(g));  // the input's own layout: no copy

  nn::Contiguous rowMajor;
  const Tensor& back = rowMajor.forward(nhwc);
  CHECK(back.is_contiguous());
  CHECK(same(back, nhwc));
  const Tensor t = uniform({3, 4}, -1, 1, gen).t();  // any rank, any strides
  CHECK(rowMajor.forward(t).is_contiguous());
  CHECK(same(rowMajor.output, t));
  const Tensor gt = uniform({4, 3}, -1, 1, gen);
  CHECK(same(rowMajor.backward(t, gt), gt));
}

TEST_CASE("Contiguous passes NaN, Inf and integers through, and checks its gradient by finite differences") {
  nn::Contiguous m(MemoryFormat::ChannelsLast);
  Tensor x = zeros({1, 2, 2, 2});
  x.fill_(std::numeric_limits<double>::quiet_NaN());
  const Tensor y = m.forward(x).cpu().to(DType::Float64).contiguous();
  for (int64_t i = 0; i < y.numel(); ++i) CHECK(std::isnan(y.data<double>()[i]));
  const Tensor idx = zeros({1, 2, 2, 2}, DType::Int64);
  CHECK(m.forward(idx).dtype() == DType::Int64);
  Generator gen(4103);
  testing::expect_gradients_ok(m, uniform({2, 3, 3, 2}, -1, 1, gen, DType::Float64));
  nn::Contiguous r;
  testing::expect_gradients_ok(
      r, uniform({2, 3, 3, 2}, -1, 1, gen, DType::Float64).contiguous(MemoryFormat::ChannelsLast));
}

TEST_CASE("Contiguous: printing, config round trip and errors") {
  nn::Contiguous cl(MemoryFormat::ChannelsLast), rm;
  CHECK(cl.str() == "nn.Contiguous(channels_last)");
  CHECK(rm.str() == "nn.Contiguous");
  auto back = std::dynamic_pointer_cast<nn::Contiguous>(nn::Contiguous::fromConfig(cl.config()));
  REQUIRE(back);
  CHECK(back->format() == MemoryFormat::ChannelsLast);
  CHECK(std::dynamic_pointer_cast<nn::Contiguous>(nn::Contiguous::fromConfig(rm.config()))->format() ==
        MemoryFormat::Contiguous);
  CHECK_THROWS_WITH_AS(nn::Contiguous::fromConfig(Json::Object{{"memoryFormat", "nchw"}}),
                       "nn.Contiguous config: expected memoryFormat 'contiguous' or 'channels_last', got 'nchw'",
                       Error);
  CHECK_THROWS_WITH_AS(cl.forward(zeros({2, 3})),
                       "nn.Contiguous::updateOutput: channels_last lays out 4-d (NHWC) or 5-d (NDHWC) tensors, got "
                       "[2 x 3]",
                       Error);
  const Tensor x = zeros({1, 2, 2, 2});
  cl.forward(x);
  CHECK_THROWS_WITH_AS(cl.backward(x, zeros({1, 2, 2, 3})),
                       "nn.Contiguous::updateGradInput: expected gradOutput of the output's shape [1 x 2 x 2 x 2], got "
                       "[1 x 2 x 2 x 3]",
                       Error);
}

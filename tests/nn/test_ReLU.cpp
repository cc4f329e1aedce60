// test_ReLU.cpp
#include <doctest/doctest.h>

#include "nn/ReLU.h"
#include "tests/support/GradCheck.h"
#include "tests/support/NonFinite.h"

using namespace tensor;
using namespace testing;

TEST_CASE("ReLU forward and backward by hand") {
  nn::ReLU m;
  const Tensor x = from_vector<float>({-2, -0.5f, 0, 0.5f, 3}, {5});
  CHECK(m.forward(x).to_vector<float>() == std::vector<float>{0, 0, 0, 0.5f, 3});
  CHECK_FALSE(m.output.shares_storage(x));
  CHECK(x.to_vector<float>() == std::vector<float>{-2, -0.5f, 0, 0.5f, 3});
  const Tensor g = from_vector<float>({1, 2, 3, 4, 5}, {5});
  CHECK(m.backward(x, g).to_vector<float>() == std::vector<float>{0, 0, 0, 4, 5});
  CHECK(g.to_vector<float>() == std::vector<float>{1, 2, 3, 4, 5});
  // any rank, float64 too
  const Tensor x4 = from_vector<double>({-1, 2, -3, 4, 5, -6, 7, -8}, {2, 1, 2, 2});
  const Tensor y4 = m.forward(x4);
  CHECK(y4.sizes() == Shape{2, 1, 2, 2});
  CHECK(y4.to_vector<double>() == std::vector<double>{0, 2, 0, 4, 5, 0, 7, 0});
}

TEST_CASE("ReLU in place reuses the input's and gradOutput's storage") {
  nn::ReLU m(true);
  CHECK(m.inplace);
  Tensor x = from_vector<float>({-1, 2, -3, 4}, {2, 2});
  const Tensor y = m.forward(x);
  CHECK(y.is_same_view(x));
  CHECK(x.to_vector<float>() == std::vector<float>{0, 2, 0, 4});  // the input is overwritten
  Tensor g = from_vector<float>({10, 20, 30, 40}, {2, 2});
  const Tensor gi = m.backward(x, g);
  CHECK(gi.shares_storage(g));
  CHECK(gi.to_vector<float>() == std::vector<float>{0, 20, 0, 40});

  // a non-contiguous input is written through its own view
  Tensor base = from_vector<float>({-1, 2, -3, 4, -5, 6}, {2, 3});
  Tensor xt = base.t();
  const Tensor yt = m.forward(xt);
  CHECK(yt.is_same_view(xt));
  CHECK(base.to_vector<float>() == std::vector<float>{0, 2, 0, 4, 0, 6});
  // xt is now [[0, 4], [2, 0], [0, 6]]
  const Tensor gt = m.backward(xt, from_vector<float>({1, 2, 3, 4, 5, 6}, {3, 2}));
  CHECK(gt.to_vector<float>() == std::vector<float>{0, 2, 3, 0, 0, 6});

  // switching in-place off again must not keep writing into the caller's tensors
  m.inplace = false;
  Tensor x2 = from_vector<float>({-1, 1}, {2});
  m.forward(x2);
  CHECK_FALSE(m.output.shares_storage(x2));
  CHECK(x2.to_vector<float>() == std::vector<float>{-1, 1});
}

TEST_CASE("ReLU gradients (random shapes, in place and not)") {
  Generator gen(20261201);
  INFO("size seed 20261201");
  for (int trial = 0; trial < 3; ++trial) {
    const Shape shapes[] = {{random_size(gen, 1, 9)},
                            {random_size(gen, 1, 4), random_size(gen, 1, 6)},
                            {random_size(gen, 1, 3), random_size(gen, 1, 3), random_size(gen, 1, 4), 3}};
    for (const Shape& s : shapes) {
      for (bool inplace : {false, true}) {
        nn::ReLU m(inplace);
        m.to(DType::Float64);
        expect_gradients_ok(m, uniform(s, -1, 1, gen, DType::Float64));
      }
    }
  }
}

TEST_CASE("ReLU float32 agrees with float64, state round trip, printing and errors") {
  Generator gen(2);
  const Tensor x = uniform({3, 4}, -2, 2, gen, DType::Float64);
  nn::ReLU a, b;
  CHECK(max_abs_diff(a.forward(x.to(DType::Float32)), x.relu()) < 1e-6);
  CHECK(a.parameters().empty());
  expect_state_roundtrip_ok(a, b, x.to(DType::Float32));
  nn::ReLU c(true), d(true);
  expect_state_roundtrip_ok(c, d, x);
  // Torch's Threshold defines no __tostring__: in place or not, a ReLU prints its type
  CHECK(a.str() == "nn.ReLU");
  CHECK(c.str() == "nn.ReLU");
  expect_prints_type(a);
  CHECK_THROWS_WITH_AS(a.forward(zeros({2, 3}, DType::Int64)),
                       "nn.ReLU::updateOutput: expected float32 or float64 input, got int64 [2 x 3] on cpu", Error);
  a.forward(zeros({2, 3}));
  CHECK_THROWS_WITH_AS(a.backward(zeros({2, 3}), zeros({3, 2})),
                       "nn.ReLU::updateGradInput: expected gradOutput of the output's shape and dtype (float32 [2 x 3] "
                       "on cpu), got float32 [3 x 2] on cpu",
                       Error);
  nn::ReLU fresh;
  CHECK_THROWS_WITH_AS(fresh.updateGradInput(zeros({2}), zeros({2})),
                       "nn.ReLU::updateGradInput: no output to differentiate: call updateOutput first", Error);
}

TEST_CASE("ReLU: NaN propagates, infinities take their limits, forward and backward (Note [NaN and Inf])") {
  for (DType dt : {DType::Float32, DType::Float64}) {
    for (bool inplace : {false, true}) {
      INFO(std::string(name(dt)), std::string(inplace ? " in place" : ""));
      nn::ReLU m(inplace);
      const Tensor x = from_vector<double>({kNaN, kInf, -kInf, 1, -1}, {5}).to(dt);
      expect_values("output", m.forward(x.clone()), {kNaN, kInf, 0, 1, 0}, 1e-6);
      expect_values("gradInput", m.backward(x, ones({5}, dt)), {0, 1, 0, 1, 0}, 1e-6);
    }
  }
}

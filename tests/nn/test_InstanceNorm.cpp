// test_InstanceNorm.cpp: nn.InstanceNorm against PyTorch's float64 results (InstanceNorm1d, 2d
// and 3d; affine; tracked running statistics in training and in evaluation), finite
// differences in both modes, NaN and Inf, empty batches, errors, printing, configuration and
// state (PyTorch's state_dict keys).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "nn/GroupNorm.h"
#include "nn/InstanceNorm.h"
#include "tests/support/GradCheck.h"
#include "tests/support/GroupNormReference.h"
#include "tests/support/TransformerReference.h"  // expect_matches

using namespace tensor;
using namespace testing;

TEST_CASE("InstanceNorm gives PyTorch's output and gradients (InstanceNorm2d affine, InstanceNorm3d)") {
  {
    nn::InstanceNorm m(3, 1e-5, 0.1, true);
    m.to(DType::Float64);
    m.loadStateDict({{"weight", groupnorm_ref("in.2d.w")}, {"bias", groupnorm_ref("in.2d.b")}});
    const Tensor x = groupnorm_ref("in.2d.x");
    expect_matches("output", m.forward(x), groupnorm_ref("in.2d.y"));
    expect_matches("gradInput", m.backward(x, groupnorm_ref("in.2d.gy")), groupnorm_ref("in.2d.gx"));
    expect_matches("gradWeight", m.gradWeight, groupnorm_ref("in.2d.gw"));
    expect_matches("gradBias", m.gradBias, groupnorm_ref("in.2d.gb"));
  }
  nn::InstanceNorm m(2);
  m.to(DType::Float64);
  const Tensor x = groupnorm_ref("in.3d.x");
  expect_matches("output", m.forward(x), groupnorm_ref("in.3d.y"));
  expect_matches("gradInput", m.backward(x, groupnorm_ref("in.3d.gy")), groupnorm_ref("in.3d.gx"));
  CHECK(m.parameters().empty());
  CHECK(m.stateDict().empty());
  // without tracked statistics evaluation normalises with the input's, as training
  m.evaluate();
  expect_matches("output in evaluation", m.forward(x), groupnorm_ref("in.3d.y"));
}

TEST_CASE("InstanceNorm tracks PyTorch's running statistics and normalises with them in evaluation") {
  // See Note [Instance norm's running statistics] in nn/GroupNormBase.cpp.
  nn::InstanceNorm m(3, 1e-5, 0.2, true, true);
  m.to(DType::Float64);
  m.loadStateDict({{"weight", groupnorm_ref("in.track.w")},
                   {"bias", groupnorm_ref("in.track.b")},
                   {"running_mean", zeros({3}, DType::Float64)},
                   {"running_var", ones({3}, DType::Float64)},
                   {"num_batches_tracked", scalar_tensor(0, DType::Int64)}});
  m.forward(groupnorm_ref("in.track.x1"));
  expect_matches("running_mean after one", m.running_mean, groupnorm_ref("in.track.running_mean1"));
  expect_matches("running_var after one", m.running_var, groupnorm_ref("in.track.running_var1"));
  const Tensor x2 = groupnorm_ref("in.track.x2");
  expect_matches("output", m.forward(x2), groupnorm_ref("in.track.y2"));
  expect_matches("gradInput", m.backward(x2, groupnorm_ref("in.track.gy2")), groupnorm_ref("in.track.gx2"));
  expect_matches("gradWeight", m.gradWeight, groupnorm_ref("in.track.gw2"));
  expect_matches("gradBias", m.gradBias, groupnorm_ref("in.track.gb2"));
  expect_matches("running_mean", m.running_mean, groupnorm_ref("in.track.running_mean"));
  expect_matches("running_var", m.running_var, groupnorm_ref("in.track.running_var"));
  CHECK(m.num_batches_tracked.item() == 0);  // as PyTorch's InstanceNorm: never counted
  m.evaluate();
  m.zeroGradParameters();
  const Tensor x = groupnorm_ref("in.track.x");
  expect_matches("output in evaluation", m.forward(x), groupnorm_ref("in.track.y"));
  CHECK(m.fixedStatistics);
  expect_matches("gradInput in evaluation", m.backward(x, groupnorm_ref("in.track.gy")), groupnorm_ref("in.track.gx"));
  expect_matches("gradWeight in evaluation", m.gradWeight, groupnorm_ref("in.track.gw"));
  expect_matches("gradBias in evaluation", m.gradBias, groupnorm_ref("in.track.gb"));
  // evaluation leaves the running statistics alone
  expect_matches("running_mean unchanged", m.running_mean, groupnorm_ref("in.track.running_mean"));
  // state: PyTorch's keys
  const auto state = m.stateDict();
  for (const char* key : {"weight", "bias", "running_mean", "running_var", "num_batches_tracked"}) {
    INFO(key);
    CHECK(state.count(key) == 1);
  }
}

TEST_CASE("InstanceNorm finite differences: 1d to 3d, affine or not, input or running statistics, strided") {
  Generator gen(20261206);
  INFO("seed 20261206");
  for (const Shape& shape : {Shape{2, 3, 5}, Shape{2, 2, 3, 2}, Shape{1, 2, 2, 2, 2}}) {
    for (bool affine : {true, false}) {
      for (bool track : {false, true}) {
        for (bool eval : {false, true}) {
          if (eval && !track) continue;  // the same as training
          INFO(shape_str(shape), affine ? " affine" : "", track ? " tracked" : "", eval ? " evaluation" : "");
          nn::InstanceNorm m(shape[1], 1e-3, 0.1, affine, track);
          m.to(DType::Float64);
          if (affine) {
            m.weight.uniform_(0.5, 1.5, gen);
            m.bias.uniform_(-1, 1, gen);
          }
          if (track) {
            m.running_mean.uniform_(-1, 1, gen);
            m.running_var.uniform_(0.5, 2, gen);
          }
          if (eval) m.evaluate();
          // training forwards move the running statistics, which the check does not read
          expect_gradients_ok(m, uniform(shape, -2, 2, gen, DType::Float64));
        }
      }
    }
  }
  nn::InstanceNorm m(3, 1e-5, 0.1, true);
  m.to(DType::Float64);
  expect_gradients_ok(m, uniform({3, 2, 4, 5}, -1, 1, gen, DType::Float64).transpose(0, 1));  // strided
}

TEST_CASE("InstanceNorm is GroupNorm with a group a channel") {
  Generator gen(8);
  nn::InstanceNorm in(3, 1e-5, 0.1, true);
  nn::GroupNorm gn(3, 3);
  in.weight.uniform_(0.5, 1.5, gen);
  gn.loadStateDict(in.stateDict());
  const Tensor x = uniform({2, 3, 4, 4}, -2, 2, gen), g = uniform({2, 3, 4, 4}, -1, 1, gen);
  CHECK(max_abs_diff(in.forward(x), gn.forward(x)) == 0);
  CHECK(max_abs_diff(in.backward(x, g), gn.backward(x, g)) == 0);
  CHECK(max_abs_diff(in.gradWeight, gn.gradWeight) == 0);
}

TEST_CASE("InstanceNorm: NaN and Inf make their (sample, channel) NaN; with running statistics only their elements") {
  // See Note [NaN and Inf] in nn/kernels/Activation.h.
  for (double bad : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    INFO("bad ", bad);
    nn::InstanceNorm m(2, 1e-5, 0.1, false, true);
    m.to(DType::Float64);
    Tensor x = from_vector<double>({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2});
    x.select(0, 1).select(0, 0).select(0, 1).fill_(bad);  // flat element 5: sample 1, channel 0
    std::vector<double> y = m.forward(x).to_vector<double>();
    for (size_t i = 0; i < y.size(); ++i) CHECK(std::isnan(y[i]) == (i == 4 || i == 5));
    // the training forward took the bad value into channel 0's running statistics
    CHECK(!std::isfinite(m.running_mean.to_vector<double>()[0]));  // Inf for an Inf
    CHECK(std::isnan(m.running_var.to_vector<double>()[0]));
    CHECK(std::isfinite(m.running_mean.to_vector<double>()[1]));
    m.running_mean.fill_(0);
    m.running_var.fill_(1);
    m.evaluate();
    y = m.forward(x).to_vector<double>();
    for (size_t i = 0; i < y.size(); ++i) CHECK(std::isfinite(y[i]) == (i != 5));
    CHECK(std::isnan(y[5]) == std::isnan(bad));
  }
}

TEST_CASE("InstanceNorm: an empty batch gives empty results and leaves running statistics and gradients alone") {
  nn::InstanceNorm m(3, 1e-5, 0.1, true, true);
  m.zeroGradParameters();
  const Tensor x = zeros({0, 3, 4});
  CHECK(m.forward(x).sizes() == x.sizes());
  CHECK(m.backward(x, x).sizes() == x.sizes());
  CHECK(m.running_mean.abs().max().item() == 0);
  CHECK(m.running_var.to_vector<float>() == std::vector<float>{1, 1, 1});
  CHECK(m.gradWeight.abs().max().item() == 0);
}

TEST_CASE("InstanceNorm errors, printing, configuration and state") {
  Generator gen(9);
  nn::InstanceNorm m(3);
  CHECK(m.str() == "nn.InstanceNorm(3, eps=1e-05, momentum=0.1)");
  nn::InstanceNorm full(4, 1e-3, 0.2, true, true);
  CHECK(full.str() == "nn.InstanceNorm(4, eps=0.001, momentum=0.2, affine=true, track_running_stats=true)");
  CHECK(nn::InstanceNorm::fromConfig(full.config())->str() == full.str());
  expect_prints_type(m);
  CHECK_THROWS_WITH_AS(nn::InstanceNorm(0), doctest::Contains("nn.InstanceNorm: expected num_channels >= 1"), Error);
  CHECK_THROWS_WITH_AS(nn::InstanceNorm(3, 1e-5, 1.5),
                       doctest::Contains("momentum in [0, 1], got eps 1e-05, momentum 1.5"), Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({2, 3})),
                       "nn.InstanceNorm::updateOutput: expected input of [N x 3 x *], got [2 x 3]", Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({2, 4, 5})),
                       "nn.InstanceNorm::updateOutput: expected input of [N x 3 x *], got [2 x 4 x 5]", Error);
  // one position a channel: PyTorch refuses it where the input's statistics normalise
  CHECK_THROWS_WITH_AS(m.forward(zeros({2, 3, 1})),
                       "nn.InstanceNorm::updateOutput: expected more than 1 spatial element a channel when the "
                       "input's statistics normalise (in training, or without tracked statistics), got input "
                       "[2 x 3 x 1]",
                       Error);
  full.evaluate();
  CHECK(full.forward(uniform({2, 4, 1}, -1, 1, gen)).sizes() == Shape{2, 4, 1});
  // the running statistics' dtype, without affine parameters
  nn::InstanceNorm t(3, 1e-5, 0.1, false, true);
  CHECK_THROWS_WITH_AS(t.forward(zeros({2, 3, 4}, DType::Float64)),
                       doctest::Contains("expected input of running_mean's dtype and device (float32 on cpu)"), Error);
  t.running_var = ones({4});
  CHECK_THROWS_WITH_AS(t.forward(zeros({2, 3, 4})), doctest::Contains("expected running_var of [3]"), Error);
  // state
  nn::InstanceNorm a(4, 1e-3, 0.2, true, true), b(4, 1e-3, 0.2, true, true);
  a.weight.uniform_(0.5, 1.5, gen);
  a.running_mean.uniform_(-1, 1, gen);
  a.evaluate();
  b.evaluate();
  expect_state_roundtrip_ok(a, b, uniform({2, 4, 3}, -1, 1, gen));
}

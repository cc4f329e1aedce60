// test_StapleTwins.cpp: the shape staples' twins (cudnn.Narrow, Transpose, Squeeze, Unsqueeze,
// Padding, SpatialZeroPadding, SpatialReflectionPadding, SpatialReplicationPadding,
// SpatialUpSamplingNearest, SpatialUpSamplingBilinear) against their nn modules, as one table:
// float32 (TF32 off), float64, float16 and bfloat16, contiguous and not; NaN and +-Inf in the
// input and in gradOutput; an empty batch; the convert round trip. The spatial twins compute
// channels-last inputs in place of a copy (output and gradInput channels-last, as the other
// spatial twins: Note [Channels-last twins]) and their backward, a gather, is bit-identical
// from run to run.
#include <doctest/doctest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cudnn/Narrow.h"
#include "cudnn/Padding.h"
#include "cudnn/SpatialReflectionPadding.h"
#include "cudnn/SpatialReplicationPadding.h"
#include "cudnn/SpatialUpSamplingBilinear.h"
#include "cudnn/SpatialUpSamplingNearest.h"
#include "cudnn/SpatialZeroPadding.h"
#include "cudnn/Squeeze.h"
#include "cudnn/Transpose.h"
#include "cudnn/Unsqueeze.h"
#include "cudnn/core/Config.h"
#include "tests/support/TwinCheck.h"

using namespace tensor;
using namespace testing;

namespace {

struct Row {
  std::string name;
  std::function<nn::ModulePtr()> nn, cu;
  Shape input;           // batch first
  bool spatial = false;  // 4-d [N x C x H x W]: channels-last and determinism checks
};

template <class N, class C, class... A>
Row row(std::string name, Shape input, bool spatial, A... args) {
  return {std::move(name), [=] { return nn::ModulePtr(std::make_shared<N>(args...)); },
          [=] { return nn::ModulePtr(std::make_shared<C>(args...)); }, std::move(input), spatial};
}

using Bilinear = nn::SpatialUpSamplingBilinear;

const std::vector<Row>& rows() {
  static const std::vector<Row> r = {
      row<nn::Narrow, cudnn::Narrow>("Narrow(1, -3, 2)", {3, 5, 4}, false, int64_t{1}, int64_t{-3}, int64_t{2}),
      row<nn::Narrow, cudnn::Narrow>("Narrow(2, 1, -1)", {3, 5, 4}, false, int64_t{2}, int64_t{1}, int64_t{-1}),
      row<nn::Transpose, cudnn::Transpose>("Transpose({1, 2}, {0, 3})", {2, 3, 4, 5}, false,
                                           nn::Transpose::Pairs{{1, 2}, {0, 3}}),
      row<nn::Squeeze, cudnn::Squeeze>("Squeeze(2)", {3, 4, 1, 2}, false, int64_t{2}),
      row<nn::Unsqueeze, cudnn::Unsqueeze>("Unsqueeze(-1)", {3, 4}, false, int64_t{-1}),
      row<nn::Padding, cudnn::Padding>("Padding(1, -2, 0, 0.5, 1)", {3, 4, 2}, false, int64_t{1}, int64_t{-2},
                                       int64_t{0}, 0.5, int64_t{1}),
      row<nn::SpatialZeroPadding, cudnn::SpatialZeroPadding>("SpatialZeroPadding(2, -1, 1, 0)", {2, 3, 5, 6}, true,
                                                             int64_t{2}, int64_t{-1}, int64_t{1}, int64_t{0}),
      row<nn::SpatialReflectionPadding, cudnn::SpatialReflectionPadding>(
          "SpatialReflectionPadding(2, 1, 3, 0)", {2, 3, 5, 6}, true, int64_t{2}, int64_t{1}, int64_t{3}, int64_t{0}),
      row<nn::SpatialReflectionPadding, cudnn::SpatialReflectionPadding>("SpatialReflectionPadding(1) 3-d", {3, 4, 4},
                                                                         false, int64_t{1}),
      row<nn::SpatialReplicationPadding, cudnn::SpatialReplicationPadding>(
          "SpatialReplicationPadding(3, 1, 0, 2)", {2, 3, 4, 3}, true, int64_t{3}, int64_t{1}, int64_t{0}, int64_t{2}),
      row<nn::SpatialUpSamplingNearest, cudnn::SpatialUpSamplingNearest>("SpatialUpSamplingNearest(2)", {2, 3, 3, 5},
                                                                         true, int64_t{2}),
      row<nn::SpatialUpSamplingNearest, cudnn::SpatialUpSamplingNearest>("SpatialUpSamplingNearest(3) 3-d", {2, 3, 4},
                                                                         false, int64_t{3}),
      row<Bilinear, cudnn::SpatialUpSamplingBilinear>("SpatialUpSamplingBilinear(3)", {2, 3, 4, 5}, true, int64_t{3},
                                                      true),
      row<Bilinear, cudnn::SpatialUpSamplingBilinear>("SpatialUpSamplingBilinear(2, false)", {2, 3, 3, 5}, true,
                                                      int64_t{2}, false),
      row<Bilinear, cudnn::SpatialUpSamplingBilinear>("SpatialUpSamplingBilinear(7x4, false)", {2, 3, 4, 6}, true,
                                                      Bilinear::Size{7, 4}, false),
      row<Bilinear, cudnn::SpatialUpSamplingBilinear>("SpatialUpSamplingBilinear(5x9, true) 3-d", {3, 4, 6}, false,
                                                      Bilinear::Size{5, 9}, true),
  };
  return r;
}

}  // namespace

TEST_CASE("staple twins match nn in float32 (TF32 off), float64, float16 and bfloat16, contiguous or not") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  Generator gen(4701);
  INFO("seed 4701");
  for (const Row& r : rows()) {
    for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
      for (bool nc : {false, true}) {
        INFO(r.name, " ", name(dt), nc ? " non-contiguous" : "");
        const nn::ModulePtr ref = r.nn(), twin = r.cu();
        expect_twin_matches(*ref, *twin, uniform(r.input, -1, 1, gen, DType::Float64), dt, TwinTolerance::for_dtype(dt),
                            nc);
        CHECK(twin->output.is_cuda());
        CHECK(twin->output.sizes() == ref->output.sizes());
      }
    }
  }
}

TEST_CASE("staple twins: NaN and +-Inf in the input and in gradOutput land where nn puts them") {
  Generator gen(4702);
  for (const Row& r : rows()) {
    INFO(r.name);
    const Tensor x = uniform(r.input, -1, 1, gen, DType::Float64);
    const nn::ModulePtr a = r.nn(), b = r.cu(), c = r.nn(), d = r.cu();
    expect_twin_nonfinite_matches(*a, *b, x);
    expect_twin_nonfinite_gradient_matches(*c, *d, x);
  }
}

TEST_CASE("staple twins: an empty batch gives empty outputs and gradInputs; convert round trip; printing") {
  Generator gen(4703);
  const Device gpu = Device::cuda(0);
  for (const Row& r : rows()) {
    INFO(r.name);
    Shape empty = r.input;
    empty[0] = 0;
    const nn::ModulePtr ref = r.nn(), twin = r.cu();
    const Tensor y = ref->forward(zeros(empty, DType::Float64));
    const Tensor gi = ref->backward(zeros(empty, DType::Float64), zeros(y.sizes(), DType::Float64));
    const Tensor xg = zeros(empty, DType::Float32, gpu);
    CHECK(twin->forward(xg).sizes() == y.sizes());
    CHECK(twin->backward(xg, zeros(y.sizes(), DType::Float32, gpu)).sizes() == gi.sizes());
    CHECK(twin->str() == "cudnn." + ref->str().substr(3));
    expect_convert_roundtrip(r.nn(), uniform(r.input, -1, 1, gen));
  }
}

TEST_CASE("spatial staple twins keep a channels-last input's layout, and backward is deterministic") {
  Generator gen(4704);
  const Device gpu = Device::cuda(0);
  for (const Row& r : rows()) {
    if (!r.spatial) continue;
    for (DType dt : {DType::Float32, DType::Float16}) {
      INFO(r.name, " ", name(dt));
      const Tensor x = uniform(r.input, -1, 1, gen, DType::Float64);
      const nn::ModulePtr ref = r.nn(), twin = r.cu();
      const Tensor y = ref->forward(x);
      const Tensor g = uniform(y.sizes(), -1, 1, gen, DType::Float64);
      const Tensor gi = ref->backward(x, g);
      const Tensor xc = x.to(gpu, dt).contiguous(MemoryFormat::ChannelsLast);
      const Tensor gc = g.to(gpu, dt);  // row-major: read in place
      const Tensor yt = twin->forward(xc);
      CHECK(yt.is_contiguous(MemoryFormat::ChannelsLast));
      const double tol = dt == DType::Float32 ? 1e-5 : 2e-2;
      CHECK(max_abs_diff(yt.to(Device::cpu(), DType::Float64), y) <= tol);
      const Tensor first = twin->backward(xc, gc).clone();
      CHECK(twin->gradInput.is_contiguous(MemoryFormat::ChannelsLast));
      CHECK(max_abs_diff(first.to(Device::cpu(), DType::Float64), gi) <= tol * 4);
      const Tensor again = twin->backward(xc, gc.contiguous(MemoryFormat::ChannelsLast));
      CHECK(max_abs_diff(again.to(Device::cpu(), DType::Float64), first.to(Device::cpu(), DType::Float64)) == 0);
    }
  }
}

TEST_CASE("staple twins: errors name the twin") {
  const Device gpu = Device::cuda(0);
  cudnn::SpatialReflectionPadding pad(2);
  CHECK_THROWS_WITH_AS(
      pad.forward(zeros({1, 2, 3, 3})),
      doctest::Contains("cudnn.SpatialReflectionPadding::updateOutput: expected input on a CUDA device"), Error);
  CHECK_THROWS_WITH_AS(pad.forward(zeros({1, 2, 2, 3}, DType::Float32, gpu)),
                       "cudnn.SpatialReflectionPadding::updateOutput: expected pads (l=2, r=2, t=2, b=2) smaller than "
                       "the input's height and width, got input [1 x 2 x 2 x 3]",
                       Error);
  cudnn::SpatialUpSamplingBilinear up(2);
  const Tensor x = zeros({1, 2, 3, 3}, DType::Float32, gpu);
  up.forward(x);
  CHECK_THROWS_WITH_AS(up.backward(x, zeros({1, 2, 3, 3}, DType::Float32, gpu)),
                       "cudnn.SpatialUpSamplingBilinear::updateGradInput: expected gradOutput of the output's shape [1 "
                       "x 2 x 5 x 5] (input [1 x 2 x 3 x 3]), got [1 x 2 x 3 x 3]",
                       Error);
  CHECK_THROWS_WITH_AS(up.forward(arange(0, 18, 1, DType::Int64, gpu).view({1, 2, 3, 3})),
                       doctest::Contains("cudnn.SpatialUpSamplingBilinear::updateOutput"), Error);
}

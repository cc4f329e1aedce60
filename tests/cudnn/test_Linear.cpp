// test_Linear.cpp: cudnn.Linear (cuBLAS) against nn.Linear in every dtype, batch, single and
// N-d ([* x in]: 3-d, 4-d, strided views, empty leading dims) inputs, with and without bias, non-contiguous input,
// TF32, accumulation with a scale, the steady state (no device allocation, no host synchronisation needed), a convert
// round trip and the errors.
#include <doctest/doctest.h>

#include <utility>
#include <vector>

#include "cudnn/GELU.h"
#include "cudnn/Linear.h"
#include "cudnn/ReLU.h"
#include "cudnn/core/Config.h"
#include "nn/GELU.h"
#include "nn/Linear.h"
#include "nn/ReLU.h"
#include "nn/Sequential.h"
#include "tensor/Cuda.h"
#include "tests/support/AddingChecks.h"
#include "tests/support/TwinCheck.h"

using namespace tensor;
using namespace testing;

namespace {
const Device gpu = Device::cuda(0);
const DType kDtypes[] = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16};

struct Case {
  int64_t in, out;
  Shape input;
  bool bias;
};
const Case kCases[] = {
    {5, 3, {4, 5}, true},      // batch
    {5, 3, {5}, true},         // single sample
    {7, 2, {1, 7}, true},      // batch of 1
    {6, 4, {3, 6}, false},     // without bias
    {37, 29, {17, 37}, true},  // odd sizes
    {1, 1, {9, 1}, true},      // degenerate
    // Note [Linear over leading dims]: PyTorch's [* x in]
    {5, 3, {2, 4, 5}, true},      // 3-d
    {6, 4, {2, 3, 2, 6}, true},   // 4-d
    {7, 5, {3, 1, 2, 7}, false},  // 4-d without bias
};
}  // namespace

TEST_CASE("cudnn.Linear matches nn.Linear (batch, single, batch 1, no bias, odd sizes) in every dtype") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  Generator gen(3101);
  INFO("seed 3101");
  for (const Case& c : kCases) {
    for (DType dt : kDtypes) {
      for (bool nc : {false, true}) {
        if (nc && c.input.size() < 2) continue;
        INFO(c.in, " -> ", c.out, " input ", shape_str(c.input), c.bias ? "" : " without bias");
        nn::Linear ref(c.in, c.out, c.bias);
        cudnn::Linear twin(c.in, c.out, c.bias);
        expect_twin_matches(ref, twin, uniform(c.input, -1, 1, gen, DType::Float64), dt, TwinTolerance::for_dtype(dt),
                            nc);
      }
    }
  }
}

TEST_CASE("cudnn.Linear over leading dims: strided views (a flattening view and a copy) and empty leading dims") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  Generator gen(3106);
  INFO("seed 3106");
  nn::Linear ref(4, 3);
  ref.to(DType::Float64);
  cudnn::Linear twin(4, 3);
  twin.loadStateDict(ref.stateDict());
  twin.to(gpu);
  twin.to(DType::Float64);
  // transposed leading dims (a copy), a narrowed last dim (a view with strided rows), a
  // permutation; each view taken of the same values on both devices
  const Tensor bt = uniform({2, 3, 4}, -1, 1, gen, DType::Float64), bn = uniform({2, 3, 6}, -1, 1, gen, DType::Float64);
  const Tensor bp = uniform({3, 2, 4, 2}, -1, 1, gen, DType::Float64);
  const std::vector<std::pair<Tensor, Tensor>> views = {{bt.transpose(0, 1), bt.to(gpu).transpose(0, 1)},
                                                        {bn.narrow(2, 1, 4), bn.to(gpu).narrow(2, 1, 4)},
                                                        {bp.permute({3, 1, 0, 2}), bp.to(gpu).permute({3, 1, 0, 2})}};
  for (const auto& [x, xg] : views) {
    INFO("input ", shape_str(x.sizes()));
    REQUIRE(!xg.is_contiguous());
    Shape outShape = x.sizes();
    outShape.back() = 3;
    const Tensor g = uniform(outShape, -1, 1, gen, DType::Float64);
    ref.zeroGradParameters();
    twin.zeroGradParameters();
    CHECK(max_rel_error(twin.forward(xg), ref.forward(x)) < 1e-12);
    CHECK(twin.output.sizes() == outShape);
    CHECK(max_rel_error(twin.backward(xg, g.to(gpu)), ref.backward(x, g)) < 1e-12);
    CHECK(twin.gradInput.sizes() == x.sizes());
    CHECK(max_rel_error(twin.gradWeight, ref.gradWeight) < 1e-12);
    CHECK(max_rel_error(twin.gradBias, ref.gradBias) < 1e-12);
  }
  for (DType dt : kDtypes) {
    INFO(name(dt));
    const Tensor base = uniform({3, 2, 4, 2}, -1, 1, gen, DType::Float64);
    nn::Linear r(4, 3);
    cudnn::Linear tw(4, 3);
    expect_twin_matches(r, tw, base.permute({3, 1, 0, 2}).contiguous(), dt, TwinTolerance::for_dtype(dt), true);
  }
  twin.zeroGradParameters();
  for (const Shape& shape : {Shape{0, 2, 4}, Shape{2, 0, 4}, Shape{3, 0, 1, 4}}) {
    INFO("input ", shape_str(shape));
    Shape outShape = shape;
    outShape.back() = 3;
    const Tensor x = zeros(shape, DType::Float64, gpu);
    CHECK(twin.forward(x).sizes() == outShape);
    CHECK(twin.backward(x, zeros(outShape, DType::Float64, gpu)).sizes() == shape);
    CHECK(twin.gradWeight.abs().max().item() == 0);
    CHECK(twin.gradBias.abs().max().item() == 0);
  }
  CHECK_THROWS_WITH_AS(twin.forward(zeros({2, 3, 5}, DType::Float64, gpu)),
                       "cudnn.Linear::updateOutput: expected input of [* x 4] (any leading dims), got [2 x 3 x 5]",
                       Error);
}

TEST_CASE("cudnn.Linear with TF32 allowed stays within TF32's precision") {
  cudnn::ScopedConfig flags("allow_tf32=true");
  Generator gen(3102);
  nn::Linear ref(64, 32);
  cudnn::Linear twin(64, 32);
  expect_twin_matches(ref, twin, uniform({16, 64}, -1, 1, gen, DType::Float64), DType::Float32, {5e-3, 5e-3});
}

TEST_CASE("cudnn.Linear accumulates gradients with a scale, and evaluate mode changes nothing") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  Generator gen(3103);
  nn::Linear ref(6, 4);
  ref.to(DType::Float64);
  cudnn::Linear twin(6, 4);
  twin.loadStateDict(ref.stateDict());
  twin.to(gpu);
  twin.to(DType::Float64);
  ref.zeroGradParameters();
  twin.zeroGradParameters();
  for (double scale : {1.0, 0.5, -2.0}) {
    const Tensor x = uniform({3, 6}, -1, 1, gen, DType::Float64);
    const Tensor g = uniform({3, 4}, -1, 1, gen, DType::Float64);
    ref.forward(x);
    twin.forward(x.to(gpu));
    ref.backward(x, g, scale);
    twin.backward(x.to(gpu), g.to(gpu), scale);
  }
  twin.evaluate();
  const Tensor x1 = uniform({6}, -1, 1, gen, DType::Float64), g1 = uniform({4}, -1, 1, gen, DType::Float64);
  ref.forward(x1);
  twin.forward(x1.to(gpu));
  ref.backward(x1, g1, 0.25);
  twin.backward(x1.to(gpu), g1.to(gpu), 0.25);
  CHECK(max_rel_error(twin.gradWeight, ref.gradWeight) < 1e-12);
  CHECK(max_rel_error(twin.gradBias, ref.gradBias) < 1e-12);
  // updateGradInput and accGradParameters on their own, as Torch calls them
  const Tensor x = uniform({2, 6}, -1, 1, gen, DType::Float64), g = uniform({2, 4}, -1, 1, gen, DType::Float64);
  ref.forward(x);
  twin.forward(x.to(gpu));
  CHECK(max_rel_error(twin.updateGradInput(x.to(gpu), g.to(gpu)), ref.updateGradInput(x, g)) < 1e-12);
  ref.accGradParameters(x, g, 3.0);
  twin.accGradParameters(x.to(gpu), g.to(gpu), 3.0);
  CHECK(max_rel_error(twin.gradWeight, ref.gradWeight) < 1e-12);
  CHECK(max_rel_error(twin.gradBias, ref.gradBias) < 1e-12);
}

TEST_CASE("cudnn.Linear steady state: no device allocation once the buffers exist") {
  Generator gen(3104);
  cudnn::Linear twin(32, 16);
  twin.to(gpu);
  const Tensor x = uniform({8, 32}, -1, 1, gen, DType::Float32, gpu);
  const Tensor g = uniform({8, 16}, -1, 1, gen, DType::Float32, gpu);
  for (int i = 0; i < 2; ++i) {
    twin.forward(x);
    twin.backward(x, g);
  }
  const uint64_t mallocs = cuda::memory_stats().device_mallocs;
  const Tensor out = twin.output;
  for (int i = 0; i < 3; ++i) {
    twin.forward(x);
    twin.backward(x, g);
  }
  CHECK(cuda::memory_stats().device_mallocs == mallocs);
  CHECK(twin.output.shares_storage(out));  // the output buffer is reused
}

TEST_CASE("cudnn.Linear convert round trip") {
  Generator gen(3105);
  expect_convert_roundtrip(std::make_shared<nn::Linear>(5, 3), uniform({4, 5}, -1, 1, gen));
  expect_convert_roundtrip(std::make_shared<nn::Linear>(5, 3, false), uniform({5}, -1, 1, gen));
  expect_convert_roundtrip(std::make_shared<nn::Linear>(5, 3), uniform({2, 3, 4, 5}, -1, 1, gen));
}

TEST_CASE("cudnn.Linear printing and errors") {
  cudnn::Linear twin(4, 3);
  CHECK(twin.str() == "cudnn.Linear(4 -> 3)");
  CHECK(cudnn::Linear(4, 3, false).str() == "cudnn.Linear(4 -> 3) without bias");
  CHECK(twin.type_name() == "cudnn.Linear");
  // parameters still on the CPU
  CHECK_THROWS_WITH_AS(
      twin.forward(zeros({2, 4}, DType::Float32, gpu)),
      doctest::Contains("cudnn.Linear::updateOutput: parameters are on cpu but the input is on cuda:0"), Error);
  twin.to(gpu);
  CHECK_THROWS_WITH_AS(twin.forward(zeros({2, 4})),
                       "cudnn.Linear::updateOutput: expected input on a CUDA device, got float32 [2 x 4] on cpu "
                       "(move it with .to(tensor::Device::cuda()))",
                       Error);
  CHECK_THROWS_WITH_AS(twin.forward(zeros({2, 5}, DType::Float32, gpu)),
                       "cudnn.Linear::updateOutput: expected input of [4] or [batch x 4], got [2 x 5]", Error);
  CHECK_THROWS_WITH_AS(twin.forward(zeros({2, 4}, DType::Float64, gpu)),
                       doctest::Contains("cudnn.Linear::updateOutput: expected input of weight's dtype and device "
                                         "(float32 on cuda:0), got float64 [2 x 4] on cuda:0"),
                       Error);
  CHECK_THROWS_WITH_AS(twin.forward(zeros({2, 4}, DType::Int64, gpu)),
                       "cudnn.Linear::updateOutput: expected a float32, float64, float16 or bfloat16 input, got int64 "
                       "[2 x 4] on cuda:0",
                       Error);
  const Tensor x = zeros({2, 4}, DType::Float32, gpu);
  twin.forward(x);
  CHECK_THROWS_WITH_AS(
      twin.backward(x, zeros({2, 5}, DType::Float32, gpu)),
      "cudnn.Linear::updateGradInput: expected gradOutput of the output's shape [2 x 3] (for input [2 x 4]), got "
      "[2 x 5]",
      Error);
  CHECK_THROWS_WITH_AS(twin.backward(x, zeros({3, 2}, DType::Float32, gpu)),
                       doctest::Contains("expected gradOutput of the output's shape [2 x 3]"), Error);
  CHECK_THROWS_WITH_AS(twin.backward(x, zeros({2, 3})),
                       doctest::Contains("cudnn.Linear::updateGradInput: expected gradOutput on a CUDA device"), Error);
}

TEST_CASE(
    "cudnn.Linear forwardAdding matches nn's (the few rows' epilogue and cuBLAS then a sum), in a Sequential too") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  Generator gen(3107);
  for (DType dt : kDtypes) {
    // one to four rows of 16-bit data take the addend in the few rows' kernel; five and more, and
    // the other dtypes, a pass after cuBLAS
    for (const Shape& s : {Shape{1, 64}, Shape{3, 64}, Shape{1, 2, 64}, Shape{64}, Shape{5, 64}, Shape{2, 3, 64}}) {
      for (bool bias : {true, false}) {
        INFO(name(dt), " input ", shape_str(s), bias ? "" : " without bias");
        nn::Linear ref(64, 48, bias);
        cudnn::Linear twin(64, 48, bias);
        expect_twin_adding_matches(ref, twin, uniform(s, -1, 1, gen, DType::Float64), dt,
                                   TwinTolerance::for_dtype(dt).forward);
      }
    }
    INFO(name(dt), " Sequential(Linear, ReLU, Linear)");
    nn::Sequential ref{std::make_shared<nn::Linear>(64, 96), std::make_shared<nn::ReLU>(),
                       std::make_shared<nn::Linear>(96, 64)};
    nn::Sequential twin{std::make_shared<cudnn::Linear>(64, 96), std::make_shared<cudnn::ReLU>(),
                        std::make_shared<cudnn::Linear>(96, 64)};
    expect_twin_adding_matches(ref, twin, uniform({2, 64}, -1, 1, gen, DType::Float64), dt,
                               TwinTolerance::for_dtype(dt).forward);
  }
  // the addend is checked before the product: a wrong one changes nothing
  cudnn::Linear m(64, 48);
  m.to(gpu);
  const Tensor x = uniform({2, 64}, -1, 1, gen).to(gpu);
  const Tensor before = m.forward(x).cpu();
  CHECK_THROWS_WITH_AS(m.forwardAdding(x, zeros({2, 47}, DType::Float32, gpu)),
                       "cudnn.Linear::forwardAdding: expected a contiguous addend [2 x 48] of float32 on cuda:0, got "
                       "float32 [2 x 47] on cuda:0",
                       Error);
  CHECK(max_abs_diff(m.output.cpu(), before) == 0);
}

TEST_CASE("cudnn Sequential(Linear, GELU, Linear): a few rows' product takes the GELU in its epilogue, as the chain") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  Generator gen(3109);
  for (DType dt : kDtypes) {
    for (const char* approximate : {"tanh", "none"}) {
      for (const Shape& s : {Shape{1, 1, 64}, Shape{3, 64}, Shape{7, 64}}) {
        INFO(name(dt), " GELU ", approximate, " input ", shape_str(s));
        // against nn in float64: outputs and every gradient (the backward after the fused forward)
        nn::Sequential ref{std::make_shared<nn::Linear>(64, 96), std::make_shared<nn::GELU>(approximate),
                           std::make_shared<nn::Linear>(96, 64)};
        auto l1 = std::make_shared<cudnn::Linear>(64, 96);
        auto g = std::make_shared<cudnn::GELU>(approximate);
        auto l2 = std::make_shared<cudnn::Linear>(96, 64);
        nn::Sequential twin{l1, g, l2};
        const Tensor x64 = uniform(s, -1, 1, gen, DType::Float64);
        expect_twin_matches(ref, twin, x64, dt, TwinTolerance::for_dtype(dt));
        // and the chain's own bits: each child's forward in turn
        const Tensor x = x64.to(gpu, dt);
        const Tensor y = twin.forward(x).cpu();
        const Tensor hidden = g->output.cpu(), pre = l1->output.cpu();
        const Tensor want = l2->forward(g->forward(l1->forward(x))).cpu();
        CHECK(max_abs_diff(y.to(DType::Float64), want.to(DType::Float64)) == 0);
        CHECK(max_abs_diff(hidden.to(DType::Float64), g->output.cpu().to(DType::Float64)) == 0);
        CHECK(max_abs_diff(pre.to(DType::Float64), l1->output.cpu().to(DType::Float64)) == 0);
      }
    }
  }
}

// test_SpatialCrossMapLRN.cpp: cudnn.SpatialCrossMapLRN against nn.SpatialCrossMapLRN: odd and
// even sizes (the even-size window [c - (size - 1) / 2, c + size / 2] checked by hand too),
// windows wider than the channels, cuDNN's largest size, batch / batch 1 / non-batch, float32,
// float64, float16, bfloat16, a non-contiguous input; backward without a matching forward;
// convert round trip; cuDNN's argument limits and the other errors.
#include <doctest/doctest.h>

#include "convert/Convert.h"
#include "cudnn/SpatialCrossMapLRN.h"
#include "nn/SpatialCrossMapLRN.h"
#include "tests/support/SteadyState.h"
#include "tests/support/TwinCheck.h"

using namespace tensor;
using namespace testing;

namespace {

const Device gpu = Device::cuda(0);

struct LrnCfg {
  int64_t size;
  double alpha, beta, k;
  int64_t channels;
  const char* what;
};
const LrnCfg cfgs[] = {
    {5, 1e-4, 0.75, 1, 7, "size 5, Torch's defaults"},
    {5, 0.8, 0.75, 2, 6, "size 5, alpha 0.8, k 2"},
    {3, 1.5, 0.5, 1, 5, "size 3, beta 0.5"},
    {4, 1.0, 0.9, 1.5, 7, "even size 4: window [c - 1, c + 2]"},
    {2, 2.0, 0.75, 1, 5, "even size 2: window [c, c + 1]"},
    {1, 0.3, 1.2, 0.7, 4, "size 1"},
    {7, 2.0, 0.75, 1, 4, "size 7, window wider than the channels"},
    {16, 1.0, 0.75, 1, 18, "size 16 (cuDNN's largest, even)"},
};

// For each configuration [2 x C x 3 x 5], [1 x C x 3 x 5] and [C x 3 x 5], inputs in [-2, 2].
void expect_lrn_twins_match(DType dt, bool noncontiguous = false) {
  Generator gen(2718);
  INFO("input seed 2718");
  for (const LrnCfg& c : cfgs) {
    for (const Shape& shape : {Shape{2, c.channels, 3, 5}, Shape{1, c.channels, 3, 5}, Shape{c.channels, 3, 5}}) {
      INFO(c.what, " on ", shape_str(shape), " in ", std::string(name(dt)),
           std::string(noncontiguous ? ", non-contiguous" : ""));
      nn::SpatialCrossMapLRN ref(c.size, c.alpha, c.beta, c.k);
      cudnn::SpatialCrossMapLRN twin(c.size, c.alpha, c.beta, c.k);
      expect_twin_matches(ref, twin, uniform(shape, -2, 2, gen, DType::Float64), dt, TwinTolerance::for_dtype(dt),
                          noncontiguous);
    }
  }
}

}  // namespace

TEST_CASE("cudnn.SpatialCrossMapLRN matches nn in float32 and float64 (odd and even sizes, batch and not)") {
  expect_lrn_twins_match(DType::Float32);
  expect_lrn_twins_match(DType::Float64);
}

TEST_CASE("cudnn.SpatialCrossMapLRN matches nn in float16 and bfloat16") {
  expect_lrn_twins_match(DType::Float16);
  expect_lrn_twins_match(DType::BFloat16);
}

TEST_CASE("cudnn.SpatialCrossMapLRN matches nn with a non-contiguous input") { expect_lrn_twins_match(DType::Float32, true); }

TEST_CASE("cudnn.SpatialCrossMapLRN even-size window by hand: size 2 sums channels c and c + 1") {
  // channels 1, 2, 3; alpha / size = 1, beta 1, k 1: scale 1 + (1 + 4), 1 + (4 + 9), 1 + 9
  cudnn::SpatialCrossMapLRN m(2, 2.0, 1.0, 1.0);
  m.to(gpu);
  const Tensor x = from_vector<double>({1, 2, 3}, {3, 1, 1}).to(gpu);
  CHECK(max_abs_diff(m.forward(x), from_vector<double>({1.0 / 6, 2.0 / 14, 3.0 / 10}, {3, 1, 1})) <= 1e-14);
  // size 4 over 5 channels of ones: windows [c - 1, c + 2] clipped hold 3, 4, 4, 3, 2 channels
  cudnn::SpatialCrossMapLRN e(4, 4.0, 1.0, 1.0);
  e.to(gpu);
  const Tensor y = e.forward(ones({1, 5, 1, 1}, DType::Float64, gpu));
  CHECK(max_abs_diff(y, from_vector<double>({1.0 / 4, 1.0 / 5, 1.0 / 5, 1.0 / 4, 1.0 / 3}, {1, 5, 1, 1})) <= 1e-14);
}

TEST_CASE("cudnn.SpatialCrossMapLRN backward without a matching forward runs the forward first, as nn") {
  Generator gen(8);
  const Tensor x = uniform({2, 6, 3, 3}, -1, 1, gen, DType::Float64);
  const Tensor g = uniform({2, 6, 3, 3}, -1, 1, gen, DType::Float64);
  nn::SpatialCrossMapLRN ref(5, 0.5, 0.75, 1);
  const Tensor want = ref.backward(x, g).clone();
  cudnn::SpatialCrossMapLRN twin(5, 0.5, 0.75, 1);
  twin.to(gpu);
  CHECK(max_abs_diff(twin.backward(x.to(gpu), g.to(gpu)), want) < 1e-12);  // no forward yet
  twin.forward(uniform({1, 6, 3, 3}, -1, 1, gen, DType::Float64).to(gpu));
  CHECK(max_abs_diff(twin.backward(x.to(gpu), g.to(gpu)), want) < 1e-12);  // a forward of another shape
  twin.forward(x.to(gpu, DType::Float32));
  CHECK(max_abs_diff(twin.backward(x.to(gpu), g.to(gpu)), want) < 1e-12);  // of another dtype
  CHECK_FALSE(twin.scale.defined());                                        // cuDNN keeps its scale inside
}

TEST_CASE("cudnn.SpatialCrossMapLRN gradients unaffected by an in-place layer writing into the output") {
  Generator gen(10);
  const Tensor x = uniform({2, 7, 3, 4}, -2, 2, gen, DType::Float64);
  const Tensor g = uniform({2, 7, 3, 4}, -1, 1, gen, DType::Float64);
  nn::SpatialCrossMapLRN ref(4, 1.0, 0.75, 1);
  ref.forward(x);
  const Tensor want = ref.backward(x, g).clone();
  cudnn::SpatialCrossMapLRN twin(4, 1.0, 0.75, 1);
  twin.to(gpu);
  const Tensor xg = x.to(gpu), gg = g.to(gpu);
  twin.forward(xg);
  twin.output.clamp_(0.0, 1e30);  // as ReLU(true) would
  CHECK(max_abs_diff(twin.backward(xg, gg), want) < 1e-12);
  twin.forward(xg);
  twin.output.fill_(0.0);
  CHECK(max_abs_diff(twin.backward(xg, gg), want) < 1e-12);
}

TEST_CASE("cudnn.SpatialCrossMapLRN convert round trip keeps size, alpha, beta and k") {
  Generator gen(9);
  expect_convert_roundtrip(std::make_shared<nn::SpatialCrossMapLRN>(), uniform({2, 7, 4, 5}, -2, 2, gen));
  expect_convert_roundtrip(std::make_shared<nn::SpatialCrossMapLRN>(4, 0.5, 0.6, 1.5), uniform({6, 4, 5}, -2, 2, gen));
  nn::ModulePtr cu = nn::convert(std::make_shared<nn::SpatialCrossMapLRN>(3, 0.25, 0.5, 2.0), cudnn::backend);
  REQUIRE(cu->type_name() == "cudnn.SpatialCrossMapLRN");
  const auto& c = dynamic_cast<cudnn::SpatialCrossMapLRN&>(*cu);
  CHECK((c.size == 3 && c.alpha == 0.25 && c.beta == 0.5 && c.k == 2.0));
  nn::ModulePtr back = nn::convert(cu, nn::backend);
  REQUIRE(back->type_name() == "nn.SpatialCrossMapLRN");
  const auto& b = dynamic_cast<nn::SpatialCrossMapLRN&>(*back);
  CHECK((b.size == 3 && b.alpha == 0.25 && b.beta == 0.5 && b.k == 2.0));
}

TEST_CASE("cudnn.SpatialCrossMapLRN printing and errors") {
  cudnn::SpatialCrossMapLRN twin;
  CHECK(twin.str() == "cudnn.SpatialCrossMapLRN");
  twin.to(gpu);
  const std::string name = "cudnn.SpatialCrossMapLRN::updateOutput: ";
  CHECK_THROWS_WITH_AS(twin.forward(zeros({6, 3, 3})),
                       (name + "expected input on a CUDA device, got float32 [6 x 3 x 3] on cpu (move it with "
                               ".to(tensor::Device::cuda()))")
                           .c_str(),
                       Error);
  CHECK_THROWS_WITH_AS(
      twin.forward(zeros({6, 3, 3}, DType::Int64, gpu)),
      doctest::Contains((name + "expected a float32, float64, float16 or bfloat16 input, got int64").c_str()), Error);
  CHECK_THROWS_WITH_AS(twin.forward(zeros({6, 3}, DType::Float32, gpu)),
                       (name + "expected 3D [C x H x W] or 4D [N x C x H x W] input, got [6 x 3]").c_str(), Error);
  CHECK_THROWS_WITH_AS(twin.forward(zeros({1, 1, 6, 3, 3}, DType::Float32, gpu)),
                       doctest::Contains("input, got [1 x 1 x 6 x 3 x 3]"), Error);

  // cuDNN's limits: size 1..16, k >= 1e-5, beta >= 0.01 (keep such a layer in nn)
  const Tensor x = zeros({2, 6, 3, 3}, DType::Float32, gpu);
  CHECK_THROWS_WITH_AS(cudnn::SpatialCrossMapLRN(17).forward(x),
                       doctest::Contains((name + "cuDNN takes size 1..16").c_str()), Error);
  CHECK_THROWS_WITH_AS(cudnn::SpatialCrossMapLRN(17).forward(x), doctest::Contains("got size 17"), Error);
  CHECK_THROWS_WITH_AS(cudnn::SpatialCrossMapLRN(5, 1e-4, 0.75, 1e-6).forward(x), doctest::Contains("got size 5, k 0.000001"),
                       Error);
  CHECK_THROWS_WITH_AS(cudnn::SpatialCrossMapLRN(5, 1e-4, 0.005, 1).forward(x), doctest::Contains("beta 0.005"), Error);
  CHECK_THROWS_WITH_AS(cudnn::SpatialCrossMapLRN(1000000000000).forward(x),
                       doctest::Contains("got size 1000000000000"), Error);
  CHECK_THROWS_WITH_AS(cudnn::SpatialCrossMapLRN(0), doctest::Contains("expected size >= 1, got 0"), Error);

  twin.forward(x);
  CHECK_THROWS_WITH_AS(twin.backward(x, zeros({2, 6, 3, 2}, DType::Float32, gpu)),
                       "cudnn.SpatialCrossMapLRN::updateGradInput: expected gradOutput of the input's shape "
                       "[2 x 6 x 3 x 3], got [2 x 6 x 3 x 2]",
                       Error);
  CHECK_THROWS_WITH_AS(twin.backward(x, zeros({2, 6, 3, 3}, DType::Float64, gpu)),
                       doctest::Contains("expected gradOutput of input's dtype and device"), Error);
  CHECK_THROWS_WITH_AS(twin.backward(x, zeros({2, 6, 3, 3})),
                       doctest::Contains("updateGradInput: expected gradOutput on a CUDA device"), Error);
}

TEST_CASE("cudnn.SpatialCrossMapLRN steady state: no device allocation after a warm-up") {
  Generator gen(4);
  cudnn::SpatialCrossMapLRN m(5, 0.5, 0.75, 1);
  m.to(gpu);
  expect_no_steady_state_allocations(m, uniform({2, 7, 4, 5}, -2, 2, gen).to(gpu));
}

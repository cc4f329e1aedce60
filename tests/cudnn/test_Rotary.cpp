// test_Rotary.cpp: cudnn::rotary_embedding_ (our kernel, cudnn/kernels/Rotary.h) and
// cudnn.RotaryEmbedding against nn in float32 (TF32 off), float64, float16 and bfloat16: both
// styles, partial rotation, offsets on the CPU and on the device, strided views of a projection
// buffer rotated in place (nothing else touched), head dims past the kernel's inv_freq table,
// the inverse, NaN and Inf parity, a negative offset on the device (NaN, Note [Rotary offsets on
// the device]), empty inputs, a captured CUDA graph replayed with new offsets, the errors and
// the convert round trip.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "cudnn/Config.h"
#include "cudnn/Functional.h"
#include "cudnn/RotaryEmbedding.h"
#include "nn/Rotary.h"
#include "nn/RotaryEmbedding.h"
#include "tensor/Cuda.h"
#include "tests/support/ErrorText.h"
#include "tests/support/NonFinite.h"
#include "tests/support/TwinCheck.h"

using namespace tensor;
using namespace testing;

namespace {
const Device gpu = Device::cuda(0);
const DType kDtypes[] = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16};

nn::RotaryOptions opts(nn::RotaryStyle style, double theta = 10000, int64_t rotaryDim = 0) {
  nn::RotaryOptions o;
  o.style = style;
  o.theta = theta;
  o.rotaryDim = rotaryDim;
  return o;
}

// The bound on |cudnn - nn| for inputs in [-3, 3] in `dt`: float32 and float64 differ only by
// the device's cos and sin (a few ulps); 16-bit outputs are nn's float32 result rounded once,
// which may round the other way: one ulp of the largest |y|.
double tolerance(DType dt) {
  switch (dt) {
    case DType::Float32:
      return 2e-6;
    case DType::Float64:
      return 1e-13;
    case DType::Float16:
      return 4e-3;  // an ulp of 4 (|y| <= 3 sqrt 2): 2^-8
    default:
      return 3.2e-2;  // bfloat16: 2^-5
  }
}

// nn's op on a float32 (float64 for float64) CPU copy of x, in x's dtype.
Tensor nn_rotated(const Tensor& x, const Tensor& offsets, const nn::RotaryOptions& o, bool inverse = false) {
  const DType compute = x.dtype() == DType::Float64 ? DType::Float64 : DType::Float32;
  Tensor y = x.to(Device::cpu(), compute).contiguous();
  nn::rotary_embedding_(y, offsets.defined() ? offsets.cpu() : Tensor(), o, inverse);
  return y.to(x.dtype());
}

void expect_close(const char* what, const Tensor& got, const Tensor& want, double tol) {
  INFO(what, ": got ", got.description(), ", want ", want.description());
  REQUIRE(got.sizes() == want.sizes());
  expect_same_nonfinite(what, got.cpu().to(DType::Float64), want.cpu().to(DType::Float64), tol);
}
}  // namespace

TEST_CASE("cudnn.RotaryEmbedding matches nn.RotaryEmbedding in every dtype: styles, partial, offsets, strides") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  Generator gen(4801);
  struct Case {
    Shape input;
    nn::RotaryOptions options;
    std::vector<int64_t> offsets;  // empty: none
  };
  const Case cases[] = {
      {{2, 3, 5, 8}, opts(nn::RotaryStyle::Half), {}},
      {{2, 3, 5, 8}, opts(nn::RotaryStyle::Interleaved), {0, 9}},
      {{2, 4, 3, 64}, opts(nn::RotaryStyle::Half, 500000), {17, 1000}},
      {{1, 2, 7, 12}, opts(nn::RotaryStyle::Half, 10000, 8), {3}},
      {{3, 1, 4, 10}, opts(nn::RotaryStyle::Interleaved, 1e6, 6), {0, 1, 2}},
      {{1, 2, 2, 2}, opts(nn::RotaryStyle::Half), {5}},        // one pair a head
      {{2, 8, 1, 128}, opts(nn::RotaryStyle::Half), {31, 4}},  // a decoding step
  };
  for (const Case& c : cases) {
    for (DType dt : kDtypes) {
      for (bool nc : {false, true}) {
        for (bool deviceOffsets : {false, true}) {
          if (c.offsets.empty() && deviceOffsets) continue;
          INFO(shape_str(c.input), " ", std::string(nn::rotary_style_name(c.options.style)), " rotary_dim ",
               c.options.rotaryDim, " ", std::string(name(dt)), nc ? " non-contiguous" : "",
               deviceOffsets ? " offsets on the device" : "");
          nn::RotaryEmbedding ref(c.options);
          cudnn::RotaryEmbedding twin(c.options);
          if (!c.offsets.empty()) {
            const Tensor offsets = from_vector<int64_t>(c.offsets, {static_cast<int64_t>(c.offsets.size())});
            ref.setOffsets(offsets);
            twin.setOffsets(deviceOffsets ? offsets.to(gpu) : offsets);
          }
          // nn's reference runs in float64; float32 angles (the twin's for all but float64)
          // are off by up to ~1.2e-7 of the position in radians
          TwinTolerance tol = TwinTolerance::for_dtype(dt);
          if (dt != DType::Float64) {
            int64_t maxPos = c.input[2];
            for (int64_t v : c.offsets) maxPos = std::max(maxPos, v + c.input[2]);
            tol.forward = std::max(tol.forward, 2.5e-7 * static_cast<double>(maxPos));
            tol.backward = std::max(tol.backward, 2.5e-7 * static_cast<double>(maxPos));
          }
          expect_twin_matches(ref, twin, uniform(c.input, -2, 2, gen, DType::Float64), dt, tol, nc);
        }
      }
    }
  }
}

TEST_CASE("cudnn::rotary_embedding_ rotates strided views of a projection buffer in place, as nn does") {
  Generator gen(4802);
  const int64_t B = 2, S = 5, H = 3, Hkv = 1, D = 16;
  for (DType dt : kDtypes) {
    for (auto style : {nn::RotaryStyle::Half, nn::RotaryStyle::Interleaved}) {
      for (int64_t R : {int64_t{0}, int64_t{10}}) {
        INFO(std::string(name(dt)), " ", std::string(nn::rotary_style_name(style)), " rotary_dim ", R);
        const nn::RotaryOptions o = opts(style, 10000, R);
        const Tensor offsets = from_vector<int64_t>({4, 11}, {2}).to(gpu);
        // [B x S x (H + 2 Hkv) D]: q's and k's heads viewed as [B x heads x S x D]
        const Tensor buffer = uniform({B, S, (H + 2 * Hkv) * D}, -3, 3, gen, dt).to(gpu);
        const Tensor before = buffer.clone();
        Tensor q = buffer.narrow(2, 0, H * D).view({B, S, H, D}).transpose(1, 2);
        Tensor k = buffer.narrow(2, H * D, Hkv * D).view({B, S, Hkv, D}).transpose(1, 2);
        const Tensor wantQ = nn_rotated(q, offsets, o), wantK = nn_rotated(k, offsets, o);
        cudnn::rotary_embedding_(q, offsets, o);
        cudnn::rotary_embedding_(k, offsets, o);
        expect_close("q", q, wantQ, tolerance(dt));
        expect_close("k", k, wantK, tolerance(dt));
        const Tensor v = buffer.narrow(2, (H + Hkv) * D, Hkv * D);
        CHECK(max_abs_diff(v.cpu(), before.narrow(2, (H + Hkv) * D, Hkv * D).cpu()) == 0);  // v untouched
        // and back: the inverse
        cudnn::rotary_embedding_(q, offsets, o, true);
        expect_close("inverse", q, before.narrow(2, 0, H * D).view({B, S, H, D}).transpose(1, 2),
                     dt == DType::Float64 ? 1e-13 : 4 * tolerance(dt));
      }
    }
  }
}

TEST_CASE("cudnn::rotary_embedding_: head dims past the kernel's inv_freq table (D 1024)") {
  Generator gen(4803);
  for (DType dt : {DType::Float32, DType::Float64}) {
    const nn::RotaryOptions o = opts(nn::RotaryStyle::Half);
    const Tensor offsets = from_vector<int64_t>({0, 50}, {2});
    Tensor x = uniform({2, 2, 3, 1024}, -1, 1, gen, dt).to(gpu);
    const Tensor want = nn_rotated(x, offsets, o);
    cudnn::rotary_embedding_(x, offsets, o);
    // the device's pow for the pairs past 256: an ulp of inv_freq times angles up to 52
    expect_close("D 1024", x, want, dt == DType::Float32 ? 2e-5 : 1e-12);
  }
}

TEST_CASE("cudnn.RotaryEmbedding: NaN and Inf in the input and in gradOutput at nn's places") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  Generator gen(4804);
  for (DType dt : kDtypes) {
    for (auto style : {nn::RotaryStyle::Half, nn::RotaryStyle::Interleaved}) {
      INFO(std::string(name(dt)), " ", std::string(nn::rotary_style_name(style)));
      nn::RotaryEmbedding ref(opts(style, 10000, 4));
      cudnn::RotaryEmbedding twin(opts(style, 10000, 4));
      const Tensor x = uniform({2, 2, 3, 6}, -1, 1, gen, DType::Float64);
      expect_twin_nonfinite_matches(ref, twin, x, {0, 5, 13, 40}, dt, TwinTolerance::for_dtype(dt));
      expect_twin_nonfinite_gradient_matches(ref, twin, x, {1, 4, 22, 71}, dt, TwinTolerance::for_dtype(dt));
    }
  }
}

TEST_CASE("cudnn::rotary_embedding_: a negative offset on the device gives NaN in its row's rotated dims") {
  Generator gen(4805);
  const nn::RotaryOptions o = opts(nn::RotaryStyle::Half, 10000, 4);
  Tensor x = uniform({2, 2, 3, 6}, -1, 1, gen).to(gpu);
  const Tensor before = x.cpu();
  cudnn::rotary_embedding_(x, from_vector<int64_t>({2, -1}, {2}).to(gpu), o);
  const Tensor y = x.cpu();
  CHECK_FALSE(has_nonfinite(y.select(0, 0)));
  const auto bad = y.select(0, 1).narrow(2, 0, 4).contiguous().to_vector<float>();
  for (float v : bad) CHECK(std::isnan(v));
  CHECK(max_abs_diff(y.select(0, 1).narrow(2, 4, 2), before.select(0, 1).narrow(2, 4, 2)) == 0);
  // the host refuses one it reads, before anything is written
  Tensor z = before.to(gpu);
  CHECK(error_of([&] {
          cudnn::rotary_embedding_(z, from_vector<int64_t>({2, -1}, {2}), o);
        }) == "cudnn.rotary_embedding_: expected offsets >= 0, got -1 at batch entry 1");
  CHECK(max_abs_diff(z.cpu(), before) == 0);
}

TEST_CASE("cudnn::rotary_embedding_ in a captured CUDA graph replays with the offsets' new values") {
  Generator gen(4806);
  const nn::RotaryOptions o = opts(nn::RotaryStyle::Interleaved, 10000);
  const Tensor source = uniform({2, 4, 1, 32}, -1, 1, gen).to(gpu);
  Tensor x = source.clone();
  Tensor offsets = from_vector<int64_t>({0, 0}, {2}).to(gpu);
  auto work = [&] {
    x.copy_(source);
    cudnn::rotary_embedding_(x, offsets, o);
  };
  work();  // warm-up
  tensor::cuda::Graph graph = tensor::cuda::Graph::capture(work, 0);
  for (const std::vector<int64_t>& step : {std::vector<int64_t>{3, 8}, std::vector<int64_t>{4, 9}}) {
    offsets.copy_(from_vector<int64_t>(step, {2}));
    graph.replay();
    expect_close("replay", x, nn_rotated(source, offsets, o), tolerance(DType::Float32));
  }
}

TEST_CASE("cudnn.RotaryEmbedding and cudnn::rotary_embedding_: empty inputs, errors, convert round trip") {
  Generator gen(4807);
  for (const Shape& s : {Shape{0, 2, 3, 4}, Shape{2, 0, 3, 4}, Shape{2, 2, 0, 4}}) {
    for (DType dt : kDtypes) {
      INFO(shape_str(s), " ", std::string(name(dt)));
      cudnn::RotaryEmbedding m;
      const Tensor x = zeros(s, dt, gpu);
      CHECK(m.forward(x).sizes() == s);
      CHECK(m.backward(x, x).sizes() == s);
    }
  }
  cudnn::RotaryEmbedding m;
  CHECK(m.str() == "cudnn.RotaryEmbedding(theta=10000, half)");
  CHECK_THROWS_WITH_AS(m.forward(zeros({2, 3, 4, 5}, DType::Float32, gpu)),
                       "cudnn.RotaryEmbedding::updateOutput: expected an even head dim D >= 2 (rotary_dim 0: the whole "
                       "head rotates), got x [2 x 3 x 4 x 5]",
                       Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({3, 4, 6}, DType::Float32, gpu)),
                       "cudnn.RotaryEmbedding::updateOutput: expected x [B x H x S x D] (4-d), got [3 x 4 x 6]", Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({2, 3, 4, 6})), doctest::Contains("cudnn.RotaryEmbedding::updateOutput"), Error);
  m.setOffsets(zeros({3}, DType::Int64, gpu));
  CHECK_THROWS_WITH_AS(m.forward(zeros({2, 3, 4, 6}, DType::Float32, gpu)),
                       doctest::Contains("cudnn.RotaryEmbedding::updateOutput: expected offsets int64 [2]"), Error);
  Tensor cpu = zeros({2, 3, 4, 6});
  CHECK(has(error_of([&] { cudnn::rotary_embedding_(cpu, Tensor(), {}); }), "cudnn.rotary_embedding_: "));
  Tensor ints = zeros({2, 3, 4, 6}, DType::Int64, gpu);
  CHECK(has(error_of([&] { cudnn::rotary_embedding_(ints, Tensor(), {}); }), "cudnn.rotary_embedding_: "));

  expect_convert_roundtrip(std::make_shared<nn::RotaryEmbedding>(opts(nn::RotaryStyle::Interleaved, 500000, 4)),
                           uniform({2, 3, 4, 6}, -1, 1, gen));
}

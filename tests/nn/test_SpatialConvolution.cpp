// test_SpatialConvolution.cpp
#include <doctest/doctest.h>

#include <cmath>
#include <type_traits>

#include <omp.h>

#include "nn/Buffers.h"
#include "nn/SpatialConvolution.h"
#include "tensor/Safetensors.h"
#include "tests/support/ConvReference.h"
#include "tests/support/GradCheck.h"

using namespace tensor;
using namespace testing;

namespace {

struct Config {
  int64_t nIn, nOut, kW, kH, dW, dH, padW, padH, groups, dilationW, dilationH, batch, iH, iW;
};

std::unique_ptr<nn::SpatialConvolution> make(const Config& c) {
  auto m = std::make_unique<nn::SpatialConvolution>(c.nIn, c.nOut, c.kW, c.kH, c.dW, c.dH, c.padW, c.padH, c.groups);
  m->dilationW = c.dilationW;
  m->dilationH = c.dilationH;
  return m;
}

convref::Params params_of(const nn::SpatialConvolution& m) {
  return {{m.dH, m.dW}, {m.padH, m.padW}, {m.dilationH, m.dilationW}, {}, m.groups};
}

// stride, padding (asymmetric), groups 1/2/4, dilation, batch 1, odd and non-square sizes and
// kernels, 1x1 kernels (the no-im2col path), strides larger than the kernel, whole-image kernels,
// padding wider than the kernel (outputs that see only padding)
const std::vector<Config> configs = {
    {3, 4, 3, 3, 1, 1, 0, 0, 1, 1, 1, 2, 7, 7},  {4, 6, 3, 2, 2, 1, 1, 0, 2, 1, 1, 3, 9, 8},
    {2, 3, 1, 1, 1, 1, 0, 0, 1, 1, 1, 2, 5, 6},  {4, 4, 1, 1, 1, 1, 0, 0, 2, 1, 1, 2, 3, 5},
    {2, 2, 5, 3, 3, 2, 2, 1, 1, 1, 1, 1, 11, 7}, {3, 2, 3, 3, 1, 1, 2, 2, 1, 2, 3, 2, 9, 10},
    {4, 8, 3, 3, 2, 2, 1, 1, 4, 1, 1, 2, 6, 7},  {2, 3, 2, 2, 3, 3, 0, 0, 1, 1, 1, 2, 8, 7},
    {3, 2, 1, 1, 2, 2, 0, 0, 1, 1, 1, 3, 5, 5},  {2, 3, 4, 5, 1, 1, 0, 0, 1, 1, 1, 2, 5, 4},
    {6, 4, 2, 3, 1, 2, 1, 1, 2, 2, 1, 1, 6, 5},  {2, 3, 1, 2, 2, 1, 2, 3, 1, 1, 1, 2, 4, 5},
};

// m's forward of x against the direct loop (in float64), on the whole team and on one thread,
// within tol; with a batch of several, a lone sample gets what it gets in the batch
void expect_direct_loop_on_threads(nn::SpatialConvolution& m, const Tensor& x, double tol) {
  const Tensor ref =
      convref::conv(x.to(DType::Float64), m.weight.to(DType::Float64), m.bias.to(DType::Float64), params_of(m));
  for (int threads : {0, 1}) {
    INFO(m.str(), " input ", shape_str(x.sizes()), " ", name(x.dtype()), threads ? " on one thread" : " on the team");
    const int saved = omp_get_max_threads();
    if (threads) omp_set_num_threads(threads);
    const Tensor y = m.forward(x).clone();
    omp_set_num_threads(saved);
    REQUIRE(y.sizes() == ref.sizes());
    CHECK(max_abs_diff(y.to(DType::Float64), ref) < tol);
    if (x.size(0) > 1) CHECK(max_abs_diff(m.forward(x[1]), y[1]) == 0);
  }
}

}  // namespace

TEST_CASE("SpatialConvolution forward matches a hand computation") {
  nn::SpatialConvolution m(1, 1, 2, 2);
  m.weight.copy_(from_vector<float>({1, 2, 3, 4}, {1, 1, 2, 2}));
  m.bias.fill_(0.5);
  const Tensor x = arange(9).view({1, 3, 3});
  const Tensor y = m.forward(x);
  CHECK(y.sizes() == Shape{1, 2, 2});
  CHECK(y.to_vector<float>() == std::vector<float>{27.5f, 37.5f, 57.5f, 67.5f});
  // stride 2, padding 1: the corner windows see 1, 2 and 4 pixels
  nn::SpatialConvolution p(1, 1, 2, 2, 2, 2, 1, 1);
  p.weight.copy_(m.weight);
  p.bias.fill_(0.5);
  CHECK(p.forward(x).to_vector<float>() == std::vector<float>{0.5f, 11.5f, 30.5f, 67.5f});
}

TEST_CASE("SpatialConvolution forward matches the direct loop") {
  Generator gen(20261201);
  INFO("data seed 20261201");
  for (const Config& c : configs) {
    auto m = make(c);
    INFO(m->str(), " dilation ", c.dilationW, ",", c.dilationH, " input ", c.batch, "x", c.nIn, "x", c.iH, "x", c.iW);
    const Tensor x = uniform({c.batch, c.nIn, c.iH, c.iW}, -1, 1, gen);
    const Tensor ref = convref::conv(x, m->weight, m->bias, params_of(*m));
    const Tensor y = m->forward(x).clone();
    REQUIRE(y.sizes() == ref.sizes());
    CHECK(max_abs_diff(y, ref) < 1e-5);
    // non-batch form: the same numbers without the batch dim
    CHECK(max_abs_diff(m->forward(x[0]), y[0]) == 0);
    // float64, and the batch-parallel path gives each sample what a lone sample gets
    m->to(DType::Float64);
    const Tensor x64 = x.to(DType::Float64);
    CHECK(max_abs_diff(m->forward(x64), ref) < 1e-12);
    const Tensor y64 = m->output.clone();
    for (int64_t n = 0; n < c.batch; ++n) CHECK(max_abs_diff(m->forward(x64[n]), y64[n]) == 0);
  }
}

// The same-size stride-1 geometries that im2col and the backward-data fold take as shifted
// runs (Note [Shifted runs] in nn/kernels/Convolution.cpp): square and non-square kernels and
// images, dilation, rows or columns without padding, a kernel larger than the image. Values
// against the direct loops, and non-finite values at the rows' first and last columns (where a
// shifted run reads the neighbouring row) reach exactly the outputs and gradients whose windows
// hold them (for the weight gradient, the sum over the pixels inside the image: a non-finite
// gradOutput does not meet the zeros im2col writes outside it, Note [Weight gradient past the
// image] in nn/kernels/Convolution.cpp).
TEST_CASE("SpatialConvolution with output size = input size, stride 1: values, and where NaN and Inf reach") {
  const std::vector<Config> same = {
      {3, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 2, 5, 6}, {2, 3, 5, 3, 1, 1, 2, 1, 1, 1, 1, 2, 4, 7},
      {2, 2, 3, 3, 1, 1, 2, 2, 1, 2, 2, 1, 6, 5}, {2, 3, 3, 1, 1, 1, 1, 0, 1, 1, 1, 2, 3, 4},
      {2, 3, 1, 3, 1, 1, 0, 1, 1, 1, 1, 2, 4, 3}, {3, 2, 5, 5, 1, 1, 2, 2, 1, 1, 1, 1, 2, 3},
      {4, 4, 3, 3, 1, 1, 1, 1, 2, 1, 1, 2, 4, 4},
  };
  Generator gen(20261126);
  for (const Config& c : same) {
    auto m = make(c);
    m->to(DType::Float64);
    INFO(m->str(), " dilation ", c.dilationW, ",", c.dilationH, " input ", c.batch, "x", c.nIn, "x", c.iH, "x", c.iW);
    Tensor x = uniform({c.batch, c.nIn, c.iH, c.iW}, -1, 1, gen, DType::Float64);
    const Tensor y = m->forward(x).clone();
    REQUIRE(y.sizes() == Shape{c.batch, c.nOut, c.iH, c.iW});
    CHECK(max_abs_diff(y, convref::conv(x, m->weight, m->bias, params_of(*m))) < 1e-12);
    const Tensor gy = uniform(y.sizes(), -1, 1, gen, DType::Float64);
    CHECK(max_abs_diff(m->updateGradInput(x, gy), convref::full_conv(gy, m->weight, Tensor(), params_of(*m))) < 1e-12);
    // non-finite values in the first and last column of rows, in the input and in gradOutput
    x.set({0, 0, 0, c.iW - 1}, std::nan(""));
    x.set({c.batch - 1, c.nIn - 1, c.iH - 1, 0}, INFINITY);
    Tensor g = gy.clone();
    g.set({0, 0, c.iH - 1, 0}, std::nan(""));
    g.set({c.batch - 1, c.nOut - 1, 0, c.iW - 1}, -INFINITY);
    const auto same_nonfinite = [](const std::string& what, const Tensor& got, const Tensor& want) {
      INFO(what);
      const auto a = got.to_vector<double>(), b = want.to_vector<double>();
      REQUIRE(a.size() == b.size());
      for (size_t i = 0; i < a.size(); ++i) {
        CAPTURE(i);
        CHECK(std::isnan(a[i]) == std::isnan(b[i]));
        CHECK(std::isinf(a[i]) == std::isinf(b[i]));
        if (std::isfinite(b[i])) CHECK(std::abs(a[i] - b[i]) < 1e-12);
      }
    };
    same_nonfinite("output", m->forward(x), convref::conv(x, m->weight, m->bias, params_of(*m)));
    same_nonfinite("gradInput", m->updateGradInput(x, g), convref::full_conv(g, m->weight, Tensor(), params_of(*m)));
    // the weight gradient: gw[o, c, k] = sum over samples and the positions p whose tap k falls inside
    // the image of g[n, o, p] x[n, c, p + offset(k)]
    m->zeroGradParameters();
    m->accGradParameters(x, g, 1.0);
    Tensor want = zeros_like(m->gradWeight);
    for (int64_t o = 0; o < c.nOut; ++o)
      for (int64_t ci = 0; ci < c.nIn / c.groups; ++ci)
        for (int64_t kh = 0; kh < c.kH; ++kh)
          for (int64_t kw = 0; kw < c.kW; ++kw) {
            double acc = 0;
            const int64_t cin = o / (c.nOut / c.groups) * (c.nIn / c.groups) + ci;
            for (int64_t n = 0; n < c.batch; ++n)
              for (int64_t h = 0; h < c.iH; ++h)
                for (int64_t w = 0; w < c.iW; ++w) {
                  const int64_t ih = h - c.padH + kh * c.dilationH, iw = w - c.padW + kw * c.dilationW;
                  if (ih >= 0 && ih < c.iH && iw >= 0 && iw < c.iW)
                    acc += g.get({n, o, h, w}) * x.get({n, cin, ih, iw});
                }
            want.set({o, ci, kh, kw}, acc);
          }
    same_nonfinite("gradWeight", m->gradWeight, want);
  }
}

TEST_CASE("SpatialConvolution matches PyTorch's conv2d with groups and dilation") {
  // scripts/make_conv_reference.py: stride (2, 1), padding (1, 0), dilation (2, 1), groups 2
  const auto ref = load_safetensors(std::string(CUDNN_NN_TEST_DATA) + "/nn/conv_reference.safetensors").tensors;
  nn::SpatialConvolution m(4, 6, 2, 3, 1, 2, 0, 1, 2);
  m.dilationH = 2;
  m.to(DType::Float64);
  m.weight.copy_(ref.at("conv2d.w"));
  m.bias.copy_(ref.at("conv2d.b"));
  const Tensor y = m.forward(ref.at("conv2d.x"));
  REQUIRE(y.sizes() == ref.at("conv2d.y").sizes());
  CHECK(max_abs_diff(y, ref.at("conv2d.y")) < 1e-12);
  CHECK(max_abs_diff(convref::conv(ref.at("conv2d.x"), m.weight, m.bias, params_of(m)), ref.at("conv2d.y")) < 1e-12);
}

TEST_CASE("SpatialConvolution without bias, non-contiguous input, buffer reuse") {
  Generator gen(5);
  nn::SpatialConvolution m(3, 4, 3, 2, 1, 2, 1, 0);
  m.noBias();
  CHECK(m.parameters().size() == 1);
  CHECK(!m.bias.defined());
  const Tensor x = uniform({2, 6, 7, 3}, -1, 1, gen).permute({0, 3, 1, 2});  // [2 x 3 x 6 x 7]
  REQUIRE(!x.is_contiguous());
  const Tensor ref = convref::conv(x, m.weight, Tensor(), params_of(m));
  CHECK(max_abs_diff(m.forward(x), ref) < 1e-5);
  const auto storage = m.output.storage();
  m.forward(x.contiguous());
  CHECK(m.output.storage() == storage);
  m.to(DType::Float64);
  expect_gradients_ok(m, x.to(DType::Float64));
}

TEST_CASE("SpatialConvolution initialisation follows Torch: U(-stdv, stdv), stdv = 1/sqrt(kW*kH*nIn/groups)") {
  manual_seed(3);
  nn::SpatialConvolution m(16, 8, 3, 3);
  const double stdv = 1.0 / 12;
  CHECK(m.weight.abs().max().item() <= stdv);
  CHECK(m.weight.abs().max().item() > 0.95 * stdv);
  CHECK(m.bias.abs().max().item() <= stdv);
  nn::SpatialConvolution g(16, 8, 3, 3, 1, 1, 0, 0, 4);
  CHECK(g.weight.sizes() == Shape{8, 4, 3, 3});
  CHECK(g.weight.abs().max().item() <= 1.0 / 6);
  CHECK(g.weight.abs().max().item() > 0.95 / 6);
}

TEST_CASE("SpatialConvolution gradients (batch and single, several configs)") {
  Generator gen(20261202);
  INFO("data seed 20261202");
  for (const Config& c : configs) {
    auto m = make(c);
    m->to(DType::Float64);
    const Tensor x = uniform({c.batch, c.nIn, c.iH, c.iW}, -1, 1, gen, DType::Float64);
    expect_gradients_ok(*m, x);
    expect_gradients_ok(*m, x[0].contiguous());
  }
  // random sizes from a fixed seed
  Generator sizes(77001);
  INFO("size seed 77001");
  for (int trial = 0; trial < 3; ++trial) {
    const int64_t groups = random_size(sizes, 1, 2);
    Config c{groups * random_size(sizes, 1, 3), groups * random_size(sizes, 1, 3), random_size(sizes, 1, 4),
             random_size(sizes, 1, 4), random_size(sizes, 1, 3), random_size(sizes, 1, 3), random_size(sizes, 0, 2),
             random_size(sizes, 0, 2), groups, random_size(sizes, 1, 2), random_size(sizes, 1, 2),
             random_size(sizes, 1, 3), 0, 0};
    c.iH = c.dilationH * (c.kH - 1) + 1 + random_size(sizes, 0, 4);
    c.iW = c.dilationW * (c.kW - 1) + 1 + random_size(sizes, 0, 4);
    auto m = make(c);
    m->to(DType::Float64);
    expect_gradients_ok(*m, uniform({c.batch, c.nIn, c.iH, c.iW}, -1, 1, gen, DType::Float64));
  }
}

TEST_CASE("SpatialConvolution accumulates parameter gradients") {
  Generator gen(9);
  for (int64_t batch : {1, 4}) {
    nn::SpatialConvolution m(4, 6, 3, 3, 1, 1, 1, 1, 2);
    m.to(DType::Float64);
    expect_accumulation_ok(m, uniform({batch, 4, 5, 5}, -1, 1, gen, DType::Float64));
    m.noBias();
    expect_accumulation_ok(m, uniform({batch, 4, 5, 5}, -1, 1, gen, DType::Float64));
  }
  // float32 batch-parallel weight gradient (per-thread partial sums) against float64
  nn::SpatialConvolution f(3, 5, 3, 3, 2, 1, 1, 0);
  nn::SpatialConvolution d(3, 5, 3, 3, 2, 1, 1, 0);
  d.to(DType::Float64);
  d.weight.copy_(f.weight);
  d.bias.copy_(f.bias);
  const Tensor x = uniform({6, 3, 7, 6}, -1, 1, gen);
  const Tensor g = uniform(f.forward(x).sizes(), -1, 1, gen);
  f.backward(x, g, 0.5);
  d.forward(x.to(DType::Float64));
  d.backward(x.to(DType::Float64), g.to(DType::Float64), 0.5);
  CHECK(max_abs_diff(f.gradWeight, d.gradWeight) < 1e-5);
  CHECK(max_abs_diff(f.gradBias, d.gradBias) < 1e-5);
  CHECK(max_abs_diff(f.gradInput, d.gradInput) < 1e-5);
}

TEST_CASE("SpatialConvolution with channels-last filters (Module::to(MemoryFormat)): the row-major filters' bits") {
  Generator gen(20261126);
  const Config& c = configs[1];  // groups 2, stride, padding, a non-square kernel
  auto rowMajor = make(c), channelsLast = make(c);
  channelsLast->loadStateDict(rowMajor->stateDict());
  channelsLast->to(MemoryFormat::ChannelsLast);
  CHECK(nn::is_channels_last_parameter(channelsLast->weight));
  CHECK_FALSE(channelsLast->weight.is_contiguous());
  CHECK(nn::is_channels_last_parameter(channelsLast->gradWeight));
  CHECK(channelsLast->bias.is_contiguous());
  CHECK(max_abs_diff(channelsLast->weight, rowMajor->weight) == 0);
  const Tensor x = uniform({c.batch, c.nIn, c.iH, c.iW}, -1, 1, gen);
  const Tensor gy = uniform(rowMajor->forward(x).sizes(), -1, 1, gen);
  for (nn::SpatialConvolution* m : {rowMajor.get(), channelsLast.get()}) {
    m->zeroGradParameters();
    m->forward(x);
    m->backward(x, gy, 0.5);
    m->backward(x, gy, 0.25);  // accumulates into the channels-last gradient
  }
  CHECK(max_abs_diff(channelsLast->output, rowMajor->output) == 0);
  CHECK(max_abs_diff(channelsLast->gradInput, rowMajor->gradInput) == 0);
  CHECK(max_abs_diff(channelsLast->gradWeight, rowMajor->gradWeight) == 0);
  CHECK(max_abs_diff(channelsLast->gradBias, rowMajor->gradBias) == 0);
  CHECK(nn::is_channels_last_parameter(channelsLast->gradWeight));  // still laid out as it was
  // finite differences through the channels-last filter
  channelsLast->to(DType::Float64);
  channelsLast->to(MemoryFormat::ChannelsLast);
  expect_gradients_ok(*channelsLast, x.to(DType::Float64));
  // and back: the same values, row-major
  channelsLast->to(MemoryFormat::Contiguous);
  CHECK(channelsLast->weight.is_contiguous());
  CHECK(channelsLast->gradWeight.is_contiguous());
  // another strided layout is still refused (Note [Parameters are checked where they are used])
  channelsLast->weight = empty({6, 2, 3, 2}, DType::Float64).transpose(2, 3);
  CHECK_THROWS_WITH_AS(channelsLast->forward(x.to(DType::Float64)),
                       "nn.SpatialConvolution::updateOutput: expected weight of [6 x 2 x 2 x 3] (contiguous or "
                       "channels-last), got float64 [6 x 2 x 2 x 3] on cpu (not contiguous)",
                       Error);
}

TEST_CASE("SpatialConvolution batch-parallel passes equal the per-sample ones") {
  Generator gen(13);
  nn::SpatialConvolution m(8, 8, 3, 3, 1, 1, 1, 1, 2);
  m.to(DType::Float64);
  convref::expect_batch_matches_samples(m, uniform({5, 8, 16, 16}, -1, 1, gen, DType::Float64));
  nn::SpatialConvolution p(16, 16, 1, 1);
  p.to(DType::Float64);
  convref::expect_batch_matches_samples(p, uniform({4, 16, 32, 32}, -1, 1, gen, DType::Float64));
}

TEST_CASE("SpatialConvolution forward of one large image in spatial tiles matches the direct loop") {
  // column matrices above the tiling threshold (Note [Spatial tiles] in nn/kernels/Convolution.cpp),
  // batch 1 and 2 on the team and on one thread, with stride, asymmetric padding, groups and
  // dilation; row counts that do not divide into the tiles
  Generator gen(20261126);
  const Config cfgs[] = {{16, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 61, 60},
                         {16, 8, 3, 5, 1, 2, 1, 2, 2, 2, 1, 1, 97, 120},
                         {3, 8, 7, 7, 2, 2, 3, 3, 1, 1, 1, 2, 150, 131}};
  for (const Config& c : cfgs) {
    auto m = make(c);
    for (DType dt : {DType::Float32, DType::Float64}) {
      m->to(dt);
      expect_direct_loop_on_threads(*m, uniform({c.batch, c.nIn, c.iH, c.iW}, -1, 1, gen, dt),
                                    dt == DType::Float32 ? 1e-4 : 1e-11);
    }
  }
}

TEST_CASE("SpatialConvolution at batch 1 with a bias the team fills, and products cut by rows or columns") {
  // Note [Which side of C to cut] in tensor/Blas.cpp and the untiled forward's shared bias fill:
  // 1x1 and 1x1 stride-2 layers (C taller than wide: rows; shorter: columns) against the direct
  // loop, on the team and on one thread
  Generator gen(20261127);
  const Config cfgs[] = {{64, 512, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 7, 10},
                         {64, 192, 1, 1, 2, 2, 0, 0, 1, 1, 1, 1, 40, 36},
                         {16, 64, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 40, 42}};
  for (const Config& c : cfgs) {
    auto m = make(c);
    expect_direct_loop_on_threads(*m, uniform({c.batch, c.nIn, c.iH, c.iW}, -1, 1, gen), 1e-4);
  }
}

TEST_CASE("SpatialConvolution at a realistic size (speed sanity, nothing timed)") {
  // a size where a per-element or quadratic slip would show up as a very slow test;
  // sampled outputs are checked against direct dot products
  Generator gen(11);
  nn::SpatialConvolution m(16, 32, 3, 3, 1, 1, 1, 1);
  const Tensor x = uniform({8, 16, 32, 32}, -1, 1, gen);
  const Tensor y = m.forward(x);
  REQUIRE(y.sizes() == Shape{8, 32, 32, 32});
  for (int s = 0; s < 20; ++s) {
    const int64_t n = gen.randint(8), o = gen.randint(32), i = gen.randint(32), j = gen.randint(32);
    double acc = m.bias.get({o});
    for (int64_t c = 0; c < 16; ++c)
      for (int64_t a = 0; a < 3; ++a)
        for (int64_t b = 0; b < 3; ++b) {
          const int64_t yy = i - 1 + a, xx = j - 1 + b;
          if (yy >= 0 && yy < 32 && xx >= 0 && xx < 32) acc += m.weight.get({o, c, a, b}) * x.get({n, c, yy, xx});
        }
    CHECK(std::abs(y.get({n, o, i, j}) - acc) < 1e-4);
  }
  const Tensor gy = uniform(y.sizes(), -1, 1, gen);
  m.backward(x, gy);
  CHECK(m.gradInput.sizes() == x.sizes());
  CHECK(!has_nonfinite(m.gradWeight));
}

TEST_CASE("SpatialConvolution state round trip and printing") {
  Generator gen(1);
  nn::SpatialConvolution a(3, 4, 3, 3, 1, 1, 1, 1), b(3, 4, 3, 3, 1, 1, 1, 1);
  expect_state_roundtrip_ok(a, b, uniform({2, 3, 5, 5}, -1, 1, gen));
  nn::SpatialConvolution c(4, 4, 3, 2, 1, 1, 0, 0, 2), d(4, 4, 3, 2, 1, 1, 0, 0, 2);
  c.noBias();
  d.noBias();
  expect_state_roundtrip_ok(c, d, uniform({4, 5, 5}, -1, 1, gen));
  expect_prints_type(a);
  CHECK(nn::SpatialConvolution(3, 96, 11, 11, 3, 3).str() == "nn.SpatialConvolution(3 -> 96, 11x11, 3,3)");
  CHECK(nn::SpatialConvolution(3, 8, 5, 3).str() == "nn.SpatialConvolution(3 -> 8, 5x3)");
  CHECK(a.str() == "nn.SpatialConvolution(3 -> 4, 3x3, 1,1, 1,1)");
  CHECK(nn::SpatialConvolution(3, 8, 3, 5, 2, 1, 1, 2).str() == "nn.SpatialConvolution(3 -> 8, 3x5, 2,1, 1,2)");
  CHECK(nn::SpatialConvolution(3, 8, 3, 3, 1, 1, 0, 2).str() == "nn.SpatialConvolution(3 -> 8, 3x3, 1,1, 0,2)");
  CHECK(c.str() == "nn.SpatialConvolution(4 -> 4, 3x2, groups=2) without bias");
  a.dilationW = 2;
  CHECK(a.str() == "nn.SpatialConvolution(3 -> 4, 3x3, 1,1, 1,1, 2,1)");
}

namespace {
// What a cudnn twin is: the nn module moved into a subclass that overrides the compute.
struct Twin : nn::SpatialConvolution {
  explicit Twin(nn::SpatialConvolution&& m) : nn::SpatialConvolution(std::move(m)) {}
  std::string type_name() const override { return "test.SpatialConvolution"; }
};
}  // namespace

TEST_CASE("SpatialConvolution moves into a twin with its configuration and parameters") {
  static_assert(std::is_move_constructible_v<nn::SpatialConvolution>);
  static_assert(!std::is_copy_constructible_v<nn::SpatialConvolution>);
  Generator gen(2);
  nn::SpatialConvolution m(4, 6, 3, 2, 2, 1, 1, 0, 2);
  m.dilationW = 2;
  const Tensor x = uniform({2, 4, 5, 7}, -1, 1, gen);
  const Tensor y = m.forward(x).clone();
  const auto storage = m.weight.storage();
  Twin t(std::move(m));
  CHECK(t.weight.storage() == storage);
  CHECK(t.dilationW == 2);
  CHECK(t.groups == 2);
  CHECK(t.outputShape(x) == y.sizes());
  CHECK(max_abs_diff(t.forward(x), y) == 0);
  CHECK(t.str() == "test.SpatialConvolution(4 -> 6, 3x2, 2,1, 1,0, 2,1, groups=2)");
}

TEST_CASE("SpatialConvolution keeps the cudnn algorithm choices as plain fields (ignored on the CPU)") {
  Generator gen(3);
  nn::SpatialConvolution m(2, 3, 3, 3);
  const Tensor x = uniform({1, 2, 5, 5}, -1, 1, gen);
  const Tensor y = m.forward(x).clone();
  CHECK(m.algo == nn::ConvAlgorithms{});
  m.setMode("small", "deterministic", "none").fastest();
  CHECK(m.algo.fwd == "small");
  CHECK(m.algo.bwdFilter == "deterministic");
  CHECK(m.algo.bwdData == "none");
  CHECK(m.algo.fastest);
  CHECK(max_abs_diff(m.forward(x), y) == 0);
  Twin t(std::move(m));  // what convert() does: the choices move with the module
  CHECK(t.algo == nn::ConvAlgorithms{"small", "deterministic", "none", true});
  t.fastest(false);
  CHECK_FALSE(t.algo.fastest);
  t.resetMode();
  CHECK(t.algo == nn::ConvAlgorithms{});
}

TEST_CASE("SpatialConvolution errors name the module, the contract and the sizes") {
  nn::SpatialConvolution m(3, 4, 5, 5);
  CHECK_THROWS_WITH_AS(m.forward(zeros({1, 3, 4, 4})),
                       "nn.SpatialConvolution::updateOutput: expected input of at least 5x5 (H x W) after padding "
                       "for a kernel 5x5 with stride 1x1, padding 0x0 and dilation 1x1, got [1 x 3 x 4 x 4]: "
                       "padded size 4x4 gives output size 0x0, too small",
                       Error);
  nn::SpatialConvolution dil(3, 4, 3, 3, 1, 1, 1, 0);
  dil.dilationH = 3;
  CHECK_THROWS_WITH_AS(dil.forward(zeros({3, 6, 9})),
                       "nn.SpatialConvolution::updateOutput: expected input of at least 7x3 (H x W) after padding "
                       "for a kernel 3x3 with stride 1x1, padding 0x1 and dilation 3x1, got [3 x 6 x 9]: "
                       "padded size 6x11 gives output size 0x9, too small",
                       Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({2, 4, 8, 8})),
                       "nn.SpatialConvolution::updateOutput: expected input of [3 x H x W] or [batch x 3 x H x W], "
                       "got [2 x 4 x 8 x 8]",
                       Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({3, 8})),
                       "nn.SpatialConvolution::updateOutput: expected input of [3 x H x W] or [batch x 3 x H x W], "
                       "got [3 x 8]",
                       Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({3, 8, 8}, DType::Float64)),
                       doctest::Contains("expected input of weight's dtype and device (float32 on cpu)"), Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({3, 8, 8}, DType::Int64)),
                       "nn.SpatialConvolution::updateOutput: expected float32 or float64 input, got int64 "
                       "[3 x 8 x 8] on cpu",
                       Error);
  const Tensor x = zeros({2, 3, 6, 5});
  m.forward(x);
  CHECK_THROWS_WITH_AS(m.backward(x, zeros({2, 4, 2, 2})),
                       "nn.SpatialConvolution::updateGradInput: expected gradOutput of [2 x 4 x 2 x 1] (for input "
                       "[2 x 3 x 6 x 5]), got [2 x 4 x 2 x 2]",
                       Error);
  CHECK_THROWS_WITH_AS(nn::SpatialConvolution(3, 4, 3, 3, 1, 1, 0, 0, 2),
                       "nn.SpatialConvolution: expected groups dividing nInputPlane and nOutputPlane, got "
                       "nn.SpatialConvolution(3 -> 4, 3x3, groups=2)",
                       Error);
  CHECK_THROWS_WITH_AS(nn::SpatialConvolution(3, 4, 0, 3), doctest::Contains("expected positive kernel sizes"), Error);
  CHECK_THROWS_WITH_AS(nn::SpatialConvolution(3, 4, 3, 3, 1, 1, -1, 0),
                       doctest::Contains("expected non-negative padding"), Error);
  // fields edited after construction are checked against the parameters before any compute
  m.kW = 3;
  CHECK_THROWS_WITH_AS(
      m.forward(x),
      "nn.SpatialConvolution::updateOutput: expected weight of [4 x 3 x 5 x 3] (contiguous or channels-last), got "
      "float32 [4 x 3 x 5 x 5] on cpu",
      Error);
}

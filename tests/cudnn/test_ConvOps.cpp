// test_ConvOps.cpp: cudnn::conv / conv_grad_input / conv_grad_weight and ConvPlan against
// a direct float64 convolution, every algorithm name, the selection policies, memory limits
// and determinism. Gradients are checked through the adjoint identities
// <conv(x, w), g> = <x, conv_grad_input(w, g)> = <w, conv_grad_weight(x, g)>.
#include <doctest/doctest.h>

#include "convert/Convert.h"
#include "cudnn/core/Config.h"
#include "cudnn/ops/conv.h"
#include "nn/SpatialConvolution.h"
#include "tensor/Cuda.h"
#include "tests/support/NonFinite.h"
#include "tests/support/OpReference.h"

using namespace tensor;

namespace {

const Device gpu = Device::cuda(0);

struct Case {
  Shape x, w;
  std::vector<int> pad, stride, dilation;
  int groups;
};

cudnn::ConvParams params_of(const Case& c, bool cross = true) {
  cudnn::ConvParams p;
  p.border_mode = cudnn::BorderMode::explicit_pad(c.pad);
  p.subsample = c.stride;
  p.dilation = c.dilation;
  p.groups = c.groups;
  p.conv_mode = cross ? cudnn::ConvParams::Mode::Cross : cudnn::ConvParams::Mode::Conv;
  return p;
}

reference::ConvSpec spec_of(const Case& c, bool cross = true) {
  reference::ConvSpec s;
  s.nd = static_cast<int>(c.x.size()) - 2;
  s.pad = c.pad;
  s.stride = c.stride;
  s.dilation = c.dilation;
  s.groups = c.groups;
  s.flip = !cross;
  return s;
}

const std::vector<Case> cases = {
    {{2, 3, 9, 8}, {4, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1},
    {{1, 4, 11, 7}, {6, 2, 3, 2}, {0, 1}, {2, 1}, {1, 1}, 2},
    {{3, 2, 10, 10}, {2, 2, 3, 3}, {2, 2}, {1, 2}, {2, 2}, 1},
    {{2, 6, 6, 6}, {6, 1, 1, 1}, {0, 0}, {1, 1}, {1, 1}, 6},
    {{1, 2, 5, 6, 7}, {3, 2, 3, 2, 3}, {1, 0, 1}, {1, 2, 1}, {1, 1, 1}, 1},
    {{2, 4, 4, 5, 6}, {4, 2, 2, 3, 3}, {0, 1, 1}, {2, 1, 1}, {1, 1, 2}, 2},
};

}  // namespace

TEST_CASE("conv, conv_grad_input and conv_grad_weight match a direct float64 convolution") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  Generator gen(101);
  for (const Case& c : cases) {
    for (bool cross : {true, false}) {
      INFO("x ", shape_str(c.x), " w ", shape_str(c.w), " groups ", c.groups, cross ? " cross" : " conv");
      for (DType dt : {DType::Float32, DType::Float64}) {
        Tensor x = uniform(c.x, -1, 1, gen, dt);
        Tensor w = uniform(c.w, -1, 1, gen, dt);
        const Tensor ref = reference::conv(x, w, spec_of(c, cross));
        const cudnn::ConvParams p = params_of(c, cross);
        const Tensor y = cudnn::conv(x.to(gpu), w.to(gpu), p);
        REQUIRE(y.sizes() == ref.sizes());
        const double tol = dt == DType::Float64 ? 1e-12 : 2e-5;
        CHECK(rel_norm_error(y, ref) < tol);
        const Tensor g = uniform(ref.sizes(), -1, 1, gen, dt);
        const Tensor dx = cudnn::conv_grad_input(w.to(gpu), g.to(gpu), c.x, p);
        const Tensor dw = cudnn::conv_grad_weight(x.to(gpu), g.to(gpu), c.w, p);
        const double lhs = reference::dot(ref, g);
        CHECK(reference::dot(x, dx) == doctest::Approx(lhs).epsilon(dt == DType::Float64 ? 1e-10 : 1e-4));
        CHECK(reference::dot(w, dw) == doctest::Approx(lhs).epsilon(dt == DType::Float64 ? 1e-10 : 1e-4));
      }
    }
  }
}

TEST_CASE("Theano border modes: valid, full, half") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  Generator gen(7);
  Tensor x = uniform({1, 2, 7, 6}, -1, 1, gen, DType::Float64);
  Tensor w = uniform({3, 2, 3, 5}, -1, 1, gen, DType::Float64);
  cudnn::ConvParams p;
  p.conv_mode = cudnn::ConvParams::Mode::Cross;
  p.border_mode = cudnn::BorderMode::valid();
  CHECK(cudnn::conv(x.to(gpu), w.to(gpu), p).sizes() == Shape{1, 3, 5, 2});
  p.border_mode = cudnn::BorderMode::full();
  const Tensor full = cudnn::conv(x.to(gpu), w.to(gpu), p);
  CHECK(full.sizes() == Shape{1, 3, 9, 10});
  reference::ConvSpec s;
  s.pad = {2, 4};
  CHECK(rel_norm_error(full, reference::conv(x, w, s)) < 1e-12);
  p.border_mode = cudnn::BorderMode::half();
  CHECK(cudnn::conv(x.to(gpu), w.to(gpu), p).sizes() == Shape{1, 3, 7, 6});
  CHECK_THROWS_WITH_AS(cudnn::conv(x.to(gpu), uniform({3, 3, 3, 3}, -1, 1, gen, DType::Float64).to(gpu), p),
                       doctest::Contains("has 2 channels"), Error);
  CHECK_THROWS_WITH_AS(cudnn::conv(x, w.to(gpu), p), doctest::Contains("expected img on a CUDA device"), Error);
}

TEST_CASE("every algorithm name runs on a configuration that supports it") {
  // verbose: the log records, per configuration, what cuDNN offers and why a pin fell back
  cudnn::ScopedConfig flags("allow_tf32=false,verbose=true");
  Generator gen(5);
  struct Config {
    Shape x, w;
    int pad;
  };
  const std::vector<Config> configs = {
      {{4, 8, 16, 16}, {8, 8, 3, 3}, 1},      {{8, 64, 32, 32}, {64, 64, 3, 3}, 1},
      {{4, 16, 64, 64}, {16, 16, 5, 5}, 2},   {{2, 32, 128, 128}, {32, 32, 3, 3}, 1},
      {{16, 32, 28, 28}, {32, 32, 1, 1}, 0},
  };
  struct Name {
    cudnn::ConvPass pass;
    std::string flag;
  };
  const std::vector<Name> names = {
      {cudnn::ConvPass::Forward, "none"},           {cudnn::ConvPass::Forward, "small"},
      {cudnn::ConvPass::Forward, "large"},          {cudnn::ConvPass::Forward, "fft"},
      {cudnn::ConvPass::Forward, "fft_tiling"},     {cudnn::ConvPass::Forward, "winograd"},
      {cudnn::ConvPass::Forward, "winograd_non_fused"},
      {cudnn::ConvPass::BackwardData, "none"},      {cudnn::ConvPass::BackwardData, "deterministic"},
      {cudnn::ConvPass::BackwardData, "fft"},       {cudnn::ConvPass::BackwardData, "fft_tiling"},
      {cudnn::ConvPass::BackwardData, "winograd"},  {cudnn::ConvPass::BackwardData, "winograd_nonfused"},
      {cudnn::ConvPass::BackwardFilter, "none"},    {cudnn::ConvPass::BackwardFilter, "deterministic"},
      {cudnn::ConvPass::BackwardFilter, "small"},   {cudnn::ConvPass::BackwardFilter, "fft"},
      {cudnn::ConvPass::BackwardFilter, "fft_tiling"}, {cudnn::ConvPass::BackwardFilter, "winograd_non_fused"},
  };
  std::string never_ran;
  for (const Name& n : names) {
    const cudnn::AlgoSetting want = cudnn::AlgoSetting::parse(n.pass, n.flag);
    bool ran = false;
    for (size_t ci = 0; ci < configs.size() && !ran; ++ci) {
      const Config& c = configs[ci];
      INFO("conv.algo_", cudnn::pass_name(n.pass), "=", n.flag, " on x", shape_str(c.x), " w", shape_str(c.w));
      Tensor x = uniform(c.x, -1, 1, gen), w = uniform(c.w, -1, 1, gen);
      reference::ConvSpec s;
      s.pad = {c.pad, c.pad};
      const Tensor ref = reference::conv(x, w, s);
      const Tensor g = uniform(ref.sizes(), -1, 1, gen);
      const double lhs = reference::dot(ref, g);
      cudnn::ConvSpec geo;  // 2-d: the last two slots
      geo.pad = {0, c.pad, c.pad};
      cudnn::ConvPlan plan;
      plan.setMode(n.pass == cudnn::ConvPass::Forward ? n.flag : "", n.pass == cudnn::ConvPass::BackwardFilter ? n.flag : "",
                   n.pass == cudnn::ConvPass::BackwardData ? n.flag : "");
      // whatever ran, pinned or fallen back, must compute the right thing; 1e-3 on the
      // inner products: the Winograd transforms cuDNN falls back to for 5x5 kernels lose
      // about 3 bits in float32 (6e-4 seen on an H100), the other algorithms stay near 1e-6
      if (n.pass == cudnn::ConvPass::Forward) {
        Tensor y = empty(ref.sizes(), DType::Float32, gpu);
        plan.forward(x.to(gpu), w.to(gpu), y, geo);
        CHECK(rel_norm_error(y, ref) < 1e-3);
      } else if (n.pass == cudnn::ConvPass::BackwardData) {
        Tensor dx = empty(x.sizes(), DType::Float32, gpu);
        plan.backward_data(w.to(gpu), g.to(gpu), dx, geo);
        CHECK(reference::dot(x, dx) == doctest::Approx(lhs).epsilon(1e-3));
      } else {
        Tensor dw = empty(w.sizes(), DType::Float32, gpu);
        plan.backward_filter(x.to(gpu), g.to(gpu), dw, geo);
        CHECK(reference::dot(w, dw) == doctest::Approx(lhs).epsilon(1e-3));
      }
      ran = plan.algorithm(n.pass) == want.algo;
      if (ran) {
        const std::string line = std::string("conv.algo_") + cudnn::pass_name(n.pass) + "=" + n.flag + " ran " +
                                 cudnn::algo_name(n.pass, want.algo) + " on configuration " + std::to_string(ci);
        MESSAGE(line);
      }
    }
    if (!ran) never_ran += std::string(" ") + cudnn::pass_name(n.pass) + ":" + n.flag;
  }
  // Names this cuDNN offers on no configuration above still run (falling back verbosely,
  // checked above); they are listed so the closing note can say which.
  const std::string summary = "pinned algorithms cuDNN did not run on any configuration here:" +
                              (never_ran.empty() ? std::string(" none") : never_ran);
  MESSAGE(summary);
  // The algorithms every cuDNN 9 offers for plain 2-D float convolutions must run pinned.
  for (const char* core : {"fwd:none", "fwd:small", "fwd:large", "fwd:fft", "bwd_data:none", "bwd_data:deterministic",
                           "bwd_filter:none", "bwd_filter:deterministic", "bwd_filter:small"}) {
    const std::string token = std::string(" ") + core;
    const bool ran_pinned = (never_ran + " ").find(token + " ") == std::string::npos;
    CHECK_MESSAGE(ran_pinned, core << " did not run pinned");
  }
}

TEST_CASE("an algorithm cuDNN cannot run here falls back and still computes the right thing") {
  cudnn::ScopedConfig flags("allow_tf32=false,conv.algo_fwd=fft");
  Generator gen(9);
  Tensor x = uniform({2, 3, 12, 12}, -1, 1, gen);
  Tensor w = uniform({4, 3, 3, 3}, -1, 1, gen);
  cudnn::ConvParams p;
  p.conv_mode = cudnn::ConvParams::Mode::Cross;
  p.subsample = {2, 2};  // FFT needs stride 1
  reference::ConvSpec s;
  s.stride = {2, 2};
  CHECK(rel_norm_error(cudnn::conv(x.to(gpu), w.to(gpu), p), reference::conv(x, w, s)) < 1e-4);
}

TEST_CASE("policies: guess/time once and on shape change, steady state without searches or mallocs") {
  cudnn::clear_algorithm_cache();
  Generator gen(3);
  cudnn::ConvSpec geo;  // 2-d: the last two slots
  geo.pad = {0, 1, 1};
  auto run = [&](cudnn::ConvPlan& plan, int64_t hw) {
    Tensor x = uniform({2, 4, hw, hw}, -1, 1, gen, DType::Float32, gpu);
    Tensor w = uniform({4, 4, 3, 3}, -1, 1, gen, DType::Float32, gpu);
    Tensor y = empty({2, 4, hw, hw}, DType::Float32, gpu);
    plan.forward(x, w, y, geo);
  };
  for (const char* policy : {"guess_once", "time_once"}) {
    INFO(policy);
    cudnn::ConvPlan plan;
    plan.setMode(policy, "", "");
    run(plan, 8);
    const int first = plan.algorithm(cudnn::ConvPass::Forward);
    run(plan, 12);
    run(plan, 8);
    CHECK(plan.searches() == 1);
    CHECK(plan.algorithm(cudnn::ConvPass::Forward) == first);
  }
  for (const char* policy : {"guess_on_shape_change", "time_on_shape_change"}) {
    INFO(policy);
    cudnn::clear_algorithm_cache();
    cudnn::ConvPlan plan;
    plan.setMode(policy, "", "");
    run(plan, 8);
    run(plan, 12);
    CHECK(plan.searches() == 2);
    run(plan, 8);  // alternating shapes come from the cache
    run(plan, 12);
    CHECK(plan.searches() == 2);
    tensor::cuda::synchronize();
    const auto before = tensor::cuda::memory_stats().device_mallocs;
    for (int i = 0; i < 5; ++i) run(plan, 12);
    tensor::cuda::synchronize();
    CHECK(tensor::cuda::memory_stats().device_mallocs == before);
    CHECK(plan.searches() == 2);
  }
  {
    cudnn::ScopedConfig flags("benchmark=true");
    cudnn::clear_algorithm_cache();
    cudnn::ConvPlan plan;
    run(plan, 16);
    CHECK(plan.searches() == 1);
    CHECK(plan.algorithm(cudnn::ConvPass::Forward) >= 0);
  }
}

TEST_CASE("memory-aware: a workspace limit of zero still runs, with a no-workspace algorithm") {
  cudnn::ScopedConfig flags("workspace_limit=0,allow_tf32=false,benchmark=true");
  cudnn::clear_algorithm_cache();
  Generator gen(4);
  Tensor x = uniform({8, 16, 32, 32}, -1, 1, gen);
  Tensor w = uniform({16, 16, 5, 5}, -1, 1, gen);
  cudnn::ConvSpec geo;  // 2-d: the last two slots
  geo.pad = {0, 2, 2};
  cudnn::ConvPlan plan;
  Tensor y = empty({8, 16, 32, 32}, DType::Float32, gpu);
  plan.forward(x.to(gpu), w.to(gpu), y, geo);
  CHECK(plan.workspace_bytes(cudnn::ConvPass::Forward) == 0);
  reference::ConvSpec s;
  s.pad = {2, 2};
  CHECK(rel_norm_error(y, reference::conv(x, w, s)) < 1e-4);
  Tensor dw = empty(w.sizes(), DType::Float32, gpu);
  plan.backward_filter(x.to(gpu), y, dw, geo);
  CHECK(plan.workspace_bytes(cudnn::ConvPass::BackwardFilter) == 0);
}

TEST_CASE("deterministic: only deterministic algorithms, bitwise-equal gradients") {
  cudnn::ScopedConfig flags("deterministic=true");
  cudnn::clear_algorithm_cache();
  Generator gen(8);
  Tensor x = uniform({16, 8, 20, 20}, -1, 1, gen, DType::Float32, gpu);
  Tensor g = uniform({16, 8, 20, 20}, -1, 1, gen, DType::Float32, gpu);
  Tensor w = uniform({8, 8, 3, 3}, -1, 1, gen, DType::Float32, gpu);
  cudnn::ConvSpec geo;  // 2-d: the last two slots
  geo.pad = {0, 1, 1};
  auto grads = [&] {
    cudnn::ConvPlan plan;
    Tensor dw = empty(w.sizes(), DType::Float32, gpu), dx = empty(x.sizes(), DType::Float32, gpu);
    plan.backward_filter(x, g, dw, geo);
    plan.backward_data(w, g, dx, geo);
    CHECK(plan.algorithm(cudnn::ConvPass::BackwardFilter) != 0);  // ALGO_0 and ALGO_3 are not deterministic
    CHECK(plan.algorithm(cudnn::ConvPass::BackwardFilter) != 3);
    CHECK(plan.algorithm(cudnn::ConvPass::BackwardData) != 0);
    return std::make_pair(dw, dx);
  };
  const auto a = grads(), b = grads();
  CHECK(max_abs_diff(a.first, b.first) == 0);
  CHECK(max_abs_diff(a.second, b.second) == 0);
  cudnn::ConvPlan pinned;
  pinned.setMode("", "none", "");
  Tensor dw = empty(w.sizes(), DType::Float32, gpu);
  CHECK_THROWS_WITH_AS(pinned.backward_filter(x, g, dw, geo), doctest::Contains("is not deterministic"), Error);
}

TEST_CASE("float16 and bfloat16 convolutions, and 3-D algorithm fallbacks") {
  Generator gen(12);
  Tensor x = uniform({2, 8, 10, 10}, -1, 1, gen);
  Tensor w = uniform({8, 8, 3, 3}, -1, 1, gen);
  reference::ConvSpec s;
  s.pad = {1, 1};
  const Tensor ref = reference::conv(x, w, s);
  cudnn::ConvParams p;
  p.conv_mode = cudnn::ConvParams::Mode::Cross;
  p.border_mode = cudnn::BorderMode::half();
  for (const char* precision : {"as_input_f32", "as_input"}) {
    cudnn::ScopedConfig flags(std::string("conv.precision=") + precision);
    const Tensor y16 = cudnn::conv(x.to(gpu, DType::Float16), w.to(gpu, DType::Float16), p);
    CHECK(y16.dtype() == DType::Float16);
    CHECK(rel_norm_error(y16, ref) < 3e-3);
  }
  const Tensor ybf = cudnn::conv(x.to(gpu, DType::BFloat16), w.to(gpu, DType::BFloat16), p);
  CHECK(rel_norm_error(ybf, ref) < 2e-2);
  {
    cudnn::ScopedConfig flags("conv.precision=float64");
    CHECK_THROWS_WITH_AS(cudnn::conv(x.to(gpu), w.to(gpu), p), doctest::Contains("not available for float32"), Error);
  }
  // 3-D: fft is not among the 3-D algorithms; it falls back, verbosely, and computes right
  cudnn::ScopedConfig flags("conv.algo_fwd=fft,allow_tf32=false");
  Tensor x3 = uniform({1, 2, 5, 6, 7}, -1, 1, gen);
  Tensor w3 = uniform({3, 2, 3, 3, 3}, -1, 1, gen);
  reference::ConvSpec s3;
  s3.nd = 3;
  s3.pad = {1, 1, 1};
  cudnn::ConvParams p3 = p;
  CHECK(rel_norm_error(cudnn::conv(x3.to(gpu), w3.to(gpu), p3), reference::conv(x3, w3, s3)) < 1e-4);
}

// add_bias / backward_bias take the kernels of cudnn/kernels/Bias.cu for row-major and
// channels-last data (Note [Bias kernels]); checked against float64 sums on the CPU for every
// floating dtype, both layouts, long rows (the segmented sum), C not a multiple of 32, C in whole
// 16-byte packs or not, empty batches, NaN and Inf in dy, and the alpha/beta rule (beta 0 ignores
// a NaN in db).
TEST_CASE("add_bias and backward_bias: both layouts, every floating dtype, alpha and beta, NaN and Inf, empty") {
  Generator gen(131);
  using MF = MemoryFormat;
  const std::vector<std::pair<Shape, MF>> shapes = {
      {{2, 5, 3}, MF::Contiguous},
      {{3, 7, 4, 5}, MF::Contiguous},
      {{3, 7, 4, 5}, MF::ChannelsLast},
      {{2, 70, 3, 2}, MF::ChannelsLast},
      {{2, 33, 2, 3, 2}, MF::ChannelsLast},
      {{2, 3, 130, 41}, MF::Contiguous},
      {{1, 3, 130, 141}, MF::ChannelsLast},
      {{64, 40, 1, 1}, MF::ChannelsLast},
      {{0, 4, 3, 3}, MF::Contiguous},
      {{0, 4, 3, 3}, MF::ChannelsLast},
      {{2, 1, 5, 5}, MF::ChannelsLast},
      {{2, 5, 4, 4}, MF::Contiguous},
      {{2, 16, 3, 3}, MF::ChannelsLast},
      // channels-last in 16-byte packs: many row chunks; 3 packs a row (85 rows a block step);
      // more packs than a block's threads (two channel tiles)
      {{8, 64, 28, 28}, MF::ChannelsLast},
      {{4, 24, 9, 7}, MF::ChannelsLast},
      {{2, 2064, 3, 3}, MF::ChannelsLast},
  };
  for (const DType dtype : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    // unit roundoff of the dtype, and of the sums' accumulator (float32, float64 for float64)
    const double u = dtype == DType::Float64   ? 0x1p-53
                     : dtype == DType::Float32 ? 0x1p-24
                     : dtype == DType::Float16 ? 0x1p-11
                                               : 0x1p-8;
    const double u_acc = dtype == DType::Float64 ? 0x1p-53 : 0x1p-24;
    for (const auto& [shape, format] : shapes) {
      const int64_t N = shape[0], C = shape[1],
                    S = shape.size() == 3 ? shape[2] : shape[2] * shape[3] * (shape.size() == 5 ? shape[4] : 1);
      INFO(tensor::name(dtype), " ", format == MF::ChannelsLast ? "channels-last " : "row-major ", shape_str(shape));
      // values rounded to dtype first, so the float64 reference sums what the GPU sums
      Tensor host = uniform(shape, -1, 1, gen).to(dtype).to(DType::Float64);
      if (N > 0 && C > 1) {
        host.data<double>()[0] = std::numeric_limits<double>::infinity();   // channel 0: +Inf
        host.data<double>()[S] = std::numeric_limits<double>::quiet_NaN();  // channel 1: NaN
      }
      const Tensor dy = host.to(dtype).to(gpu).contiguous(format);
      REQUIRE(dy.is_contiguous(format));
      std::vector<double> sums(static_cast<size_t>(C), 0.0);
      double sum_abs = 0;  // the largest channel's sum of magnitudes (finite terms)
      for (int64_t c = 0; c < C; ++c) {
        double a = 0;
        for (int64_t n = 0; n < N; ++n) {
          for (int64_t s = 0; s < S; ++s) {
            const double v = host.data<double>()[(n * C + c) * S + s];
            sums[static_cast<size_t>(c)] += v;
            if (std::isfinite(v)) a += std::abs(v);
          }
        }
        sum_abs = std::max(sum_abs, a);
      }
      const Tensor db0 = uniform({C}, -1, 1, gen).to(dtype).to(DType::Float64);
      for (const auto& [alpha, beta] : std::vector<std::pair<double, double>>{{1, 0}, {0.5, 1}, {2, -0.5}}) {
        INFO("alpha ", alpha, " beta ", beta);
        Tensor start = db0.clone();
        if (beta == 0) start.data<double>()[0] = std::numeric_limits<double>::quiet_NaN();  // ignored
        const Tensor db = start.to(dtype).to(gpu);
        cudnn::backward_bias(dy, db, alpha, beta);
        std::vector<double> want(static_cast<size_t>(C));
        double largest = 0;
        for (int64_t c = 0; c < C; ++c) {
          const double s = sums[static_cast<size_t>(c)];
          want[static_cast<size_t>(c)] = alpha * s + (beta == 0 ? 0.0 : beta * db0.data<double>()[c]);
          if (std::isfinite(want[static_cast<size_t>(c)]))
            largest = std::max(largest, std::abs(want[static_cast<size_t>(c)]));
        }
        // the result's rounding to dtype, plus the accumulation's error (bounded loosely by the
        // sum of magnitudes: about 0.04 for 18330 float32-accumulated terms, so a lost term shows)
        testing::expect_values("db", db.cpu(), want, u * (largest + 1) + 64 * u_acc * std::abs(alpha) * sum_abs);
      }
      const Tensor bias_host = uniform({C}, -1, 1, gen).to(dtype).to(DType::Float64);
      const Tensor y = dy.clone().contiguous(format);
      cudnn::add_bias(y, bias_host.to(dtype).to(gpu));
      CHECK(y.is_contiguous(format));
      std::vector<double> want(static_cast<size_t>(N * C * S));
      for (int64_t i = 0; i < N * C * S; ++i)
        want[static_cast<size_t>(i)] = host.data<double>()[i] + bias_host.data<double>()[(i / S) % C];
      testing::expect_values("y + bias", y.cpu().contiguous(), want, 2 * u * 2);  // |y + bias| <= 2
      if (format == MF::Contiguous && N > 0) {  // one element into its storage: no wide packs fit
        Tensor shifted = empty({y.numel() + 1}, dtype, gpu).narrow(0, 1, y.numel()).view(shape);
        shifted.copy_(dy);
        cudnn::add_bias(shifted, bias_host.to(dtype).to(gpu));
        testing::expect_values("shifted y + bias", shifted.cpu(), want, 2 * u * 2);
      }
    }
  }
}

TEST_CASE("a convolution twin's bias gradient on the side stream: backward_bias's bits, eager and captured") {
  // The twin sums the bias gradient on the side stream beside the filter gradient (Note [The device's
  // side stream] in tensor/Cuda.h); the same kernel on the device's stream is
  // the reference, bit for bit, in both layouts, accumulating with the scale.
  for (DType dt : {DType::Float32, DType::Float16}) {
    for (MemoryFormat format : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast}) {
      INFO(name(dt), format == MemoryFormat::ChannelsLast ? " channels-last" : " row-major");
      Generator gen(3391);
      nn::ModulePtr m =
          nn::convert(std::make_shared<nn::SpatialConvolution>(16, 32, 3, 3, 1, 1, 1, 1), nn::Backend::cudnn);
      m->to(gpu);
      m->to(dt);
      auto& conv = dynamic_cast<nn::ConvolutionBase&>(*m);
      const Tensor x = uniform({8, 16, 20, 20}, -1, 1, gen, dt, gpu).contiguous(format);
      const Tensor dy = uniform({8, 32, 20, 20}, -1, 1, gen, dt, gpu).contiguous(format);
      m->forward(x);
      Tensor want = zeros({32}, dt, gpu);
      cudnn::backward_bias(dy, want, 0.5, 1);
      cudnn::backward_bias(dy, want, 0.25, 1);
      m->zeroGradParameters();
      m->accGradParameters(x, dy, 0.5);
      m->accGradParameters(x, dy, 0.25);
      CHECK(max_abs_diff(conv.gradBias.cpu().to(DType::Float64), want.cpu().to(DType::Float64)) == 0);
      // captured: the fork and the join are branches of the graph
      m->zeroGradParameters();
      cuda::Graph g = cuda::Graph::capture([&] { m->accGradParameters(x, dy, 0.5); }, 0);
      g.replay();
      g.replay();
      cuda::synchronize(0);
      Tensor twice = zeros({32}, dt, gpu);
      cudnn::backward_bias(dy, twice, 0.5, 1);
      cudnn::backward_bias(dy, twice, 0.5, 1);
      CHECK(max_abs_diff(conv.gradBias.cpu().to(DType::Float64), twice.cpu().to(DType::Float64)) == 0);
    }
  }
}

// test_MiscOps.cpp: softmax, batch norm, activations, LRN, cuBLAS GEMM and the NLL kernels
// against their definitions computed on the CPU in float64.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

#include "cudnn/core/Config.h"
#include "cudnn/kernels/Activation.h"
#include "cudnn/kernels/ClassNLL.h"
#include "cudnn/kernels/FewRowsLinear.h"
#include "cudnn/kernels/SwiGLU.h"
#include "cudnn/ops/activation.h"
#include "cudnn/ops/batch_norm.h"
#include "cudnn/ops/blas.h"
#include "cudnn/ops/lrn.h"
#include "cudnn/ops/softmax.h"
#include "tests/support/OpReference.h"

using namespace tensor;

namespace {
const Device gpu = Device::cuda(0);
}

TEST_CASE("softmax and log-softmax, channel and instance mode, with gradients") {
  Generator gen(1);
  Tensor x = uniform({3, 5, 2, 4}, -3, 3, gen, DType::Float64);
  const Tensor xg = x.to(gpu);
  // channel mode: over dim 1 at each location
  const Tensor e = x.sub(x.max(1, true).first).exp();
  const Tensor ref = e.div(e.sum(1, true));
  const Tensor y = cudnn::softmax(xg, cudnn::SoftmaxAlgo::Accurate, cudnn::SoftmaxMode::Channel);
  CHECK(max_abs_diff(y, ref) < 1e-12);
  CHECK(max_abs_diff(cudnn::softmax(xg, cudnn::SoftmaxAlgo::Log), ref.log()) < 1e-12);
  CHECK(max_abs_diff(cudnn::softmax(xg, cudnn::SoftmaxAlgo::Fast), ref) < 1e-12);
  // instance mode: over everything but dim 0
  const Tensor flat = x.reshape({3, 40});
  const Tensor ef = flat.sub(flat.max(1, true).first).exp();
  const Tensor ref_i = ef.div(ef.sum(1, true)).reshape(x.sizes());
  CHECK(max_abs_diff(cudnn::softmax(xg, cudnn::SoftmaxAlgo::Accurate, cudnn::SoftmaxMode::Instance), ref_i) < 1e-12);
  // gradient: dx = y * (dy - sum(dy * y)); log: dx = dy - exp(y) * sum(dy)
  const Tensor dy = uniform(x.sizes(), -1, 1, gen, DType::Float64);
  const Tensor want = ref.mul(dy.sub(dy.mul(ref).sum(1, true)));
  CHECK(max_abs_diff(cudnn::softmax_grad(y, dy.to(gpu)), want) < 1e-12);
  const Tensor logy = ref.log();
  const Tensor want_log = dy.sub(ref.mul(dy.sum(1, true)));
  CHECK(max_abs_diff(cudnn::softmax_grad(logy.to(gpu), dy.to(gpu), cudnn::SoftmaxAlgo::Log), want_log) < 1e-12);
  // large inputs stay finite in accurate mode
  Tensor big = full({2, 3, 1, 1}, 1000.0, DType::Float32, gpu);
  CHECK_FALSE(has_nonfinite(cudnn::softmax(big)));
}

TEST_CASE("batch norm train/test/grad follow Theano's definitions") {
  Generator gen(2);
  for (auto mode : {cudnn::BatchNormMode::Spatial, cudnn::BatchNormMode::PerActivation}) {
    const bool spatial = mode == cudnn::BatchNormMode::Spatial;
    Tensor x = uniform({6, 3, 4, 5}, -2, 2, gen, DType::Float64);
    const Shape ps = spatial ? Shape{3} : Shape{3 * 4 * 5};
    Tensor gamma = uniform(ps, 0.5, 1.5, gen, DType::Float64), beta = uniform(ps, -1, 1, gen, DType::Float64);
    Tensor rm = zeros(ps, DType::Float64, gpu), rv = ones(ps, DType::Float64, gpu);
    const double eps = 1e-5, factor = 0.1;
    auto r = cudnn::batch_norm_train(x.to(gpu), gamma.to(gpu), beta.to(gpu), mode, eps, factor, rm, rv);
    // reference statistics over the reduced dims
    const Tensor xr = spatial ? x.transpose(0, 1).reshape({3, -1}) : x.reshape({6, -1}).t();
    const int64_t m = xr.size(1);
    const Tensor mean = xr.mean(1);
    const Tensor var = xr.sub(mean.unsqueeze(1)).square().mean(1);
    CHECK(max_abs_diff(r.mean, mean) < 1e-12);
    CHECK(max_abs_diff(r.invstd, var.add(eps).rsqrt()) < 1e-10);
    CHECK(max_abs_diff(rm, mean.mul(factor)) < 1e-12);
    CHECK(max_abs_diff(rv, var.mul(static_cast<double>(m) / (m - 1)).mul(factor).add(1 - factor)) < 1e-12);
    const Shape bshape = spatial ? Shape{1, 3, 1, 1} : Shape{1, 3, 4, 5};
    const Tensor xhat = x.sub(mean.view(bshape)).mul(var.add(eps).rsqrt().view(bshape));
    CHECK(max_abs_diff(r.out, xhat.mul(gamma.view(bshape)).add(beta.view(bshape))) < 1e-10);
    const Tensor yt = cudnn::batch_norm_test(x.to(gpu), gamma.to(gpu), beta.to(gpu), rm, rv, mode, eps);
    const Tensor want_t = x.sub(rm.cpu().view(bshape))
                              .div(rv.cpu().add(eps).sqrt().view(bshape))
                              .mul(gamma.view(bshape))
                              .add(beta.view(bshape));
    CHECK(max_abs_diff(yt, want_t) < 1e-10);
    // gradient: dbeta = sum dy, dgamma = sum dy * xhat, dx = gamma*invstd/m * (m dy - dbeta - xhat dgamma)
    const Tensor dy = uniform(x.sizes(), -1, 1, gen, DType::Float64);
    auto g = cudnn::batch_norm_grad(x.to(gpu), dy.to(gpu), gamma.to(gpu), r.mean, r.invstd, mode, eps);
    auto reduce = [&](const Tensor& t) {
      return spatial ? t.transpose(0, 1).reshape({3, -1}).sum(1) : t.reshape({6, -1}).sum(0);
    };
    const Tensor dbeta = reduce(dy), dgamma = reduce(dy.mul(xhat));
    CHECK(max_abs_diff(g.dbeta, dbeta) < 1e-10);
    CHECK(max_abs_diff(g.dgamma, dgamma) < 1e-10);
    const Tensor dx = dy.mul(static_cast<double>(m))
                          .sub(dbeta.view(bshape))
                          .sub(xhat.mul(dgamma.view(bshape)))
                          .mul(gamma.view(bshape).mul(var.add(eps).rsqrt().view(bshape)).div(static_cast<double>(m)));
    CHECK(max_abs_diff(g.dx, dx) < 1e-10);
  }
  Generator g2(3);
  Tensor h = uniform({4, 2, 3, 3}, -1, 1, g2, DType::Float16, gpu);
  Tensor p32 = ones({2}, DType::Float32, gpu), b32 = zeros({2}, DType::Float32, gpu);
  CHECK(cudnn::batch_norm_train(h, p32, b32, cudnn::BatchNormMode::Spatial, 1e-5).out.dtype() == DType::Float16);
  CHECK_THROWS_WITH_AS(cudnn::batch_norm_train(h, p32.to(DType::Float16), b32, cudnn::BatchNormMode::Spatial),
                       doctest::Contains("expected gamma of 2 float32 values"), Error);
}

TEST_CASE("activations forward and backward") {
  Generator gen(4);
  Tensor x = uniform({2, 3, 4, 5}, -2, 2, gen, DType::Float64);
  const Tensor dy = uniform(x.sizes(), -1, 1, gen, DType::Float64);
  const auto xv = x.to_vector<double>(), gv = dy.to_vector<double>();
  struct Act {
    nn::Activation mode;
    double coef;
    double (*f)(double, double);
    double (*df)(double, double);
  };
  const std::vector<Act> acts = {
      {nn::Activation::ReLU, 0, [](double v, double) { return v > 0 ? v : 0.0; },
       [](double v, double) { return v > 0 ? 1.0 : 0.0; }},
      {nn::Activation::Sigmoid, 0, [](double v, double) { return 1 / (1 + std::exp(-v)); },
       [](double v, double) {
         const double s = 1 / (1 + std::exp(-v));
         return s * (1 - s);
       }},
      {nn::Activation::Tanh, 0, [](double v, double) { return std::tanh(v); },
       [](double v, double) { return 1 - std::tanh(v) * std::tanh(v); }},
      {nn::Activation::ClippedReLU, 1.5, [](double v, double c) { return std::min(std::max(v, 0.0), c); },
       [](double v, double c) { return v > 0 && v < c ? 1.0 : 0.0; }},
      {nn::Activation::ELU, 0.7, [](double v, double a) { return v > 0 ? v : a * (std::exp(v) - 1); },
       [](double v, double a) { return v > 0 ? 1.0 : a * std::exp(v); }},
  };
  for (const Act& a : acts) {
    INFO("activation ", static_cast<int>(a.mode));
    cudnn::ActivationPlan plan;
    Tensor xg = x.to(gpu), y = empty(x.sizes(), DType::Float64, gpu), dx = empty(x.sizes(), DType::Float64, gpu);
    plan.forward(a.mode, a.coef, xg, y);
    plan.backward(a.mode, a.coef, xg, y, dy.to(gpu), dx);
    const auto yv = y.to_vector<double>(), dxv = dx.to_vector<double>();
    for (size_t i = 0; i < xv.size(); ++i) {
      CHECK(yv[i] == doctest::Approx(a.f(xv[i], a.coef)).epsilon(1e-12));
      CHECK(dxv[i] == doctest::Approx(a.df(xv[i], a.coef) * gv[i]).epsilon(1e-10));
    }
    // in place
    Tensor inplace = x.to(gpu);
    plan.forward(a.mode, a.coef, inplace, inplace);
    CHECK(max_abs_diff(inplace, y) == 0);
  }
}

TEST_CASE("relu kernels: nn's values bit for bit in every dtype, tails, misaligned views, in place, NaN/Inf/-0") {
  // Note [ReLU kernels]: packed 16-byte passes with a scalar tail, or the strided kernel for a
  // misaligned view; both must give y = x > 0 ? x : 0 (NaN passes, -0 gives +0) and
  // dx = y > 0 ? dy : 0 (a NaN y gives 0, a NaN dy passes where y > 0).
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> special = {nan, inf, -inf, -0.0, 0.0, 1e-3, -1e-3, 7.5, -7.5};
  auto same = [](double a, double b) {
    return (std::isnan(a) && std::isnan(b)) || (a == b && std::signbit(a) == std::signbit(b));
  };
  Generator gen(12);
  for (const DType dtype : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    for (const int64_t n : {1, 7, 8, 9, 33, 1027}) {
      INFO(tensor::name(dtype), " n=", n);
      std::vector<double> xs = uniform({n}, -2, 2, gen, DType::Float64).to_vector<double>();
      std::vector<double> gs = uniform({n}, -1, 1, gen, DType::Float64).to_vector<double>();
      for (size_t i = 0; i < xs.size(); ++i) {
        if (i % 5 == 0) xs[i] = special[(i / 5) % special.size()];
        if (i % 11 == 3) gs[i] = nan;
      }
      // the dtype's values, as the kernels see them
      const Tensor x_host = from_vector(xs, {n}).to(dtype), dy_host = from_vector(gs, {n}).to(dtype);
      const std::vector<double> xv = x_host.to_vector<double>(), gv = dy_host.to_vector<double>();
      std::vector<double> want_y(xv.size()), want_dx(xv.size());
      for (size_t i = 0; i < xv.size(); ++i) {
        want_y[i] = xv[i] <= 0 ? 0.0 : xv[i];
        want_dx[i] = want_y[i] > 0 ? gv[i] : 0.0;
      }
      auto expect = [&](const char* what, const Tensor& got, const std::vector<double>& want) {
        const std::vector<double> g = got.cpu().contiguous().to(DType::Float64).to_vector<double>();
        int bad = 0;
        for (size_t i = 0; i < g.size(); ++i) bad += same(g[i], want[i]) ? 0 : 1;
        INFO(what);
        CHECK(bad == 0);
      };
      cudnn::ActivationPlan plan;
      for (const bool misaligned : {false, true}) {
        INFO("misaligned=", misaligned);
        // one element into the storage: no 16-byte pack lines up
        auto on_gpu = [&](const Tensor& host) {
          if (!misaligned) return host.to(gpu);
          Tensor t = empty({n + 1}, dtype, gpu).narrow(0, 1, n);
          t.copy_(host);
          return t;
        };
        const Tensor xg = on_gpu(x_host), dyg = on_gpu(dy_host);
        const Tensor y = on_gpu(zeros({n}, dtype)), dx = on_gpu(zeros({n}, dtype));
        plan.forward(nn::Activation::ReLU, 0, xg, y);
        expect("forward", y, want_y);
        plan.backward(nn::Activation::ReLU, 0, xg, y, dyg, dx);
        expect("backward", dx, want_dx);
        plan.forward(nn::Activation::ReLU, 0, xg, xg);  // in place
        expect("forward in place", xg, want_y);
        plan.backward(nn::Activation::ReLU, 0, xg, xg, dyg, dyg);  // dx is dy
        expect("backward in place", dyg, want_dx);
      }
    }
  }
}

TEST_CASE("LRN matches Torch's SpatialCrossMapLRN definition") {
  Generator gen(5);
  Tensor x = uniform({2, 7, 3, 4}, -2, 2, gen, DType::Float64);
  const int size = 5;
  const double alpha = 1e-2, beta = 0.75, k = 2;
  Tensor want = empty(x.sizes(), DType::Float64);
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0; c < 7; ++c)
      for (int64_t h = 0; h < 3; ++h)
        for (int64_t w = 0; w < 4; ++w) {
          double s = 0;
          for (int64_t j = c - size / 2; j <= c + size / 2; ++j) {
            if (j >= 0 && j < 7) s += x.get({n, j, h, w}) * x.get({n, j, h, w});
          }
          want.set({n, c, h, w}, x.get({n, c, h, w}) * std::pow(k + alpha / size * s, -beta));
        }
  cudnn::LRNPlan plan;
  Tensor y = empty(x.sizes(), DType::Float64, gpu);
  plan.forward(size, alpha, beta, k, x.to(gpu), y);
  CHECK(max_abs_diff(y, want) < 1e-12);
  CHECK_THROWS_WITH_AS(cudnn::check_lrn_arguments("cudnn.SpatialCrossMapLRN: ", 17, 0.75, 1),
                       doctest::Contains("size 1..16"), Error);
}

TEST_CASE("cuBLAS gemm in every transpose and dtype") {
  Generator gen(6);
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      Tensor a = uniform(ta ? Shape{7, 5} : Shape{5, 7}, -1, 1, gen, DType::Float64);
      Tensor b = uniform(tb ? Shape{3, 7} : Shape{7, 3}, -1, 1, gen, DType::Float64);
      const Tensor want = (ta ? a.t().contiguous() : a).matmul(tb ? b.t().contiguous() : b);
      Tensor c = uniform({5, 3}, -1, 1, gen, DType::Float64);
      const Tensor c0 = c.clone();
      Tensor cg = c.to(gpu);
      cudnn::gemm(ta, tb, a.to(gpu), b.to(gpu), cg, 2.0, 0.5);
      CHECK(max_abs_diff(cg, want.mul(2.0).add(c0.mul(0.5))) < 1e-12);
      {
        cudnn::ScopedConfig flags("allow_tf32=false");
        Tensor c32 = zeros({5, 3}, DType::Float32, gpu);
        cudnn::gemm(ta, tb, a.to(gpu, DType::Float32), b.to(gpu, DType::Float32), c32);
        CHECK(rel_norm_error(c32, want) < 1e-6);
      }
      for (DType dt : {DType::Float16, DType::BFloat16}) {
        Tensor c16 = zeros({5, 3}, dt, gpu);
        cudnn::gemm(ta, tb, a.to(gpu, dt), b.to(gpu, dt), c16);
        CHECK(rel_norm_error(c16, want) < (dt == DType::Float16 ? 2e-3 : 2e-2));
      }
    }
  CHECK_THROWS_WITH_AS(cudnn::gemm(false, false, zeros({2, 3}, DType::Float32, gpu), zeros({2, 3}, DType::Float32, gpu),
                                   zeros({2, 3}, DType::Float32, gpu)),
                       doctest::Contains("shapes do not multiply"), Error);
}

TEST_CASE("cuBLASLt's product with the row sums of op(A): gemm's values and float32 sums, NaN kept") {
  Generator gen(61);
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (DType dt : {DType::Float16, DType::BFloat16}) {
        INFO(name(dt), ta ? " A^T" : " A", tb ? " B^T" : " B");
        // K = 300 rows reduced; sizes multiples of 8 as a channels-last layer's, and odd ones
        for (const auto& [M, N] : {std::pair<int64_t, int64_t>{24, 16}, {7, 5}}) {
          const int64_t K = 300;
          Tensor a = uniform(ta ? Shape{K, M} : Shape{M, K}, -1, 1, gen, DType::Float64).to(dt).to(DType::Float64);
          Tensor b = uniform(tb ? Shape{N, K} : Shape{K, N}, -1, 1, gen, DType::Float64).to(dt).to(DType::Float64);
          const Tensor opA = ta ? a.t().contiguous() : a;
          const Tensor want = opA.matmul(tb ? b.t().contiguous() : b);
          const Tensor c0 = uniform({M, N}, -1, 1, gen, DType::Float64).to(dt).to(DType::Float64);
          Tensor cg = c0.to(gpu, dt), sums;
          if (!cudnn::gemm_with_row_sums(ta, tb, a.to(gpu, dt), b.to(gpu, dt), cg, 0.5, 1, sums)) {
            // cuBLASLt may offer nothing for odd sizes or for other transposes than the filter
            // gradient's (A^T B), and then C is as it was
            CHECK((M % 8 != 0 || !(ta && !tb)));
            CHECK(max_abs_diff(cg.cpu().to(DType::Float64), c0) == 0);
            continue;
          }
          REQUIRE(sums.numel() == M);
          CHECK(sums.dtype() == dt);
          CHECK(rel_norm_error(cg.to(DType::Float64), want.mul(0.5).add(c0)) < (dt == DType::Float16 ? 2e-3 : 2e-2));
          const Tensor got = sums.cpu();
          for (int64_t i = 0; i < M; ++i) {
            double s = 0;
            for (int64_t k = 0; k < K; ++k) s += opA.get({i, k});
            // inputs exact in dt, float32 sums rounded once to dt
            CHECK(std::abs(got.get({i}) - s) < 1e-4 * K + std::abs(s) * (dt == DType::Float16 ? 1e-3 : 8e-3));
          }
        }
      }
  // a NaN in row i of op(A) makes sums[i] NaN and no other
  Tensor a = ones({64, 8}, DType::Float16, gpu), b = ones({64, 8}, DType::Float16, gpu);
  Tensor c = zeros({8, 8}, DType::Float16, gpu), sums;
  Tensor ah = a.cpu();
  ah.set({10, 3}, std::numeric_limits<double>::quiet_NaN());
  REQUIRE(cudnn::gemm_with_row_sums(true, false, ah.to(gpu), b, c, 1, 0, sums));
  const Tensor got = sums.cpu();
  for (int64_t i = 0; i < 8; ++i) CHECK(std::isnan(got.get({i})) == (i == 3));
  CHECK_THROWS_WITH_AS(cudnn::gemm_with_row_sums(true, false, a, b, zeros({8, 7}, DType::Float16, gpu), 1, 0, sums),
                       doctest::Contains("shapes do not multiply"), Error);
  Tensor c32 = c.to(DType::Float32);
  CHECK_FALSE(cudnn::gemm_with_row_sums(true, false, a.to(DType::Float32), b.to(DType::Float32), c32, 1, 0, sums));
}

TEST_CASE("cuBLASLt's product with the bias in its epilogue: x W^T + b as the two passes give it, NaN and Inf kept") {
  Generator gen(62);
  for (DType dt : {DType::Float16, DType::BFloat16}) {
    INFO(name(dt));
    // a GPT-2 projection's shape in small, and an odd one the epilogue may refuse
    for (const auto& [M, N, K] : {std::tuple<int64_t, int64_t, int64_t>{64, 48, 40}, {7, 5, 3}}) {
      INFO(M, " x ", N, " x ", K);
      const Tensor x = uniform({M, K}, -1, 1, gen, DType::Float64).to(dt).to(DType::Float64);
      const Tensor w = uniform({N, K}, -1, 1, gen, DType::Float64).to(dt).to(DType::Float64);
      const Tensor b = uniform({N}, -1, 1, gen, DType::Float64).to(dt).to(DType::Float64);
      const Tensor want = x.matmul(w.t().contiguous()).add(b.view({1, N}).expand({M, N}));
      Tensor two = empty({M, N}, dt, gpu);  // the two passes: b broadcast, then beta 1
      two.copy_(b.to(gpu, dt).view({1, N}).expand({M, N}));
      cudnn::gemm(false, true, x.to(gpu, dt), w.to(gpu, dt), two, 1, 1);
      Tensor c = full({M, N}, 7.0, dt, gpu);
      if (!cudnn::gemm_with_bias(false, true, x.to(gpu, dt), w.to(gpu, dt), b.to(gpu, dt), c)) {
        CHECK(M % 8 != 0);  // only odd sizes may be refused, leaving C as it was
        CHECK(max_abs_diff(c.cpu().to(DType::Float64), full({M, N}, 7.0, DType::Float64)) == 0);
        continue;
      }
      CHECK(rel_norm_error(c.to(DType::Float64), want) < (dt == DType::Float16 ? 2e-3 : 2e-2));
      // one rounding of the same float32 sum: at most one unit in the last place from the two passes
      const double ulp = dt == DType::Float16 ? 1.0 / 1024 : 1.0 / 128;
      const Tensor d = c.to(DType::Float64).cpu(), t = two.to(DType::Float64).cpu();
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j)
          CHECK(std::abs(d.get({i, j}) - t.get({i, j})) <= ulp * std::max(1.0, std::abs(t.get({i, j}))));
      // gemm_plus_bias takes the epilogue here and gives the same
      Tensor viaLinear = empty({M, N}, dt, gpu);
      cudnn::gemm_plus_bias(x.to(gpu, dt), w.to(gpu, dt), b.to(gpu, dt), viaLinear);
      CHECK(max_abs_diff(viaLinear.cpu().to(DType::Float64), d) == 0);
    }
  }
  // a NaN or an Inf in the bias reaches its column only
  Tensor x = ones({64, 16}, DType::BFloat16, gpu), w = ones({32, 16}, DType::BFloat16, gpu);
  Tensor bh = zeros({32}, DType::Float64);
  bh.set({3}, std::numeric_limits<double>::quiet_NaN());
  bh.set({5}, std::numeric_limits<double>::infinity());
  Tensor c = empty({64, 32}, DType::BFloat16, gpu);
  REQUIRE(cudnn::gemm_with_bias(false, true, x, w, bh.to(gpu, DType::BFloat16), c));
  const Tensor got = c.cpu().to(DType::Float64);
  for (int64_t j = 0; j < 32; ++j) {
    CHECK(std::isnan(got.get({9, j})) == (j == 3));
    CHECK(std::isinf(got.get({9, j})) == (j == 5));
    if (j != 3 && j != 5) CHECK(got.get({9, j}) == 16);
  }
  CHECK_THROWS_WITH_AS(cudnn::gemm_with_bias(false, true, x, w, zeros({31}, DType::BFloat16, gpu), c),
                       doctest::Contains("expected a contiguous bias of 32 bfloat16"), Error);
  Tensor c32 = c.to(DType::Float32);
  CHECK_FALSE(cudnn::gemm_with_bias(false, true, x.to(DType::Float32), w.to(DType::Float32),
                                    zeros({32}, DType::Float32, gpu), c32));
}

TEST_CASE("A few rows' product (a decode step's Linear): the float32 sum rounded once, NaN and Inf kept") {
  Generator gen(63);
  for (DType dt : {DType::Float16, DType::BFloat16}) {
    // GPT-2's qkv, MLP and projection shapes at batch 1 to 4 (one, four and two warps a column), a
    // ragged K over four warps, and small ones with fewer columns than a block
    for (const auto& [N, K] :
         {std::pair<int64_t, int64_t>{2304, 768}, {768, 3072}, {768, 768}, {100, 4104}, {5, 8}, {37, 264}}) {
      for (int64_t M = 1; M <= cudnn::kernels::kFewRowsMax; ++M) {
        for (bool withBias : {true, false}) {
          INFO(name(dt), " ", M, " x ", N, " x ", K, withBias ? " with bias" : " without bias");
          const Tensor x = uniform({M, K}, -1, 1, gen, DType::Float64).to(dt).to(DType::Float64);
          const Tensor w = uniform({N, K}, -1, 1, gen, DType::Float64).to(dt).to(DType::Float64);
          const Tensor b = withBias ? uniform({N}, -1, 1, gen, DType::Float64).to(dt) : Tensor();
          const Tensor xg = x.to(gpu, dt), wg = w.to(gpu, dt), bg = withBias ? b.to(gpu) : Tensor();
          Tensor ours = full({M, N}, 7.0, dt, gpu);
          REQUIRE(cudnn::kernels::few_rows_linear(xg, wg, bg, ours));
          // the float32 sum rounded once: within one unit in the last place of the float64 product
          const Tensor want = x.matmul(w.t().contiguous());
          const double ulp = dt == DType::Float16 ? 1.0 / 1024 : 1.0 / 128;
          const Tensor o = ours.cpu().to(DType::Float64), b64 = withBias ? b.to(DType::Float64) : Tensor();
          double worst = 0;
          for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < N; ++j) {
              const double ref = want.get({i, j}) + (withBias ? b64.get({j}) : 0.0);
              worst = std::max(worst, std::abs(o.get({i, j}) - ref) / (ulp * std::max(1.0, std::abs(ref))));
            }
          CHECK(worst <= 1.0);
          // and cuBLAS's product (the bias broadcast first, then beta 1) to its own precision
          Tensor lib = empty({M, N}, dt, gpu);
          if (withBias) {
            lib.copy_(bg.view({1, N}).expand({M, N}));
          } else {
            lib.fill_(0.0);
          }
          cudnn::gemm(false, true, xg, wg, lib, 1, 1);
          CHECK(rel_norm_error(ours.to(DType::Float64), lib.to(DType::Float64)) < (dt == DType::Float16 ? 2e-3 : 2e-2));
          // the same bits again (a fixed order of additions), and gemm_plus_bias takes this path
          Tensor again = empty({M, N}, dt, gpu);
          cudnn::gemm_plus_bias(xg, wg, bg, again);
          CHECK(max_abs_diff(again.cpu().to(DType::Float64), o) == 0);
        }
      }
    }
  }
  // a NaN in x's row 1 makes that row NaN alone; an Inf in W's row 5 makes column 5 Inf; a NaN in
  // the bias reaches its column only
  Tensor xh = ones({3, 16}, DType::Float64), wh = ones({8, 16}, DType::Float64), bh = zeros({8}, DType::Float64);
  xh.set({1, 4}, std::numeric_limits<double>::quiet_NaN());
  wh.set({5, 9}, std::numeric_limits<double>::infinity());
  bh.set({2}, std::numeric_limits<double>::quiet_NaN());
  Tensor y = empty({3, 8}, DType::BFloat16, gpu);
  REQUIRE(cudnn::kernels::few_rows_linear(xh.to(gpu, DType::BFloat16), wh.to(gpu, DType::BFloat16),
                                          bh.to(gpu, DType::BFloat16), y));
  const Tensor got = y.cpu().to(DType::Float64);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 8; ++j) {
      INFO(i, ", ", j);
      if (i == 1 || j == 2) {
        CHECK(std::isnan(got.get({i, j})));
      } else if (j == 5) {
        CHECK(got.get({i, j}) == std::numeric_limits<double>::infinity());
      } else {
        CHECK(got.get({i, j}) == 16);
      }
    }
  // what it does not take: more rows, K not a multiple of 8, float32, a bias of another length
  const Tensor x5 = ones({5, 16}, DType::Float16, gpu), w16 = ones({8, 16}, DType::Float16, gpu);
  Tensor y5 = empty({5, 8}, DType::Float16, gpu);
  CHECK_FALSE(cudnn::kernels::few_rows_linear(x5, w16, Tensor(), y5));
  Tensor y1 = empty({1, 8}, DType::Float16, gpu);
  CHECK_FALSE(cudnn::kernels::few_rows_linear(ones({1, 12}, DType::Float16, gpu), ones({8, 12}, DType::Float16, gpu),
                                              Tensor(), y1));
  Tensor y32 = empty({1, 8}, DType::Float32, gpu);
  CHECK_FALSE(cudnn::kernels::few_rows_linear(ones({1, 16}, DType::Float32, gpu), ones({8, 16}, DType::Float32, gpu),
                                              Tensor(), y32));
  CHECK_FALSE(cudnn::kernels::few_rows_linear(x5.narrow(0, 0, 1), w16, ones({7}, DType::Float16, gpu), y1));
}

TEST_CASE(
    "A few rows' product with an addend (a residual in its epilogue): rounded once, NaN kept, else a pass after") {
  Generator gen(65);
  for (DType dt : {DType::Float16, DType::BFloat16}) {
    for (const auto& [N, K] : {std::pair<int64_t, int64_t>{768, 768}, {768, 3072}, {37, 264}}) {
      for (int64_t M = 1; M <= cudnn::kernels::kFewRowsMax; ++M) {
        for (bool withBias : {true, false}) {
          INFO(name(dt), " ", M, " x ", N, " x ", K, withBias ? " with bias" : " without bias");
          const Tensor x = uniform({M, K}, -1, 1, gen, DType::Float64).to(dt).to(DType::Float64);
          const Tensor w = uniform({N, K}, -1, 1, gen, DType::Float64).to(dt).to(DType::Float64);
          const Tensor b = withBias ? uniform({N}, -1, 1, gen, DType::Float64).to(dt) : Tensor();
          const Tensor r = uniform({M, N}, -4, 4, gen, DType::Float64).to(dt);
          const Tensor xg = x.to(gpu, dt), wg = w.to(gpu, dt), bg = withBias ? b.to(gpu) : Tensor(), rg = r.to(gpu);
          Tensor ours = full({M, N}, 7.0, dt, gpu);
          REQUIRE(cudnn::kernels::few_rows_linear(xg, wg, bg, ours, rg));
          // product + bias + addend in float32, rounded once: within one ulp of the float64 sum
          const Tensor want = x.matmul(w.t().contiguous()).add(r.to(DType::Float64));
          const double ulp = dt == DType::Float16 ? 1.0 / 1024 : 1.0 / 128;
          const Tensor o = ours.cpu().to(DType::Float64), b64 = withBias ? b.to(DType::Float64) : Tensor();
          double worst = 0;
          for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < N; ++j) {
              const double ref = want.get({i, j}) + (withBias ? b64.get({j}) : 0.0);
              worst = std::max(worst, std::abs(o.get({i, j}) - ref) / (ulp * std::max(1.0, std::abs(ref))));
            }
          CHECK(worst <= 1.0);
          // gemm_plus_bias takes this path with the addend; with linear.engine=cublas it is the
          // product, rounded, then the sum: bit for bit the two passes
          Tensor again = empty({M, N}, dt, gpu);
          cudnn::gemm_plus_bias(xg, wg, bg, again, rg);
          CHECK(max_abs_diff(again.cpu().to(DType::Float64), o) == 0);
          cudnn::ScopedConfig scoped("linear.engine=cublas");
          Tensor lib = empty({M, N}, dt, gpu), twoPasses = empty({M, N}, dt, gpu);
          cudnn::gemm_plus_bias(xg, wg, bg, lib, rg);
          cudnn::gemm_plus_bias(xg, wg, bg, twoPasses);
          twoPasses.add_(rg);
          CHECK(max_abs_diff(lib.cpu().to(DType::Float64), twoPasses.cpu().to(DType::Float64)) == 0);
        }
      }
    }
  }
  // a NaN in the addend reaches its element alone; an Inf addend gives Inf
  Tensor r = zeros({2, 8}, DType::Float64);
  r.set({1, 3}, std::numeric_limits<double>::quiet_NaN());
  r.set({0, 6}, -std::numeric_limits<double>::infinity());
  Tensor y = empty({2, 8}, DType::BFloat16, gpu);
  REQUIRE(cudnn::kernels::few_rows_linear(ones({2, 16}, DType::BFloat16, gpu), ones({8, 16}, DType::BFloat16, gpu),
                                          Tensor(), y, r.to(gpu, DType::BFloat16)));
  const Tensor got = y.cpu().to(DType::Float64);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 8; ++j) {
      INFO(i, ", ", j);
      if (i == 1 && j == 3) {
        CHECK(std::isnan(got.get({i, j})));
      } else if (i == 0 && j == 6) {
        CHECK(got.get({i, j}) == -std::numeric_limits<double>::infinity());
      } else {
        CHECK(got.get({i, j}) == 16);
      }
    }
  // an addend of another shape or dtype is not taken; five rows go through cuBLAS and a sum
  Tensor y1 = empty({1, 8}, DType::Float16, gpu);
  const Tensor x1 = ones({1, 16}, DType::Float16, gpu), w16 = ones({8, 16}, DType::Float16, gpu);
  CHECK_FALSE(cudnn::kernels::few_rows_linear(x1, w16, Tensor(), y1, ones({1, 7}, DType::Float16, gpu)));
  CHECK_FALSE(cudnn::kernels::few_rows_linear(x1, w16, Tensor(), y1, ones({1, 8}, DType::BFloat16, gpu)));
  Tensor y5 = empty({5, 8}, DType::Float16, gpu);
  cudnn::gemm_plus_bias(ones({5, 16}, DType::Float16, gpu), w16, Tensor(), y5, full({5, 8}, 0.5, DType::Float16, gpu));
  CHECK(y5.cpu().to(DType::Float64).min().item() == 16.5);
  CHECK(y5.cpu().to(DType::Float64).max().item() == 16.5);
}

TEST_CASE("A few rows' product with GELU in its epilogue: the product's and the activation kernel's bits") {
  Generator gen(67);
  for (DType dt : {DType::Float16, DType::BFloat16}) {
    for (nn::Activation mode : {nn::Activation::GELUTanh, nn::Activation::GELU}) {
      for (const auto& [N, K] : {std::pair<int64_t, int64_t>{3072, 768}, {40, 64}}) {
        for (int64_t M = 1; M <= cudnn::kernels::kFewRowsMax; ++M) {
          INFO(name(dt), " ", M, " x ", N, " x ", K, mode == nn::Activation::GELU ? " gelu" : " gelu tanh");
          const Tensor x = uniform({M, K}, -1, 1, gen).to(gpu, dt), w = uniform({N, K}, -0.3, 0.3, gen).to(gpu, dt);
          const Tensor b = uniform({N}, -1, 1, gen).to(gpu, dt);
          Tensor y = empty({M, N}, dt, gpu), act = empty({M, N}, dt, gpu);
          REQUIRE(cudnn::kernels::few_rows_linear_activated(x, w, b, y, mode, act));
          Tensor y1 = empty({M, N}, dt, gpu), act1 = empty({M, N}, dt, gpu);
          REQUIRE(cudnn::kernels::few_rows_linear(x, w, b, y1));
          cudnn::kernels::activation_forward(mode, 0, y1, act1);
          CHECK(max_abs_diff(y.cpu().to(DType::Float64), y1.cpu().to(DType::Float64)) == 0);
          CHECK(max_abs_diff(act.cpu().to(DType::Float64), act1.cpu().to(DType::Float64)) == 0);
        }
      }
    }
  }
  // NaN in x's row reaches both outputs' row; another activation or five rows are not taken
  Tensor xh = ones({2, 16}, DType::Float64);
  xh.set({0, 5}, std::numeric_limits<double>::quiet_NaN());
  const Tensor w = full({8, 16}, 0.0625, DType::BFloat16, gpu);
  Tensor y = empty({2, 8}, DType::BFloat16, gpu), act = empty({2, 8}, DType::BFloat16, gpu);
  REQUIRE(cudnn::kernels::few_rows_linear_activated(xh.to(gpu, DType::BFloat16), w, Tensor(), y,
                                                    nn::Activation::GELUTanh, act));
  const Tensor a = act.cpu().to(DType::Float64);
  for (int64_t j = 0; j < 8; ++j) {
    CHECK(std::isnan(a.get({0, j})));
    CHECK(std::abs(a.get({1, j}) - 0.8412) < 1e-2);  // GELU(1)
  }
  CHECK_FALSE(cudnn::kernels::few_rows_linear_activated(xh.to(gpu, DType::BFloat16), w, Tensor(), y,
                                                        nn::Activation::SiLU, act));
  Tensor y5 = empty({5, 8}, DType::BFloat16, gpu), act5 = empty({5, 8}, DType::BFloat16, gpu);
  CHECK_FALSE(cudnn::kernels::few_rows_linear_activated(ones({5, 16}, DType::BFloat16, gpu), w, Tensor(), y5,
                                                        nn::Activation::GELU, act5));
}

TEST_CASE("A gated pair's few rows (SwiGLU's products and gate in one launch): the three launches' bits") {
  Generator gen(66);
  for (DType dt : {DType::Float16, DType::BFloat16}) {
    for (const auto& [N, K] : {std::pair<int64_t, int64_t>{2048, 768}, {176, 64}, {8, 4104}}) {
      for (int64_t M = 1; M <= cudnn::kernels::kFewRowsMax; ++M) {
        for (bool withBias : {false, true}) {
          INFO(name(dt), " ", M, " x ", N, " x ", K, withBias ? " with bias" : " without bias");
          const Tensor x = uniform({M, K}, -1, 1, gen).to(gpu, dt);
          const Tensor wg = uniform({N, K}, -0.2, 0.2, gen).to(gpu, dt),
                       wu = uniform({N, K}, -0.2, 0.2, gen).to(gpu, dt);
          const Tensor bg = withBias ? uniform({N}, -1, 1, gen).to(gpu, dt) : Tensor();
          const Tensor bu = withBias ? uniform({N}, -1, 1, gen).to(gpu, dt) : Tensor();
          Tensor gate = empty({M, N}, dt, gpu), up = empty({M, N}, dt, gpu), h = empty({M, N}, dt, gpu);
          REQUIRE(cudnn::kernels::few_rows_gated(x, wg, bg, wu, bu, gate, up, h));
          Tensor gate1 = empty({M, N}, dt, gpu), up1 = empty({M, N}, dt, gpu), h1 = empty({M, N}, dt, gpu);
          REQUIRE(cudnn::kernels::few_rows_linear(x, wg, bg, gate1));
          REQUIRE(cudnn::kernels::few_rows_linear(x, wu, bu, up1));
          cudnn::kernels::swiglu_gate_forward(gate1, up1, h1);
          CHECK(max_abs_diff(gate.cpu().to(DType::Float64), gate1.cpu().to(DType::Float64)) == 0);
          CHECK(max_abs_diff(up.cpu().to(DType::Float64), up1.cpu().to(DType::Float64)) == 0);
          CHECK(max_abs_diff(h.cpu().to(DType::Float64), h1.cpu().to(DType::Float64)) == 0);
        }
      }
    }
  }
  // NaN in a row of x reaches that row of all three; weights of two shapes, one bias alone, five
  // rows and float32 are not taken
  Tensor xh = ones({2, 16}, DType::Float64);
  xh.set({1, 2}, std::numeric_limits<double>::quiet_NaN());
  const Tensor w = full({8, 16}, 0.125, DType::Float16, gpu);
  Tensor g = empty({2, 8}, DType::Float16, gpu), u = empty({2, 8}, DType::Float16, gpu),
         h = empty({2, 8}, DType::Float16, gpu);
  REQUIRE(cudnn::kernels::few_rows_gated(xh.to(gpu, DType::Float16), w, Tensor(), w, Tensor(), g, u, h));
  const Tensor hh = h.cpu().to(DType::Float64);
  for (int64_t j = 0; j < 8; ++j) {
    CHECK(std::isnan(hh.get({1, j})));
    CHECK(std::abs(hh.get({0, j}) - 2.0 / (1 + std::exp(-2.0)) * 2.0) < 1e-2);
  }
  const Tensor x1 = ones({1, 16}, DType::Float16, gpu);
  Tensor g1 = empty({1, 8}, DType::Float16, gpu), u1 = empty({1, 8}, DType::Float16, gpu),
         h1 = empty({1, 8}, DType::Float16, gpu);
  CHECK_FALSE(
      cudnn::kernels::few_rows_gated(x1, w, Tensor(), ones({8, 24}, DType::Float16, gpu), Tensor(), g1, u1, h1));
  CHECK_FALSE(cudnn::kernels::few_rows_gated(x1, w, ones({8}, DType::Float16, gpu), w, Tensor(), g1, u1, h1));
  Tensor g5 = empty({5, 8}, DType::Float16, gpu), u5 = empty({5, 8}, DType::Float16, gpu),
         h5 = empty({5, 8}, DType::Float16, gpu);
  CHECK_FALSE(cudnn::kernels::few_rows_gated(ones({5, 16}, DType::Float16, gpu), w, Tensor(), w, Tensor(), g5, u5, h5));
  const Tensor w32 = ones({8, 16}, DType::Float32, gpu);
  Tensor g32 = empty({1, 8}, DType::Float32, gpu), u32 = empty({1, 8}, DType::Float32, gpu),
         h32 = empty({1, 8}, DType::Float32, gpu);
  CHECK_FALSE(
      cudnn::kernels::few_rows_gated(ones({1, 16}, DType::Float32, gpu), w32, Tensor(), w32, Tensor(), g32, u32, h32));
}

TEST_CASE("linear.engine: auto by default, cublas keeps a few rows on cuBLAS, refused by name, restored") {
  CHECK(cudnn::config().linear_engine == cudnn::LinearEngine::Auto);
  CHECK(std::string(cudnn::linear_engine_name(cudnn::LinearEngine::Cublas)) == "cublas");
  Generator gen(64);
  const Tensor x = uniform({1, 768}, -1, 1, gen, DType::Float64).to(gpu, DType::BFloat16);
  const Tensor w = uniform({256, 768}, -1, 1, gen, DType::Float64).to(gpu, DType::BFloat16);
  Tensor ours = empty({1, 256}, DType::BFloat16, gpu), lib = empty({1, 256}, DType::BFloat16, gpu);
  Tensor want = empty({1, 256}, DType::BFloat16, gpu);
  cudnn::gemm_plus_bias(x, w, Tensor(), ours);
  REQUIRE(cudnn::kernels::few_rows_linear(x, w, Tensor(), want));
  CHECK(max_abs_diff(ours.cpu().to(DType::Float64), want.cpu().to(DType::Float64)) == 0);
  {
    cudnn::ScopedConfig scoped("linear.engine=cublas");
    CHECK(cudnn::config().linear_engine == cudnn::LinearEngine::Cublas);
    cudnn::gemm_plus_bias(x, w, Tensor(), lib);
    cudnn::gemm(false, true, x, w, want);
    CHECK(max_abs_diff(lib.cpu().to(DType::Float64), want.cpu().to(DType::Float64)) == 0);
    CHECK_THROWS_WITH_AS(cudnn::set_flags("linear.engine=gemv"),
                         doctest::Contains("linear.engine expects auto or cublas"), Error);
  }
  CHECK(cudnn::config().linear_engine == cudnn::LinearEngine::Auto);
}

TEST_CASE("NLL kernels: weighted sums, ignored class, gradient, bad targets") {
  Generator gen(7);
  Tensor logp = uniform({4, 3, 2}, -3, 0, gen, DType::Float64);
  Tensor target = from_vector<int64_t>({0, 2, 1, 1, 2, 0, -100, 1}, {4, 2});
  Tensor w = from_vector<double>({0.5, 1.0, 2.0});
  double loss = 0, weight = 0;
  for (int64_t n = 0; n < 4; ++n)
    for (int64_t i = 0; i < 2; ++i) {
      const auto t = static_cast<int64_t>(target.get({n, i}));
      if (t == -100) continue;
      loss -= w.get({t}) * logp.get({n, t, i});
      weight += w.get({t});
    }
  const auto sums = cudnn::kernels::nll_forward(logp.to(gpu), target.to(gpu), w.to(gpu), -100, "test: ");
  CHECK(sums.loss == doctest::Approx(loss).epsilon(1e-12));
  CHECK(sums.weight == doctest::Approx(weight).epsilon(1e-12));
  Tensor grad = empty(logp.sizes(), DType::Float64, gpu);
  cudnn::kernels::nll_backward(target.to(gpu), w.to(gpu), -100, 0.5, grad);
  CHECK(grad.get({2, 2, 0}) == doctest::Approx(-2.0 * 0.5));  // target[2][0] = 2, weight 2
  CHECK(grad.get({3, 1, 1}) == doctest::Approx(-1.0 * 0.5));
  CHECK(grad.get({3, 0, 0}) == 0);  // ignored
  CHECK(grad.sum().item() == doctest::Approx(-weight * 0.5));
  Tensor bad = from_vector<int64_t>({0, 2, 1, 1, 3, 0, 0, 1}, {4, 2});
  CHECK_THROWS_WITH_AS(cudnn::kernels::nll_forward(logp.to(gpu), bad.to(gpu), Tensor(), -100, "nn.X: "),
                       "nn.X: target 3 at position 4 (flattened) is out of range [0, 3)", Error);
}

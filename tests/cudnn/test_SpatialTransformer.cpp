// test_SpatialTransformer.cpp: cudnn::spatial_tf against nn::spatial_tf (output, image and theta
// gradients) in float32 and float64 tightly, float16 and bfloat16 within stated tolerances;
// size-1 output dims, more than 1024 channels, non-contiguous arguments; what the sampler's
// blending factors do; NaN and empty batches alike on both backends; cudnn.SpatialTransformer
// against nn.SpatialTransformer (output, gradInput, the localisation network's parameter
// gradients), with an nn localisation network too; convert both ways; printing and errors.
#include <doctest/doctest.h>

#include <cmath>

#include "convert/Convert.h"
#include "cudnn/Linear.h"
#include "cudnn/SpatialAveragePooling.h"
#include "cudnn/SpatialTransformer.h"
#include "cudnn/View.h"
#include "cudnn/core/Config.h"
#include "cudnn/core/Handle.h"
#include "cudnn/ops/spatial_tf.h"
#include "nn/Linear.h"
#include "nn/Sequential.h"
#include "nn/SpatialAveragePooling.h"
#include "nn/SpatialTransformer.h"
#include "nn/View.h"
#include "tensor/Cuda.h"
#include "tests/support/SteadyState.h"
#include "tests/support/TwinCheck.h"
#include "tests/support/SpatialTfCases.h"

using namespace tensor;
using namespace testing;
using stftest::generic_theta;
using stftest::smooth_image;

namespace {

const Device gpu = Device::cuda(0);

struct OpTolerance {
  double output, gradImage, gradTheta;  // rel_norm_error against nn in float64
};

// Stated tolerances of the op against nn::spatial_tf in float64 on the same (rounded) inputs.
OpTolerance op_tolerance(DType dt) {
  switch (dt) {
    case DType::Float64: return {1e-10, 1e-10, 1e-9};
    case DType::Float32: return {1e-5, 1e-5, 1e-4};
    case DType::Float16: return {1e-2, 1e-2, 5e-2};
    default: return {5e-2, 5e-2, 1.5e-1};  // bfloat16
  }
}

void compare(const char* what, const Tensor& got, const Tensor& want, double tol) {
  INFO(std::string(what), ": cudnn ", got.description(), " vs nn ", want.description());
  REQUIRE(got.sizes() == want.sizes());
  CHECK(got.is_cuda());
  CHECK_FALSE(has_nonfinite(got));
  const double err = rel_norm_error(got, want);
  INFO("relative error ", err, " (tolerance ", tol, ")");
  CHECK(err <= tol);
}

// cudnn::spatial_tf in `dt` against nn::spatial_tf in float64 on the inputs rounded to `dt`.
void expect_op_matches(const Tensor& img, const Tensor& theta, int64_t outH, int64_t outW, DType dt,
                       bool grad_theta = true, bool noncontiguous = false) {
  INFO("img ", shape_str(img.sizes()), " out ", outH, "x", outW, " in ", std::string(name(dt)),
       std::string(noncontiguous ? ", non-contiguous img" : ""));
  const OpTolerance tol = op_tolerance(dt);
  const Tensor x = img.to(dt), th = theta.to(dt);
  const Tensor x64 = x.to(DType::Float64), th64 = th.to(DType::Float64);
  Generator gen(17);
  const Tensor g = uniform({img.size(0), img.size(1), outH, outW}, -1, 1, gen, dt);
  Tensor xg = x.to(gpu);
  if (noncontiguous) {  // the same values in a transposed buffer
    Tensor buf = empty(xg.transpose(2, 3).sizes(), dt, gpu);
    buf.copy_(xg.transpose(2, 3));
    xg = buf.transpose(2, 3);
    REQUIRE_FALSE(xg.is_contiguous());
  }
  const Tensor y = cudnn::spatial_tf(xg, th.to(gpu), outH, outW);
  CHECK(y.dtype() == dt);
  compare("output", y, nn::spatial_tf(x64, th64, outH, outW), tol.output);
  const nn::SpatialTfGrads got = cudnn::spatial_tf_backward(xg, th.to(gpu), g.to(gpu));
  const nn::SpatialTfGrads want = nn::spatial_tf_backward(x64, th64, g.to(DType::Float64));
  compare("gradImage", got.gradImage, want.gradImage, tol.gradImage);
  if (grad_theta) compare("gradTheta", got.gradTheta, want.gradTheta, tol.gradTheta);
}

struct OpCase {
  int64_t N, C, H, W, outH, outW;
  double spread;  // translation range: 0.9 moves part of the grid outside
};
const OpCase op_cases[] = {
    {2, 3, 7, 8, 7, 8, 0.3}, {3, 2, 6, 6, 9, 4, 0.3},     {1, 1, 5, 9, 5, 9, 0.9}, {4, 5, 16, 16, 12, 20, 0.3},
    {3, 2, 6, 5, 6, 5, 0.9}, {2, 2, 6, 5, 1, 5, 0.3},     {2, 2, 6, 5, 4, 1, 0.3}, {1, 3, 4, 4, 1, 1, 0.3},
    {2, 1, 1, 6, 3, 4, 0.3}, {5, 4, 32, 24, 17, 13, 0.3},
};

// [N x C x H x W] -> [N x C*H*W]
template <class View>
std::shared_ptr<View> flatten() {
  auto view = std::make_shared<View>(-1);
  view->setNumInputDims(3);
  return view;
}

// A localisation network (nn or cudnn modules) [N x C x H x W] -> [N x 6] or [N x 2 x 3],
// initialised near the identity map from `seed`.
template <class View, class Linear>
nn::ModulePtr localisation(int64_t C, int64_t H, int64_t W, uint64_t seed, bool matrix = false) {
  Generator gen(seed);
  auto lin = std::make_shared<Linear>(C * H * W, 6);
  lin->weight.copy_(uniform(lin->weight.sizes(), -0.05, 0.05, gen));
  lin->bias.copy_(from_vector<double>({1, 0, 0, 0, 1, 0}).add(uniform({6}, -0.1, 0.1, gen, DType::Float64)));
  auto seq = std::make_shared<nn::Sequential>(std::initializer_list<nn::ModulePtr>{flatten<View>(), lin});
  if (matrix) seq->add(std::make_shared<View>(2, 3));
  return seq;
}

}  // namespace

TEST_CASE("cudnn::spatial_tf matches nn::spatial_tf in float32 and float64 (output, image and theta gradients)") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  Generator gen(6060);
  INFO("seed 6060");
  for (const OpCase& c : op_cases) {
    const Tensor img = uniform({c.N, c.C, c.H, c.W}, -1, 1, gen, DType::Float64);
    // float32 moves a sample by about 1e-6 pixel: a margin of 1e-4 keeps it in its cell
    const Tensor theta = generic_theta(gen, c.N, c.H, c.W, c.outH, c.outW, c.spread, 1e-4);
    for (DType dt : {DType::Float32, DType::Float64}) expect_op_matches(img, theta, c.outH, c.outW, dt);
  }
  // a non-contiguous image
  const Tensor img = uniform({2, 3, 5, 7}, -1, 1, gen, DType::Float64);
  expect_op_matches(img, generic_theta(gen, 2, 5, 7, 6, 6), 6, 6, DType::Float32, true, true);
  // the identity map samples exactly on the pixels (the kinks): the output is the image; theta's
  // gradient there is a one-sided slope that rounding may flip, so it is not compared
  const Tensor id = stftest::thetas({{1, 0, 0, 0, 1, 0}, {1, 0, 0, 0, 1, 0}});
  for (DType dt : {DType::Float32, DType::Float64}) {
    expect_op_matches(img, id, 5, 7, dt, false);
    CHECK(max_abs_diff(cudnn::spatial_tf(img.to(gpu, dt), id.to(gpu, dt), 5, 7), img.to(dt)) <= 1e-6);
  }
}

TEST_CASE("cudnn::spatial_tf in float16 and bfloat16 (smooth images; native or float32 copies)") {
  Generator gen(6061);
  INFO("seed 6061");
  for (DType dt : {DType::Float16, DType::BFloat16}) {
    for (const OpCase& c : op_cases) {
      // a 16-bit grid moves samples by up to (W - 1) / 2 * 2^-11 (float16) or 2^-8 (bfloat16)
      // pixels, across a kink for a few: smooth images keep the slopes of neighbouring cells close
      const Tensor theta = generic_theta(gen, c.N, c.H, c.W, c.outH, c.outW, c.spread, 1e-4);
      expect_op_matches(smooth_image(c.N, c.C, c.H, c.W), theta, c.outH, c.outW, dt);
    }
    // which path the runtime took (Note [16-bit spatial transformer])
    cudnn::SpatialTfPlan plan;
    Tensor out;
    cudnn::spatial_tf_forward(plan, smooth_image(1, 1, 4, 4).to(gpu, dt),
                              stftest::thetas({{1, 0, 0, 0, 1, 0}}).to(gpu, dt), 4, 4, out);
    MESSAGE(std::string(name(dt)) << " forward: cuDNN "
                                  << std::string(plan.computes_in_float32(dt) ? "refused it, computed in float32 copies"
                                                                            : "computes it natively"));
  }
}

TEST_CASE("cudnn::spatial_tf samples more than 1024 channels in chunks") {
  Generator gen(6062);
  const Tensor img = uniform({2, 1030, 3, 4}, -1, 1, gen, DType::Float64);
  const Tensor theta = generic_theta(gen, 2, 3, 4, 2, 3);
  for (DType dt : {DType::Float32, DType::Float64}) expect_op_matches(img, theta, 2, 3, dt);
}

TEST_CASE("cudnnSpatialTfSamplerBackward's blending factors (Note [Sampler backward blending])") {
  // Raw calls in float32. A: zeroed buffers, beta = 1 (what the op does); B: buffers holding 5,
  // beta = 0; C: buffers holding 5, beta = 1.
  Generator gen(6063);
  const int64_t N = 2, C = 3, H = 5, W = 6, oH = 4, oW = 7;
  const Tensor x = uniform({N, C, H, W}, -1, 1, gen, DType::Float32, gpu);
  const Tensor dy = uniform({N, C, oH, oW}, -1, 1, gen, DType::Float32, gpu);
  const Tensor theta = generic_theta(gen, N, H, W, oH, oW).to(gpu, DType::Float32);
  cudnn::SpatialTransformerDescriptor st;
  cudnn::TensorDescriptor xd, yd;
  st.set(DType::Float32, {N, C, oH, oW});
  Tensor grid = empty({N, oH, oW, 2}, DType::Float32, gpu);
  CUDNN_CHECK(cudnnSpatialTfGridGeneratorForward(cudnn::handle(), st.get(), theta.raw_data(), grid.raw_data()));
  auto run = [&](double prior, float beta) {
    Tensor dx = full({N, C, H, W}, prior, DType::Float32, gpu),
           dgrid = full({N, oH, oW, 2}, prior, DType::Float32, gpu);
    const float one = 1;
    CUDNN_CHECK(cudnnSpatialTfSamplerBackward(cudnn::handle(), st.get(), &one, xd.set(x), x.raw_data(), &beta,
                                              xd.set(dx), dx.raw_data(), &one, yd.set(dy), dy.raw_data(),
                                              grid.raw_data(), &beta, dgrid.raw_data()));
    return std::pair<Tensor, Tensor>{dx, dgrid};
  };
  const auto [dxA, dgA] = run(0, 1);
  const auto [dxB, dgB] = run(5, 0);
  const auto [dxC, dgC] = run(5, 1);
  // beta = 1 adds to what the buffers held
  CHECK(max_abs_diff(dxC, dxA.add(5.0)) <= 1e-5);
  CHECK(max_abs_diff(dgC, dgA.add(5.0)) <= 1e-4);
  // beta = 0: overwritten, or (for the scattered dx) added to the prior contents; nothing else
  const bool dx_overwritten = max_abs_diff(dxB, dxA) <= 1e-5, dx_accumulated = max_abs_diff(dxB, dxA.add(5.0)) <= 1e-5;
  const bool dg_overwritten = max_abs_diff(dgB, dgA) <= 1e-4, dg_accumulated = max_abs_diff(dgB, dgA.add(5.0)) <= 1e-4;
  CHECK((dx_overwritten || dx_accumulated));
  CHECK((dg_overwritten || dg_accumulated));
  auto said = [](bool overwritten, bool accumulated) {
    return std::string(overwritten ? "overwritten" : accumulated ? "accumulated into" : "neither");
  };
  MESSAGE(std::string(cudnn::version_string())
          << ": sampler backward with beta = 0: dx " << said(dx_overwritten, dx_accumulated) << ", dgrid "
          << said(dg_overwritten, dg_accumulated));
  // the grid generator's backward (no blending factors): written or accumulated?
  Tensor dtheta = full({N, 2, 3}, 5.0, DType::Float32, gpu);
  CUDNN_CHECK(cudnnSpatialTfGridGeneratorBackward(cudnn::handle(), st.get(), dgA.raw_data(), dtheta.raw_data()));
  Tensor dtheta0 = zeros({N, 2, 3}, DType::Float32, gpu);
  CUDNN_CHECK(cudnnSpatialTfGridGeneratorBackward(cudnn::handle(), st.get(), dgA.raw_data(), dtheta0.raw_data()));
  const bool th_overwritten = max_abs_diff(dtheta, dtheta0) <= 1e-4;
  CHECK((th_overwritten || max_abs_diff(dtheta, dtheta0.add(5.0)) <= 1e-4));
  MESSAGE(std::string("grid generator backward: dtheta ") << said(th_overwritten, !th_overwritten));
}

TEST_CASE("NaN in the image propagates alike on both backends; NaN in theta; empty batches") {
  Generator gen(6064);
  const int64_t N = 2, C = 2, H = 5, W = 6, oH = 6, oW = 5;
  const Tensor theta = generic_theta(gen, N, H, W, oH, oW);
  Tensor img = uniform({N, C, H, W}, -1, 1, gen, DType::Float64);
  img.set({0, 1, 2, 3}, std::nan(""));
  const Tensor g = uniform({N, C, oH, oW}, -1, 1, gen, DType::Float64);
  const Tensor y = nn::spatial_tf(img, theta, oH, oW);
  const nn::SpatialTfGrads want = nn::spatial_tf_backward(img, theta, g);
  REQUIRE(y.ne(y).sum().item() > 0);
  auto same_nan = [](const char* what, const Tensor& got, const Tensor& want, double tol) {
    INFO(std::string(what));
    const Tensor a = got.to(Device::cpu(), DType::Float64);
    CHECK(max_abs_diff(a.ne(a).to(DType::Float64), want.ne(want).to(DType::Float64)) == 0);
    // the finite entries agree: NaNs replaced by 0 on both sides
    const Tensor za = a.ne(a).to(DType::Float64), zw = want.ne(want).to(DType::Float64);
    Tensor ca = a.clone(), cw = want.clone();
    const std::vector<double> ma = za.to_vector<double>(), mw = zw.to_vector<double>();
    for (int64_t i = 0; i < ca.numel(); ++i) {
      if (ma[static_cast<size_t>(i)] != 0) ca.view({-1}).set({i}, 0.0);
      if (mw[static_cast<size_t>(i)] != 0) cw.view({-1}).set({i}, 0.0);
    }
    CHECK(max_abs_diff(ca, cw) <= tol);
  };
  for (DType dt : {DType::Float32, DType::Float64}) {
    INFO(std::string(name(dt)));
    const double tol = dt == DType::Float64 ? 1e-12 : 1e-5;
    const Tensor xg = img.to(gpu, dt), tg = theta.to(gpu, dt);
    same_nan("output", cudnn::spatial_tf(xg, tg, oH, oW), y, tol);
    const nn::SpatialTfGrads got = cudnn::spatial_tf_backward(xg, tg, g.to(gpu, dt));
    same_nan("gradImage", got.gradImage, want.gradImage, tol);
    same_nan("gradTheta", got.gradTheta, want.gradTheta, 1e3 * tol);
  }
  // NaN or Inf in theta: that sample is NaN throughout on both (Note [Non-finite theta])
  img.set({0, 1, 2, 3}, 0.5);
  for (double v : {std::nan(""), double(INFINITY)}) {
    for (int64_t k : {0, 2, 4}) {
      INFO("theta[1] entry ", k, " = ", v);
      Tensor bad = theta.clone();
      bad.view({-1}).set({6 + k}, v);
      for (DType dt : {DType::Float32, DType::Float64}) {
        INFO(std::string(name(dt)));
        const Tensor xg = img.to(gpu, dt), tg = bad.to(gpu, dt);
        same_nan("output, non-finite theta", cudnn::spatial_tf(xg, tg, oH, oW), nn::spatial_tf(img, bad, oH, oW), 1e-5);
        const nn::SpatialTfGrads gb = cudnn::spatial_tf_backward(xg, tg, g.to(gpu, dt));
        const nn::SpatialTfGrads wb = nn::spatial_tf_backward(img, bad, g);
        same_nan("gradImage, non-finite theta", gb.gradImage, wb.gradImage, 1e-5);
        same_nan("gradTheta, non-finite theta", gb.gradTheta, wb.gradTheta, 1e-3);
      }
    }
  }
  // the twin module: a NaN in the localisation network's bias
  {
    cudnn::SpatialTransformer twin(localisation<cudnn::View, cudnn::Linear>(2, 5, 6, 95), oH, oW);
    nn::SpatialTransformer ref(localisation<nn::View, nn::Linear>(2, 5, 6, 95), oH, oW);
    ref.to(DType::Float64);
    twin.to(gpu);
    for (nn::SpatialTransformer* m : {&ref, static_cast<nn::SpatialTransformer*>(&twin)}) {
      m->localisation()->namedParameters()[1].second.view({-1}).set({2}, std::nan(""));
    }
    const Tensor xs = smooth_image(2, 2, 5, 6);
    same_nan("module output, NaN bias", twin.forward(xs.to(gpu, DType::Float32)), ref.forward(xs), 1e-5);
    same_nan("module gradInput, NaN bias", twin.backward(xs.to(gpu, DType::Float32), g.to(gpu, DType::Float32)),
             ref.backward(xs, g), 1e-4);
  }

  // empty batches: the shapes nn gives, no cuDNN call
  const Tensor e =
      cudnn::spatial_tf(zeros({0, 3, 4, 4}, DType::Float32, gpu), zeros({0, 2, 3}, DType::Float32, gpu), 2, 5);
  CHECK(e.sizes() == Shape{0, 3, 2, 5});
  CHECK(e.is_cuda());
  const nn::SpatialTfGrads ge =
      cudnn::spatial_tf_backward(zeros({0, 3, 4, 4}, DType::Float32, gpu), zeros({0, 2, 3}, DType::Float32, gpu),
                                 zeros({0, 3, 2, 5}, DType::Float32, gpu));
  CHECK(ge.gradImage.sizes() == Shape{0, 3, 4, 4});
  CHECK(ge.gradTheta.sizes() == Shape{0, 2, 3});
  auto pooled = [](bool twin) -> nn::ModulePtr {  // View(3): a -1 cannot be inferred from 0 elements
    nn::ModulePtr pool, lin;
    std::shared_ptr<nn::View> view;
    if (twin) {
      pool = std::make_shared<cudnn::SpatialAveragePooling>(4, 4);
      view = std::make_shared<cudnn::View>(3);
      lin = std::make_shared<cudnn::Linear>(3, 6);
    } else {
      pool = std::make_shared<nn::SpatialAveragePooling>(4, 4);
      view = std::make_shared<nn::View>(3);
      lin = std::make_shared<nn::Linear>(3, 6);
    }
    view->setNumInputDims(3);
    return std::make_shared<nn::Sequential>(std::initializer_list<nn::ModulePtr>{pool, view, lin});
  };
  nn::SpatialTransformer en(pooled(false), 3, 2);
  cudnn::SpatialTransformer ec(pooled(true), 3, 2);
  ec.to(gpu);
  const Tensor yn = en.forward(zeros({0, 3, 4, 4}));
  const Tensor yc = ec.forward(zeros({0, 3, 4, 4}, DType::Float32, gpu));
  CHECK(yc.sizes() == yn.sizes());
  CHECK(yc.is_cuda());
  CHECK(ec.backward(zeros({0, 3, 4, 4}, DType::Float32, gpu), zeros({0, 3, 3, 2}, DType::Float32, gpu)).sizes() ==
        en.backward(zeros({0, 3, 4, 4}), zeros({0, 3, 3, 2})).sizes());
}

TEST_CASE("cudnn.SpatialTransformer matches nn.SpatialTransformer (output, gradInput, localisation gradients)") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  struct Cfg {
    int64_t N, C, H, W, outH, outW;
    bool matrix;
  };
  const Cfg cfgs[] = {{2, 1, 4, 5, 4, 5, false}, {3, 2, 5, 4, 6, 3, true}, {4, 3, 8, 8, 6, 10, false}};
  uint64_t base = 7000;
  for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    for (const Cfg& c : cfgs) {
      const Tensor x = smooth_image(c.N, c.C, c.H, c.W);
      // the first seed whose localisation network puts every sample 1e-3 pixel away from the kinks
      // (16-bit ones may still cross a few: smooth images keep neighbouring slopes close)
      uint64_t seed = base;
      auto make_ref = [&] {
        auto m = std::make_shared<nn::SpatialTransformer>(
            localisation<nn::View, nn::Linear>(c.C, c.H, c.W, seed, c.matrix), c.outH, c.outW);
        m->to(DType::Float64);
        m->forward(x);
        return m;
      };
      auto ref = make_ref();
      while (stftest::kink_distance(ref->theta, c.H, c.W, c.outH, c.outW) < 1e-3 && seed < base + 50) {
        ++seed;
        ref = make_ref();
      }
      INFO("input ", c.N, "x", c.C, "x", c.H, "x", c.W, " out ", c.outH, "x", c.outW, " localisation seed ", seed);
      REQUIRE(stftest::kink_distance(ref->theta, c.H, c.W, c.outH, c.outW) >= 1e-3);
      cudnn::SpatialTransformer twin(localisation<cudnn::View, cudnn::Linear>(c.C, c.H, c.W, seed + 1000, c.matrix),
                                     c.outH, c.outW);
      // 16-bit: TwinCheck's tolerances for one rounding, widened for theta's rounding through the grid
      const TwinTolerance tol = dt == DType::Float16    ? TwinTolerance{2e-2, 5e-2}
                                : dt == DType::BFloat16 ? TwinTolerance{6e-2, 1.5e-1}
                                                        : TwinTolerance::for_dtype(dt);
      expect_twin_matches(*ref, twin, x, dt, tol, dt == DType::Float32);
      base += 100;
    }
  }
}

TEST_CASE("cudnn.SpatialTransformer with an nn localisation network (excluded from conversion) and nn on CUDA input") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  const Tensor x = smooth_image(2, 2, 5, 6);
  nn::SpatialTransformer ref(localisation<nn::View, nn::Linear>(2, 5, 6, 81), 4, 4);
  cudnn::SpatialTransformer twin(localisation<nn::View, nn::Linear>(2, 5, 6, 82), 4, 4);
  expect_twin_matches(ref, twin, x, DType::Float32, TwinTolerance::for_dtype(DType::Float32));
  CHECK(twin.localisation()->namedParameters()[0].second.is_cpu());
  // the nn module handed a CUDA input: children bridged, the sampler on CPU copies, results on the GPU
  nn::SpatialTransformer plain(localisation<nn::View, nn::Linear>(2, 5, 6, 83), 4, 4);
  const Tensor xf = x.to(DType::Float32);
  const Tensor yc = plain.forward(xf).clone();
  const Tensor g = uniform(yc.sizes(), -1, 1);
  const Tensor gc = plain.backward(xf, g).clone();
  const Tensor yg = plain.forward(xf.to(gpu));
  CHECK(yg.is_cuda());
  CHECK(max_abs_diff(yg, yc) == 0);
  const Tensor gg = plain.backward(xf.to(gpu), g.to(gpu));
  CHECK(gg.is_cuda());
  CHECK(max_abs_diff(gg, gc) <= 1e-6);
}

TEST_CASE("cudnn.SpatialTransformer convert round trip, printing, steady state and errors") {
  const Tensor x = smooth_image(2, 2, 3, 3);
  expect_convert_roundtrip(
      std::make_shared<nn::SpatialTransformer>(localisation<nn::View, nn::Linear>(2, 3, 3, 90), 4, 5), x);
  expect_convert_roundtrip(
      std::make_shared<nn::SpatialTransformer>(localisation<nn::View, nn::Linear>(2, 3, 3, 91, true), 2, 3), x);
  auto net = std::make_shared<nn::SpatialTransformer>(localisation<nn::View, nn::Linear>(2, 3, 3, 92), 4, 4);
  nn::ModulePtr cu = nn::convert(net, cudnn::backend);
  CHECK(cu->str() ==
        "cudnn.SpatialTransformer(outH 4, outW 4) {\n"
        "  localisation: nn.Sequential {\n"
        "    [input -> (1) -> (2) -> output]\n"
        "    (1): cudnn.View(-1)\n"
        "    (2): cudnn.Linear(18 -> 6)\n"
        "  }\n"
        "}");
  CHECK(cu->config().dump() == net->config().dump());

  cudnn::SpatialTransformer twin(localisation<cudnn::View, cudnn::Linear>(2, 3, 3, 93), 4, 4);
  twin.to(gpu);
  expect_no_steady_state_allocations(twin, x.to(gpu, DType::Float32));
  CHECK_THROWS_WITH_AS(twin.forward(zeros({2, 2, 3, 3})),
                       doctest::Contains("cudnn.SpatialTransformer::updateOutput: expected input on a CUDA device"),
                       Error);
  CHECK_THROWS_WITH_AS(twin.forward(zeros({2, 2, 3}, DType::Float32, gpu)),
                       "cudnn.SpatialTransformer::updateOutput: expected 4D input [N x C x H x W] with C, H, W >= 1, "
                       "got [2 x 2 x 3]",
                       Error);
  // a wrong plane count, checked up front with nInputPlane (nn's check, through the nn base)
  cudnn::SpatialTransformer planes(localisation<cudnn::View, cudnn::Linear>(2, 3, 3, 94), 4, 4, 2);
  planes.to(gpu);
  CHECK_THROWS_WITH_AS(planes.forward(zeros({2, 3, 3, 3}, DType::Float32, gpu)),
                       "cudnn.SpatialTransformer::updateOutput: expected input [N x 2 x H x W] (nInputPlane 2), got "
                       "[2 x 3 x 3 x 3]",
                       Error);
  auto planesNn = std::make_shared<nn::SpatialTransformer>(localisation<nn::View, nn::Linear>(2, 3, 3, 94), 4, 4, 2);
  const nn::ModulePtr planesCu = nn::convert(planesNn, cudnn::backend);
  CHECK(dynamic_cast<nn::SpatialTransformer&>(*planesCu).nInputPlane == 2);
  CHECK(planesCu->config().dump() == R"({"outH":4,"outW":4,"nInputPlane":2})");
  const Tensor xg = x.to(gpu, DType::Float32);
  twin.forward(xg);
  CHECK_THROWS_WITH_AS(twin.backward(xg, zeros({2, 2, 4, 4})),
                       doctest::Contains("cudnn.SpatialTransformer::backward: expected gradOutput on cuda:0"), Error);
  CHECK_THROWS_WITH_AS(cudnn::spatial_tf(zeros({2, 2, 3, 3}), zeros({2, 2, 3}), 4, 4),
                       doctest::Contains("cudnn::spatial_tf: expected img on a CUDA device"), Error);
  CHECK_THROWS_WITH_AS(
      cudnn::spatial_tf(zeros({2, 2, 3, 3}, DType::Float32, gpu), zeros({2, 3, 2}, DType::Float32, gpu), 4, 4),
      "cudnn::spatial_tf: expected theta [N x 2 x 3] with N = 2 (img [2 x 2 x 3 x 3]), got [2 x 3 x 2]", Error);
  CHECK_THROWS_WITH_AS(
      cudnn::spatial_tf(zeros({2, 2, 3, 3}, DType::Float32, gpu), zeros({2, 2, 3}, DType::Float32, gpu), 0, 4),
      "cudnn::spatial_tf: expected outH and outW >= 1, got outH 0, outW 4", Error);
  CHECK_THROWS_WITH_AS(
      cudnn::spatial_tf_backward(zeros({2, 2, 3, 3}, DType::Float32, gpu), zeros({2, 2, 3}, DType::Float32, gpu),
                                 zeros({2, 3, 4, 4}, DType::Float32, gpu)),
      doctest::Contains("cudnn::spatial_tf_backward: expected gradOutput [N x C x outH x outW]"), Error);
}

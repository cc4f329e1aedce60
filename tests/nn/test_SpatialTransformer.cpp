// test_SpatialTransformer.cpp: the sampler nn::spatial_tf against PyTorch's affine_grid +
// grid_sample (align_corners=True) and against hand-computed cases, finite-difference checks of
// its image and theta gradients away from the kinks, NaN and empty batches; the module
// nn::SpatialTransformer with a small localisation network: gradients through the whole module
// (localisation parameters included), printing, model files and errors.
#include <doctest/doctest.h>

#include <unistd.h>
#include <cmath>
#include <filesystem>

#include "convert/ModelFile.h"
#include "nn/Linear.h"
#include "nn/Sequential.h"
#include "nn/SpatialAveragePooling.h"
#include "nn/SpatialTransformer.h"
#include "nn/View.h"
#include "nn/kernels/SpatialTransformer.h"
#include "tensor/Safetensors.h"
#include "tests/support/ErrorText.h"
#include "tests/support/GradCheck.h"
#include "tests/support/SpatialTfCases.h"

using namespace tensor;
using namespace testing;
using stftest::generic_theta;
using stftest::kink_distance;
using stftest::thetas;

namespace {

// Central differences of L = sum(spatial_tf(img, theta) .* R) against spatial_tf_backward, for
// every entry of img and theta; errors scaled by max(|analytic|, |numeric|, 1).
void expect_op_gradients_ok(const Tensor& img, const Tensor& theta, int64_t outH, int64_t outW, Generator& gen) {
  const Tensor R = uniform({img.size(0), img.size(1), outH, outW}, -1, 1, gen, DType::Float64);
  auto loss = [&](const Tensor& x, const Tensor& t) { return nn::spatial_tf(x, t, outH, outW).mul(R).sum().item(); };
  const nn::SpatialTfGrads g = nn::spatial_tf_backward(img, theta, R);
  const double eps = 1e-6;
  double worst = 0;
  for (int which = 0; which < 2; ++which) {
    Tensor x = img.clone(), t = theta.clone();
    Tensor& p = which == 0 ? x : t;
    const std::vector<double> analytic = (which == 0 ? g.gradImage : g.gradTheta).to_vector<double>();
    Tensor flat = p.view({-1});
    for (int64_t k = 0; k < flat.numel(); ++k) {
      const double v = flat.get({k});
      flat.set({k}, v + eps);
      const double lp = loss(x, t);
      flat.set({k}, v - eps);
      const double lm = loss(x, t);
      flat.set({k}, v);
      const double numeric = (lp - lm) / (2 * eps);
      const double err = std::abs(numeric - analytic[k]) / std::max({std::abs(numeric), std::abs(analytic[k]), 1.0});
      if (err > worst) worst = err;
    }
  }
  INFO("img ", shape_str(img.sizes()), " out ", outH, "x", outW, ": worst scaled error ", worst);
  CHECK(worst <= 1e-7);
}

// [N x C x H x W] -> [N x C*H*W]
std::shared_ptr<nn::View> flatten() {
  auto view = std::make_shared<nn::View>(-1);
  view->setNumInputDims(3);
  return view;
}

// A localisation network [N x C x H x W] -> [N x 6] (or [N x 2 x 3]) starting near the identity map.
nn::ModulePtr localisation(int64_t C, int64_t H, int64_t W, Generator& gen, bool matrix = false) {
  auto view = flatten();
  auto lin = std::make_shared<nn::Linear>(C * H * W, 6);
  lin->weight.copy_(uniform(lin->weight.sizes(), -0.05, 0.05, gen));
  lin->bias.copy_(from_vector<double>({1, 0, 0, 0, 1, 0}).add(uniform({6}, -0.1, 0.1, gen, DType::Float64)));
  auto seq = std::make_shared<nn::Sequential>(std::initializer_list<nn::ModulePtr>{view, lin});
  if (matrix) seq->add(std::make_shared<nn::View>(2, 3));
  return seq;
}

}  // namespace

TEST_CASE("spatial_tf matches PyTorch's affine_grid + grid_sample (bilinear, zeros, align_corners)") {
  const auto file = load_safetensors(std::string(CUDNN_NN_TEST_DATA) + "/nn/spatial_tf_reference.safetensors");
  int cases = 0;
  for (const auto& [key, theta] : file.tensors) {
    if (key.size() < 6 || key.compare(key.size() - 6, 6, ".theta") != 0) continue;
    const std::string name = key.substr(0, key.size() - 6);
    INFO(name);
    const Tensor& img = file.tensors.at(name + ".image");
    const Tensor& want = file.tensors.at(name + ".output");
    const Tensor y = nn::spatial_tf(img, theta, want.size(2), want.size(3));
    CHECK(max_abs_diff(y, want) <= 1e-12);
    const nn::SpatialTfGrads g = nn::spatial_tf_backward(img, theta, file.tensors.at(name + ".gradOutput"));
    CHECK(max_abs_diff(g.gradImage, file.tensors.at(name + ".gradImage")) <= 1e-12);
    CHECK(max_rel_error(g.gradTheta, file.tensors.at(name + ".gradTheta")) <= 1e-10);
    // float32: the same numbers, rounded
    const Tensor y32 = nn::spatial_tf(img.to(DType::Float32), theta.to(DType::Float32), want.size(2), want.size(3));
    CHECK(y32.dtype() == DType::Float32);
    CHECK(max_abs_diff(y32, want) <= 1e-5);
    ++cases;
  }
  CHECK(cases == 6);
}

TEST_CASE("spatial_tf by hand: identity, whole-pixel and half-pixel shifts, a point map, outside") {
  // 1 x 1 x 3 x 5 image, values 0..14; W - 1 = 4, so a shift of one pixel is gx + 0.5
  const Tensor img = arange(15, DType::Float64).view({1, 1, 3, 5});
  CHECK(max_abs_diff(nn::spatial_tf(img, thetas({{1, 0, 0, 0, 1, 0}}), 3, 5), img) == 0);
  // one pixel right: out[i][j] = img[i][j + 1], the last column reads outside (0)
  const Tensor right = nn::spatial_tf(img, thetas({{1, 0, 0.5, 0, 1, 0}}), 3, 5);
  CHECK(right.to_vector<double>() == std::vector<double>{1, 2, 3, 4, 0, 6, 7, 8, 9, 0, 11, 12, 13, 14, 0});
  // half a pixel right: the mean of two neighbours, and half of the last one at the border
  const Tensor half = nn::spatial_tf(img, thetas({{1, 0, 0.25, 0, 1, 0}}), 3, 5);
  CHECK(max_abs_diff(half,
                     from_vector<double>({0.5, 1.5, 2.5, 3.5, 2, 5.5, 6.5, 7.5, 8.5, 4.5, 10.5, 11.5, 12.5, 13.5, 7},
                                         {1, 1, 3, 5})) <= 1e-15);
  // theta 0 with translation (0, 0): every sample at the image centre, pixel (1, 2) = 7
  const Tensor centre = nn::spatial_tf(img, thetas({{0, 0, 0, 0, 0, 0}}), 2, 4);
  CHECK(centre.sizes() == Shape{1, 1, 2, 4});
  CHECK(centre.to_vector<double>() == std::vector<double>(8, 7.0));
  // the whole grid far outside: zeros; gradients zero too
  const Tensor far = thetas({{1, 0, 5, 0, 1, -7}});
  CHECK(nn::spatial_tf(img, far, 3, 3).to_vector<double>() == std::vector<double>(9, 0.0));
  const nn::SpatialTfGrads g = nn::spatial_tf_backward(img, far, ones({1, 1, 3, 3}, DType::Float64));
  CHECK(g.gradImage.to_vector<double>() == std::vector<double>(15, 0.0));
  CHECK(g.gradTheta.to_vector<double>() == std::vector<double>(6, 0.0));
  // a size-1 output dim samples the centre line (PyTorch's convention): row 1 of the image
  const Tensor row = nn::spatial_tf(img, thetas({{1, 0, 0, 0, 1, 0}}), 1, 5);
  CHECK(row.to_vector<double>() == std::vector<double>{5, 6, 7, 8, 9});
}

TEST_CASE("spatial_tf gradient checks for image and theta (samples away from the kinks)") {
  Generator gen(9090);
  INFO("seed 9090");
  struct Cfg {
    int64_t N, C, H, W, outH, outW;
  };
  const Cfg cfgs[] = {
      {1, 1, 5, 6, 5, 6}, {2, 3, 4, 5, 6, 3}, {3, 2, 6, 4, 3, 7}, {2, 1, 3, 3, 4, 4}, {2, 2, 1, 5, 3, 1}};
  for (const Cfg& c : cfgs) {
    const Tensor img = uniform({c.N, c.C, c.H, c.W}, -1, 1, gen, DType::Float64);
    expect_op_gradients_ok(img, generic_theta(gen, c.N, c.H, c.W, c.outH, c.outW), c.outH, c.outW, gen);
    // translated so that part of the grid falls outside the image
    Tensor shifted = generic_theta(gen, c.N, c.H, c.W, c.outH, c.outW, 0.9);
    expect_op_gradients_ok(img, shifted, c.outH, c.outW, gen);
  }
}

TEST_CASE("spatial_tf: NaN in the image reaches exactly the samples whose cell holds it; NaN theta, empty batch") {
  Generator gen(4711);
  const int64_t N = 2, C = 2, H = 5, W = 6, outH = 6, outW = 5;
  const Tensor theta = generic_theta(gen, N, H, W, outH, outW);
  Tensor img = uniform({N, C, H, W}, -1, 1, gen, DType::Float64);
  // which outputs read pixel (0, 1, 2, 3): those that change with it (no weight is 0 here)
  img.set({0, 1, 2, 3}, 0.0);
  const Tensor y0 = nn::spatial_tf(img, theta, outH, outW);
  img.set({0, 1, 2, 3}, 1.0);
  const Tensor touched = nn::spatial_tf(img, theta, outH, outW).ne(y0);
  img.set({0, 1, 2, 3}, std::nan(""));
  const Tensor y = nn::spatial_tf(img, theta, outH, outW);
  const Tensor nan_mask = y.ne(y);
  CHECK(nan_mask.sum().item() > 0);
  CHECK(max_abs_diff(nan_mask.to(DType::Float64), touched.to(DType::Float64)) == 0);
  const std::vector<double> yv = y.to_vector<double>(), y0v = y0.to_vector<double>();
  for (size_t i = 0; i < yv.size(); ++i) {
    if (!std::isnan(yv[i])) CHECK(yv[i] == y0v[i]);
  }
  const Tensor gy = uniform(y.sizes(), -1, 1, gen, DType::Float64);
  const nn::SpatialTfGrads g = nn::spatial_tf_backward(img, theta, gy);
  img.set({0, 1, 2, 3}, 0.0);
  const nn::SpatialTfGrads g0 = nn::spatial_tf_backward(img, theta, gy);
  CHECK(max_abs_diff(g.gradImage, g0.gradImage) == 0);  // the image gradient never reads the image
  CHECK(g.gradTheta[0].ne(g.gradTheta[0]).sum().item() == 6);
  CHECK(max_abs_diff(g.gradTheta[1], g0.gradTheta[1]) == 0);

  // NaN in theta: that sample's output, image gradient and theta gradient are all NaN
  Tensor bad = theta.clone();
  bad.set({1, 0, 2}, std::nan(""));
  auto all_nan = [](const Tensor& t) { return t.ne(t).sum().item() == static_cast<double>(t.numel()); };
  const Tensor yb = nn::spatial_tf(img, bad, outH, outW);
  CHECK(all_nan(yb[1]));
  CHECK(max_abs_diff(yb[0], y0[0]) == 0);
  const nn::SpatialTfGrads gb = nn::spatial_tf_backward(img, bad, gy);
  CHECK(all_nan(gb.gradTheta[1]));
  CHECK(all_nan(gb.gradImage[1]));
  CHECK(max_abs_diff(gb.gradImage[0], g0.gradImage[0]) == 0);
  CHECK(max_abs_diff(gb.gradTheta[0], g0.gradTheta[0]) == 0);
  // Inf in theta: the same; a huge finite translation reads zeros
  bad.set({1, 0, 2}, INFINITY);
  CHECK(all_nan(nn::spatial_tf(img, bad, outH, outW)[1]));
  CHECK(all_nan(nn::spatial_tf_backward(img, bad, gy).gradImage[1]));
  bad.set({1, 0, 2}, 1e300);
  CHECK(nn::spatial_tf(img, bad, outH, outW)[1].abs().sum().item() == 0);
  CHECK(nn::spatial_tf_backward(img, bad, gy).gradImage[1].abs().sum().item() == 0);

  // an empty batch: empty outputs and gradients of the right shapes
  const Tensor e = nn::spatial_tf(zeros({0, 3, 4, 4}, DType::Float32), zeros({0, 2, 3}, DType::Float32), 2, 5);
  CHECK(e.sizes() == Shape{0, 3, 2, 5});
  const nn::SpatialTfGrads ge = nn::spatial_tf_backward(zeros({0, 3, 4, 4}, DType::Float32),
                                                        zeros({0, 2, 3}, DType::Float32), zeros({0, 3, 2, 5}));
  CHECK(ge.gradImage.sizes() == Shape{0, 3, 4, 4});
  CHECK(ge.gradTheta.sizes() == Shape{0, 2, 3});
}

TEST_CASE("spatial_tf errors name the arguments and their shapes") {
  const Tensor img = zeros({2, 3, 4, 5}), theta = zeros({2, 2, 3});
  CHECK_THROWS_WITH_AS(nn::spatial_tf(zeros({3, 4, 5}), theta, 4, 4),
                       "nn::spatial_tf: expected img [N x C x H x W] with C, H, W >= 1, got [3 x 4 x 5]", Error);
  CHECK_THROWS_WITH_AS(nn::spatial_tf(zeros({2, 3, 0, 5}), theta, 4, 4),
                       "nn::spatial_tf: expected img [N x C x H x W] with C, H, W >= 1, got [2 x 3 x 0 x 5]", Error);
  CHECK_THROWS_WITH_AS(nn::spatial_tf(img, zeros({2, 6}), 4, 4),
                       "nn::spatial_tf: expected theta [N x 2 x 3] with N = 2 (img [2 x 3 x 4 x 5]), got [2 x 6]",
                       Error);
  CHECK_THROWS_WITH_AS(nn::spatial_tf(img, zeros({3, 2, 3}), 4, 4),
                       "nn::spatial_tf: expected theta [N x 2 x 3] with N = 2 (img [2 x 3 x 4 x 5]), got [3 x 2 x 3]",
                       Error);
  CHECK_THROWS_WITH_AS(nn::spatial_tf(img, theta, 0, 4),
                       "nn::spatial_tf: expected outH and outW >= 1, got outH 0, outW 4", Error);
  CHECK_THROWS_WITH_AS(nn::spatial_tf(img, theta, 3, -1),
                       "nn::spatial_tf: expected outH and outW >= 1, got outH 3, outW -1", Error);
  CHECK_THROWS_WITH_AS(nn::spatial_tf(img, zeros({2, 2, 3}, DType::Float64), 4, 4),
                       "nn::spatial_tf: expected img and theta of one dtype on one device, got float32 [2 x 3 x 4 x 5] "
                       "on cpu and float64 [2 x 2 x 3] on cpu",
                       Error);
  CHECK_THROWS_WITH_AS(nn::spatial_tf(img.to(DType::Float16), theta.to(DType::Float16), 4, 4),
                       "nn::spatial_tf: expected float32 or float64 img, got float16 [2 x 3 x 4 x 5] on cpu", Error);
  CHECK_THROWS_WITH_AS(nn::spatial_tf_backward(img, theta, zeros({2, 2, 4, 4})),
                       "nn::spatial_tf_backward: expected gradOutput [N x C x outH x outW] with N = 2, C = 3 (img "
                       "[2 x 3 x 4 x 5]) and outH, outW >= 1, got [2 x 2 x 4 x 4]",
                       Error);
  CHECK_THROWS_WITH_AS(nn::spatial_tf_backward(img, theta, zeros({2, 3, 4, 4}, DType::Float64)),
                       "nn::spatial_tf_backward: expected gradOutput of img's dtype and device, got float64 "
                       "[2 x 3 x 4 x 4] on cpu and img float32 [2 x 3 x 4 x 5] on cpu",
                       Error);
}

TEST_CASE("SpatialTransformer samples its input on the localisation network's theta") {
  Generator gen(31);
  // a localisation network that ignores its input: a bias-only Linear on a zero-weight map
  auto lin = std::make_shared<nn::Linear>(2 * 3 * 4, 6);
  lin->weight.zero_();
  lin->bias.copy_(from_vector<float>({0.9f, -0.2f, 0.1f, 0.3f, 1.1f, -0.05f}));
  auto view = flatten();
  nn::SpatialTransformer st(std::make_shared<nn::Sequential>(std::initializer_list<nn::ModulePtr>{view, lin}), 5, 7);
  const Tensor x = uniform({3, 2, 3, 4}, -1, 1, gen);
  const Tensor y = st.forward(x);
  CHECK(y.sizes() == Shape{3, 2, 5, 7});
  const Tensor theta =
      from_vector<float>({0.9f, -0.2f, 0.1f, 0.3f, 1.1f, -0.05f}, {1, 2, 3}).expand({3, 2, 3}).contiguous();
  CHECK(max_abs_diff(y, nn::spatial_tf(x, theta, 5, 7)) == 0);
  CHECK(max_abs_diff(st.theta, theta) == 0);
  // gradInput = the sampler's image gradient (the localisation network ignores the input here)
  const Tensor g = uniform(y.sizes(), -1, 1, gen);
  const Tensor gi = st.backward(x, g).clone();
  const nn::SpatialTfGrads want = nn::spatial_tf_backward(x, theta, g);
  CHECK(max_abs_diff(gi, want.gradImage) <= 1e-6);
  CHECK(max_abs_diff(st.gradTheta, want.gradTheta) == 0);
  // the bias gets theta's gradient summed over the batch
  CHECK(max_abs_diff(lin->gradBias, want.gradTheta.view({3, 6}).sum(0)) <= 1e-5);
}

TEST_CASE("SpatialTransformer without a localisation network: theta is an input (thetaInput)") {
  Generator gen(32);
  nn::SpatialTransformer st(5, 7);
  CHECK_FALSE(st.hasLocalisation());
  CHECK(st.modules.empty());
  CHECK(st.str() == "nn.SpatialTransformer(outH 5, outW 7, theta input)");
  const Tensor x = uniform({3, 2, 3, 4}, -1, 1, gen);
  CHECK(has(error_of([&] { st.forward(x); }), "expected thetaInput set before forward"));
  const Tensor theta = generic_theta(gen, 3, 3, 4, 5, 7).to(DType::Float32);
  for (const Shape& shape : {Shape{3, 2, 3}, Shape{3, 6}}) {
    st.thetaInput = theta.reshape(shape);
    const Tensor y = st.forward(x).clone();
    CHECK(max_abs_diff(y, nn::spatial_tf(x, theta, 5, 7)) == 0);
    const Tensor g = uniform(y.sizes(), -1, 1, gen);
    const Tensor gi = st.backward(x, g).clone();
    const nn::SpatialTfGrads want = nn::spatial_tf_backward(x, theta, g);
    CHECK(max_abs_diff(gi, want.gradImage) == 0);  // the image's gradient alone
    CHECK(max_abs_diff(st.gradTheta, want.gradTheta) == 0);
    CHECK(st.parameters().empty());
  }
  st.thetaInput = zeros({2, 6});
  CHECK(has(error_of([&] { st.forward(x); }), "[2 x 6]"));
  // model files keep the mode: no children
  const nn::ModulePtr back = nn::SpatialTransformer::fromConfig(st.config(), {});
  CHECK_FALSE(std::static_pointer_cast<nn::SpatialTransformer>(back)->hasLocalisation());
}

TEST_CASE("SpatialTransformer gradients through the sampler and the localisation network") {
  Generator gen(2025);
  INFO("seed 2025");
  struct Cfg {
    int64_t N, C, H, W, outH, outW;
    bool matrix;
  };
  const Cfg cfgs[] = {{2, 1, 4, 5, 4, 5, false}, {3, 2, 5, 4, 6, 3, true}, {1, 3, 3, 3, 4, 4, false}};
  for (const Cfg& c : cfgs) {
    INFO("input ", c.N, "x", c.C, "x", c.H, "x", c.W, " out ", c.outH, "x", c.outW,
         c.matrix ? ", theta [N x 2 x 3]" : "");
    nn::SpatialTransformer st(localisation(c.C, c.H, c.W, gen, c.matrix), c.outH, c.outW);
    st.to(DType::Float64);
    const Tensor x = uniform({c.N, c.C, c.H, c.W}, -1, 1, gen, DType::Float64);
    st.forward(x);
    REQUIRE(kink_distance(st.theta, c.H, c.W, c.outH, c.outW) > 1e-4);  // this seed's samples avoid the kinks
    expect_gradients_ok(st, x);
    expect_accumulation_ok(st, x);
    // updateGradInput then accGradParameters gives what backward gives
    const Tensor g = uniform({c.N, c.C, c.outH, c.outW}, -1, 1, gen, DType::Float64);
    st.zeroGradParameters();
    st.forward(x);
    const Tensor gi = st.backward(x, g).clone();
    const auto grads = st.namedGradParameters();
    std::vector<Tensor> want;
    for (const auto& [_, t] : grads) want.push_back(t.clone());
    st.zeroGradParameters();
    st.forward(x);
    CHECK(max_abs_diff(st.updateGradInput(x, g), gi) == 0);
    st.accGradParameters(x, g, 1.0);
    CHECK(max_abs_diff(st.gradInput, gi) == 0);  // accGradParameters leaves gradInput alone
    const auto after = st.namedGradParameters();
    for (size_t i = 0; i < after.size(); ++i) CHECK(max_abs_diff(after[i].second, want[i]) == 0);
  }
}

TEST_CASE("SpatialTransformer: empty batch, state round trip, printing, model files") {
  Generator gen(5);
  auto pooled = [] {  // View(3), not View(-1): a -1 cannot be inferred from 0 elements
    auto view = std::make_shared<nn::View>(3);
    view->setNumInputDims(3);
    return std::make_shared<nn::Sequential>(std::initializer_list<nn::ModulePtr>{
        std::make_shared<nn::SpatialAveragePooling>(4, 4), view, std::make_shared<nn::Linear>(3, 6)});
  };
  nn::SpatialTransformer e(pooled(), 3, 2);
  const Tensor y = e.forward(zeros({0, 3, 4, 4}));
  CHECK(y.sizes() == Shape{0, 3, 3, 2});
  CHECK(e.backward(zeros({0, 3, 4, 4}), zeros({0, 3, 3, 2})).sizes() == Shape{0, 3, 4, 4});
  for (const auto& [name, t] : e.namedGradParameters()) CHECK(t.abs().sum().item() == 0);

  nn::SpatialTransformer a(localisation(2, 3, 3, gen), 4, 4), b(localisation(2, 3, 3, gen), 4, 4);
  expect_state_roundtrip_ok(a, b, uniform({2, 2, 3, 3}, -1, 1, gen));
  expect_prints_type(a);
  a.evaluate();
  CHECK_FALSE(a.localisation()->isTraining());
  a.train();
  CHECK(a.str() ==
        "nn.SpatialTransformer(outH 4, outW 4) {\n"
        "  localisation: nn.Sequential {\n"
        "    [input -> (1) -> (2) -> output]\n"
        "    (1): nn.View(-1)\n"
        "    (2): nn.Linear(18 -> 6)\n"
        "  }\n"
        "}");
  CHECK(a.config().dump() == R"({"outH":4,"outW":4})");
  CHECK(a.namedParameters()[0].first == "0.1.weight");

  // model files: structure, options and weights come back, with the same results
  const std::string path =
      (std::filesystem::temp_directory_path() / ("cudnn_nn_test_SpatialTransformer_" + std::to_string(::getpid())))
          .string();
  nn::SpatialTransformer c(localisation(2, 3, 3, gen, true), 5, 3);
  c.to(DType::Float64);
  nn::save_model(c, path);
  const nn::ModulePtr back = nn::load_model(path);
  std::filesystem::remove(path + ".json");
  std::filesystem::remove(path + ".safetensors");
  REQUIRE(back->type_name() == "nn.SpatialTransformer");
  CHECK(back->str() == c.str());
  const auto& st = dynamic_cast<nn::SpatialTransformer&>(*back);
  CHECK(st.outH == 5);
  CHECK(st.outW == 3);
  CHECK(st.nInputPlane == 0);
  const Tensor x = uniform({2, 2, 3, 3}, -1, 1, gen, DType::Float64);
  CHECK(max_abs_diff(back->forward(x), c.forward(x)) == 0);
  const Tensor g = uniform({2, 2, 5, 3}, -1, 1, gen, DType::Float64);
  CHECK(max_abs_diff(back->backward(x, g), c.backward(x, g)) == 0);

  // nInputPlane: printed, in the config and the model file when set
  nn::SpatialTransformer p(localisation(2, 3, 3, gen), 4, 4, 2);
  CHECK(p.str().rfind("nn.SpatialTransformer(nInputPlane 2, outH 4, outW 4) {\n", 0) == 0);
  CHECK(p.config().dump() == R"({"outH":4,"outW":4,"nInputPlane":2})");
  nn::save_model(p, path);
  const nn::ModulePtr backP = nn::load_model(path);
  std::filesystem::remove(path + ".json");
  std::filesystem::remove(path + ".safetensors");
  CHECK(dynamic_cast<nn::SpatialTransformer&>(*backP).nInputPlane == 2);
  CHECK(backP->str() == p.str());
  CHECK_THROWS_WITH_AS(backP->forward(zeros({2, 3, 3, 3})), doctest::Contains("(nInputPlane 2), got [2 x 3 x 3 x 3]"),
                       Error);
}

TEST_CASE("SpatialTransformer errors") {
  Generator gen(8);
  CHECK_THROWS_WITH_AS(nn::SpatialTransformer(nullptr, 4, 4),
                       "nn.SpatialTransformer: expected a localisation module, got nullptr", Error);
  CHECK_THROWS_WITH_AS(nn::SpatialTransformer(localisation(1, 2, 2, gen), 0, 4),
                       "nn.SpatialTransformer: expected outH and outW >= 1 with outH * outW <= 16777216 "
                       "(SpatialTransformer::kMaxOutputPoints), got outH 0, outW 4", Error);
  CHECK_THROWS_WITH_AS(nn::SpatialTransformer(localisation(1, 2, 2, gen), 4, -2),
                       "nn.SpatialTransformer: expected outH and outW >= 1 with outH * outW <= 16777216 "
                       "(SpatialTransformer::kMaxOutputPoints), got outH 4, outW -2", Error);
  nn::SpatialTransformer st(localisation(2, 3, 3, gen), 4, 4);
  CHECK_THROWS_WITH_AS(st.forward(zeros({2, 3, 3})),
                       "nn.SpatialTransformer::updateOutput: expected 4D input [N x C x H x W] with C, H, W >= 1, got "
                       "[2 x 3 x 3]",
                       Error);
  CHECK_THROWS_WITH_AS(st.forward(zeros({2, 2, 3, 3, 1})),
                       "nn.SpatialTransformer::updateOutput: expected 4D input [N x C x H x W] with C, H, W >= 1, got "
                       "[2 x 2 x 3 x 3 x 1]",
                       Error);
  CHECK_THROWS_WITH_AS(
      st.backward(zeros({2, 2, 3, 3}), zeros({2, 2, 4, 4})),
      "nn.SpatialTransformer::backward: expected a forward on this input first (theta undefined, input "
      "float32 [2 x 2 x 3 x 3] on cpu)",
      Error);
  // the localisation network's errors carry its position
  CHECK_THROWS_WITH_AS(st.forward(zeros({2, 1, 3, 3})), doctest::Contains("In 1 module of nn.SpatialTransformer: "),
                       Error);
  // with nInputPlane, a wrong plane count is the transformer's own error, before the localisation
  // network sees the input; in backward too
  CHECK_THROWS_WITH_AS(nn::SpatialTransformer(localisation(2, 3, 3, gen), 4, 4, -1),
                       "nn.SpatialTransformer: expected nInputPlane >= 0 (0: any), got -1", Error);
  nn::SpatialTransformer planes(localisation(2, 3, 3, gen), 4, 4, 2);
  for (const Shape& bad : {Shape{2, 1, 3, 3}, Shape{2, 3, 3, 3}, Shape{0, 5, 3, 3}}) {
    CHECK_THROWS_WITH_AS(planes.forward(zeros(bad)),
                         ("nn.SpatialTransformer::updateOutput: expected input [N x 2 x H x W] (nInputPlane 2), got " +
                          shape_str(bad))
                             .c_str(),
                         Error);
  }
  const Tensor xp = uniform({2, 2, 3, 3}, -1, 1, gen);
  planes.forward(xp);
  CHECK_THROWS_WITH_AS(planes.backward(zeros({2, 3, 3, 3}), zeros({2, 3, 4, 4})),
                       "nn.SpatialTransformer::backward: expected input [N x 2 x H x W] (nInputPlane 2), got "
                       "[2 x 3 x 3 x 3]",
                       Error);
  CHECK(planes.localisation()->output.size(0) == 2);  // the last good forward's, untouched
  // theta of the wrong shape
  nn::SpatialTransformer five(std::make_shared<nn::Sequential>(
                                  std::initializer_list<nn::ModulePtr>{flatten(), std::make_shared<nn::Linear>(18, 5)}),
                              4, 4);
  CHECK_THROWS_WITH_AS(five.forward(zeros({2, 2, 3, 3})),
                       "nn.SpatialTransformer::updateOutput: expected the localisation network to output theta of "
                       "[2 x 6] or [2 x 2 x 3] for input [2 x 2 x 3 x 3], got [2 x 5]",
                       Error);
  nn::SpatialTransformer flat(flatten(), 4, 4);  // [N x 18]
  CHECK_THROWS_WITH_AS(flat.forward(zeros({2, 2, 3, 3})),
                       "nn.SpatialTransformer::updateOutput: expected the localisation network to output theta of "
                       "[2 x 6] or [2 x 2 x 3] for input [2 x 2 x 3 x 3], got [2 x 18]",
                       Error);
  const Tensor x = uniform({2, 2, 3, 3}, -1, 1, gen);
  st.forward(x);
  CHECK_THROWS_WITH_AS(st.backward(x, zeros({2, 2, 3, 4})),
                       "nn.SpatialTransformer::backward: expected gradOutput of the output's shape [2 x 2 x 4 x 4], "
                       "got [2 x 2 x 3 x 4]",
                       Error);
  CHECK_THROWS_WITH_AS(st.backward(x, zeros({2, 2, 4, 4}, DType::Float64)),
                       "nn.SpatialTransformer::backward: expected gradOutput of the input's dtype and device (float32 "
                       "[2 x 2 x 3 x 3] on cpu), got float64 [2 x 2 x 4 x 4] on cpu",
                       Error);
  st.add(std::make_shared<nn::View>(-1));
  CHECK_THROWS_WITH_AS(st.forward(x),
                       "nn.SpatialTransformer::updateOutput: expected one module (the localisation network), got 2 "
                       "modules",
                       Error);
}

TEST_CASE("SpatialTransformer: the wrong plane count names the transformer's input; localisation() without one") {
  Generator gen(45);
  nn::SpatialTransformer st(localisation(2, 3, 3, gen), 4, 4);  // nInputPlane 0: any
  // before any forward: the transformer's method and input, then the network's own error
  const std::string first = error_of([&] { st.forward(zeros({2, 1, 3, 3})); });
  CHECK(first.rfind("nn.SpatialTransformer::updateOutput: expected input the localisation network takes "
                    "(nInputPlane 0 checks no plane count up front), got [2 x 1 x 3 x 3]: In 1 module of "
                    "nn.SpatialTransformer: In 2 module of nn.Sequential: nn.Linear::updateOutput: ",
                    0) == 0);
  // after a forward: the planes that worked
  const Tensor x = uniform({2, 2, 3, 3}, -1, 1, gen);
  st.forward(x);
  CHECK_THROWS_WITH_AS(st.forward(zeros({2, 3, 3, 3})),
                       doctest::Contains("nn.SpatialTransformer::updateOutput: expected input [N x 2 x H x W] (the "
                                         "planes of the last input the localisation network took; nInputPlane 0 "
                                         "checks none), got [2 x 3 x 3 x 3]: In 1 module of nn.SpatialTransformer: "),
                       Error);
  // backward with another plane count: named by the transformer's backward
  st.forward(x);
  CHECK_THROWS_WITH_AS(st.backward(zeros({2, 3, 3, 3}), zeros({2, 3, 4, 4})),
                       doctest::Contains("nn.SpatialTransformer::backward: expected input [N x 2 x H x W] (the planes "
                                         "of the last input the localisation network took; nInputPlane 0 checks "
                                         "none), got [2 x 3 x 3 x 3]: In 1 module of nn.SpatialTransformer: "),
                       Error);
  // the same planes, other sizes: the generic form
  CHECK_THROWS_WITH_AS(st.forward(zeros({2, 2, 4, 4})),
                       doctest::Contains("nn.SpatialTransformer::updateOutput: expected input the localisation "
                                         "network takes (nInputPlane 0 checks no plane count up front), got "
                                         "[2 x 2 x 4 x 4]: In 1 module of nn.SpatialTransformer: "),
                       Error);
  // localisation() of a transformer without one is the module's error, not a vector's
  nn::SpatialTransformer bare(4, 4);
  CHECK_THROWS_WITH_AS(bare.localisation(),
                       "nn.SpatialTransformer::localisation: expected a localisation network, got none (this "
                       "transformer takes theta from thetaInput)",
                       Error);
  nn::SpatialTransformer emptied(localisation(2, 3, 3, gen), 4, 4);
  emptied.modules.clear();
  CHECK_THROWS_WITH_AS(emptied.localisation(),
                       "nn.SpatialTransformer::localisation: expected the localisation network in modules[0], got no "
                       "module",
                       Error);
  CHECK(st.localisation() == st.modules[0]);
}

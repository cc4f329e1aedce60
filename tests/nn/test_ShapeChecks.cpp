// test_ShapeChecks.cpp: what every module checks before it computes. backward() with a
// gradOutput of the right element count but another shape is an error naming the module
// (never a reshape that pairs the wrong elements); modules whose sizes overflow, or whose
// geometry makes an output size overflow, are errors rather than wrapped sizes; containers
// with a nullptr put straight into `modules` say which position; non-finite configuration
// values are refused at construction.
#include <doctest/doctest.h>

#include "tests/support/ErrorText.h"

#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "convert/Convert.h"
#include "convert/ModelFile.h"
#include "nn/BatchNormalization.h"
#include "nn/Concat.h"
#include "nn/Dropout.h"
#include "nn/ELU.h"
#include "nn/Identity.h"
#include "nn/Linear.h"
#include "nn/LogSoftMax.h"
#include "nn/ReLU.h"
#include "nn/Reshape.h"
#include "nn/Residual.h"
#include "nn/Sequential.h"
#include "nn/Sigmoid.h"
#include "nn/SpatialAveragePooling.h"
#include "nn/SpatialBatchNormalization.h"
#include "nn/SpatialConvolution.h"
#include "nn/SpatialCrossMapLRN.h"
#include "nn/SpatialFullConvolution.h"
#include "nn/SpatialMaxPooling.h"
#include "nn/SpatialSoftMax.h"
#include "nn/SpatialTransformer.h"
#include "nn/Tanh.h"
#include "nn/TemporalConvolution.h"
#include "nn/View.h"
#include "nn/VolumetricConvolution.h"
#include "nn/VolumetricMaxPooling.h"

using namespace tensor;
using testing::error_of;
using testing::has;

namespace {

// gradOutput with output's elements in another shape: the last two sizes swapped, or for a
// 1-d output one more dimension.
Shape other_shape(const Shape& s) {
  Shape o = s;
  if (o.size() >= 2 && o[o.size() - 1] != o[o.size() - 2]) {
    std::swap(o[o.size() - 1], o[o.size() - 2]);
  } else {
    o.insert(o.begin(), 1);
  }
  return o;
}
}  // namespace

TEST_CASE("backward checks gradOutput's shape (not its element count) in every module, naming it") {
  struct Case {
    nn::ModulePtr m;
    Shape input;
  };
  const std::vector<Case> cases = {
      {std::make_shared<nn::Linear>(4, 3), {2, 4}},
      {std::make_shared<nn::Linear>(4, 3), {4}},
      {std::make_shared<nn::Identity>(), {2, 3}},
      {std::make_shared<nn::ReLU>(), {2, 3}},
      {std::make_shared<nn::Sigmoid>(), {2, 3}},
      {std::make_shared<nn::Tanh>(), {2, 3}},
      {std::make_shared<nn::ELU>(), {2, 3}},
      {std::make_shared<nn::Dropout>(0.5), {2, 3}},
      {std::make_shared<nn::LogSoftMax>(), {2, 3}},
      {std::make_shared<nn::SpatialSoftMax>(), {2, 3, 2, 5}},
      {std::make_shared<nn::View>(6), {2, 2, 3}},
      {std::make_shared<nn::Reshape>(3, 2), {2, 6}},
      {std::make_shared<nn::BatchNormalization>(3), {4, 3}},
      {std::make_shared<nn::SpatialBatchNormalization>(2), {2, 2, 3, 4}},
      {std::make_shared<nn::SpatialConvolution>(2, 3, 3, 3), {1, 2, 5, 6}},
      {std::make_shared<nn::SpatialFullConvolution>(2, 3, 3, 3), {1, 2, 3, 4}},
      {std::make_shared<nn::VolumetricConvolution>(1, 2, 2, 2, 2), {1, 1, 3, 4, 5}},
      {std::make_shared<nn::TemporalConvolution>(3, 4, 2), {2, 5, 3}},
      {std::make_shared<nn::SpatialMaxPooling>(2, 2), {1, 2, 4, 6}},
      {std::make_shared<nn::SpatialAveragePooling>(2, 2, 2, 2), {1, 2, 4, 6}},
      {std::make_shared<nn::VolumetricMaxPooling>(1, 2, 2), {1, 1, 2, 4, 6}},
      {std::make_shared<nn::SpatialCrossMapLRN>(3), {1, 4, 2, 3}},
      {std::make_shared<nn::Sequential>(std::initializer_list<nn::ModulePtr>{std::make_shared<nn::Linear>(4, 3)}),
       {2, 4}},
      {std::make_shared<nn::Concat>(1, std::initializer_list<nn::ModulePtr>{std::make_shared<nn::Linear>(4, 3),
                                                                             std::make_shared<nn::Linear>(4, 2)}),
       {2, 4}},
      {std::make_shared<nn::Residual>(std::make_shared<nn::Identity>()), {2, 3}},
  };
  Generator gen(15);
  for (const auto& c : cases) {
    INFO(c.m->type_name() << " on " << shape_str(c.input));
    const Tensor x = uniform(c.input, -1, 1, gen);
    const Tensor y = c.m->forward(x).clone();
    const Tensor bad = uniform(other_shape(y.sizes()), -1, 1, gen);
    REQUIRE(bad.numel() == y.numel());
    const std::string e = error_of([&] { c.m->backward(x, bad); });
    CHECK(has(e, c.m->type_name()));
    CHECK(has(e, shape_str(bad.sizes())));
    // and a gradOutput that could broadcast into the output is refused too
    if (y.dim() >= 2 && y.size(0) > 1) {
      Shape row = y.sizes();
      row[0] = 1;
      CHECK(has(error_of([&] { c.m->backward(x, uniform(row, -1, 1, gen)); }), c.m->type_name()));
    }
    CHECK_NOTHROW(c.m->backward(x, uniform(y.sizes(), -1, 1, gen)));
  }
}

TEST_CASE("nn.Linear: a [3 x 2] gradOutput for a [2 x 3] output is refused, in both passes") {
  nn::Linear m(4, 3);
  const Tensor x = zeros({2, 4});
  m.forward(x);
  CHECK(error_of([&] { m.updateGradInput(x, zeros({3, 2})); }) ==
        "nn.Linear::updateGradInput: expected gradOutput of the output's shape [2 x 3] (for input [2 x 4]), got [3 x 2]");
  CHECK(error_of([&] { m.accGradParameters(x, zeros({3, 2})); }) ==
        "nn.Linear::accGradParameters: expected gradOutput of the output's shape [2 x 3] (for input [2 x 4]), got "
        "[3 x 2]");
  CHECK(has(error_of([&] { m.backward(zeros({4}), zeros({1, 3})); }), "expected gradOutput of the output's shape [3]"));
  CHECK(has(error_of([&] { m.backward(x, zeros({2, 3}, DType::Float64)); }), "gradOutput"));
}

TEST_CASE("modules whose sizes overflow are refused, naming the shape") {
  const int64_t k31 = int64_t{1} << 31, k20 = int64_t{1} << 20;
  CHECK(has(error_of([&] { (void)nn::Linear(k31, k31); }), "[2147483648 x 2147483648] for float32"));
  CHECK(has(error_of([&] { (void)nn::SpatialConvolution(k20, k20, k20, k20); }), "overflows int64"));
  CHECK(has(error_of([&] { (void)nn::BatchNormalization(int64_t{1} << 62); }), "overflows int64"));
  // output sizes from huge strides, dilations or padding are computed without wrapping
  nn::SpatialConvolution conv(1, 1, 3, 1, int64_t{1} << 62, 1);
  conv.dilationW = int64_t{1} << 62;
  CHECK(has(error_of([&] { conv.forward(zeros({1, 1, 4, 4})); }), "overflows int64"));
  nn::SpatialFullConvolution full(1, 1, 3, 3, int64_t{1} << 62, int64_t{1} << 62);
  CHECK(has(error_of([&] { full.forward(zeros({1, 1, 4, 4})); }), "overflows int64"));
  nn::SpatialConvolution padded(1, 1, 1, 1, 1, 1, int64_t{1} << 62, 0);
  CHECK(has(error_of([&] { padded.forward(zeros({1, 1, 4, 4})); }), "overflows int64"));
  nn::SpatialMaxPooling pool(int64_t{1} << 62, 1, std::numeric_limits<int64_t>::max(), 1, int64_t{1} << 61, 0);
  // a window wider than anything, padded by 2^61 on each side: one window per row, no wrap
  const Tensor row = arange(16).view({1, 1, 4, 4});
  CHECK(pool.forward(row).to_vector<float>() == std::vector<float>{3, 7, 11, 15});
  nn::SpatialAveragePooling avg(int64_t{1} << 62, 1, std::numeric_limits<int64_t>::max(), 1, int64_t{1} << 61, 0);
  const Tensor mean = avg.forward(row);  // the divisor counts the padding: 2^62 + 4, no overflow
  CHECK(mean.sizes() == Shape{1, 1, 4, 1});
  CHECK(mean.get({0, 0, 3, 0}) == doctest::Approx(54.0 / 0x1p62).epsilon(1e-6));
  CHECK_NOTHROW(avg.backward(row, ones({1, 1, 4, 1})));
}

TEST_CASE("a nullptr put straight into a container's modules is named by position") {
  auto seq = std::make_shared<nn::Sequential>();
  seq->add(std::make_shared<nn::ReLU>());
  seq->modules.push_back(nullptr);
  const std::string null2 = "module 2 of 2 is nullptr";
  CHECK(has(error_of([&] { (void)seq->str(); }), "nn.Sequential::str: " + null2));
  CHECK(has(error_of([&] { seq->forward(zeros({2})); }), null2));
  CHECK(has(error_of([&] { (void)seq->parameters(); }), null2));
  CHECK(has(error_of([&] { seq->train(); }), "nn.Sequential::train: " + null2));
  CHECK(has(error_of([&] { seq->evaluate(); }), null2));
  CHECK(has(error_of([&] { seq->to(DType::Float64); }), null2));
  CHECK(has(error_of([&] { seq->zeroGradParameters(); }), null2));
  CHECK(has(error_of([&] { seq->apply([](nn::Module&) {}); }), null2));
  seq->modules[1] = std::make_shared<nn::ReLU>();  // convert() replaces children this way: still fine
  CHECK_NOTHROW(seq->forward(zeros({2})));
  CHECK_NOTHROW(seq->backward(zeros({2}), zeros({2})));
  seq->modules[0] = nullptr;
  CHECK(has(error_of([&] { seq->backward(zeros({2}), zeros({2})); }), "module 1 of 2 is nullptr"));

  nn::Concat cat(1, {std::make_shared<nn::Identity>()});
  cat.modules.push_back(nullptr);
  CHECK(has(error_of([&] { cat.forward(zeros({2, 2})); }), "nn.Concat::forward: module 2 of 2 is nullptr"));
  CHECK(has(error_of([&] { (void)cat.str(); }), "nn.Concat::str"));
  nn::Residual res(std::make_shared<nn::Identity>());
  res.modules[0] = nullptr;
  CHECK(has(error_of([&] { res.forward(zeros({2})); }), "nn.Residual::updateOutput: module 1 of 1 is nullptr"));
  CHECK(has(error_of([&] { (void)res.str(); }), "nn.Residual::str"));
}

TEST_CASE("a nullptr child is named on the remaining paths: freeing gradients, convert, model files, the transformer") {
  // a Sequential's gradInput is its first child's: releasing it (setFreeIntermediateGradients)
  // reached that child by pointer
  auto seq = std::make_shared<nn::Sequential>();
  seq->add(std::make_shared<nn::ReLU>()).add(std::make_shared<nn::ReLU>());
  seq->setFreeIntermediateGradients(true);
  seq->forward(zeros({2}));
  seq->modules[0] = nullptr;
  nn::Module& asModule = *seq;  // public on Module
  const std::string released = error_of([&] { asModule.releaseGradInput(); });
  CHECK(has(released, "nn.Sequential::releaseGradInput: module 1 of 2 is nullptr"));
  // convert walks every child: a null one is an error naming its path, not a silent skip
  auto net = std::make_shared<nn::Sequential>();
  net->add(std::make_shared<nn::Sequential>());
  std::static_pointer_cast<nn::Sequential>(net->modules[0])->modules.push_back(nullptr);
  CHECK(error_of([&] { nn::convert(net, nn::backend); }) ==
        "nn::convert: the module at 0.0 is nullptr (a container's modules holds a null child)");
  CHECK(has(error_of([&] { (void)nn::describe_model(*net); }), "null child"));
  // the spatial transformer's localisation network, printed and run
  auto loc = std::make_shared<nn::Sequential>();
  nn::SpatialTransformer st(loc, 2, 2);
  st.modules[0] = nullptr;
  CHECK(has(error_of([&] { (void)st.str(); }), "nn.SpatialTransformer::str: module 1 of 1 is nullptr"));
  CHECK(has(error_of([&] { st.forward(zeros({1, 1, 2, 2})); }),
            "nn.SpatialTransformer::updateOutput: module 1 of 1 is nullptr"));
  CHECK(has(error_of([&] { st.backward(zeros({1, 1, 2, 2}), zeros({1, 1, 2, 2})); }), "module 1 of 1 is nullptr"));
}

TEST_CASE("sizes from user input are bounded before anything is allocated") {
  // TemporalConvolution: kW * inputFrameSize was a signed overflow
  CHECK(has(error_of([&] { (void)nn::TemporalConvolution(int64_t{1} << 62, 2, 4); }), "nn.TemporalConvolution"));
  // SpatialTransformer: two integers of a model file decided every forward's allocation
  auto loc = [] { return std::make_shared<nn::Sequential>(); };
  const std::string bound = "outH * outW <= 16777216 (SpatialTransformer::kMaxOutputPoints)";
  CHECK(has(error_of([&] { (void)nn::SpatialTransformer(loc(), 16384, 16384); }), bound));
  CHECK(has(error_of([&] { (void)nn::SpatialTransformer(loc(), int64_t{1} << 62, 4); }), bound));
  CHECK_NOTHROW((void)nn::SpatialTransformer(loc(), 4096, 4096));
  nn::SpatialTransformer st(loc(), 4, 4);
  const tensor::Json huge = tensor::Json::Object{{"outH", int64_t{1} << 20}, {"outW", int64_t{1} << 20}};
  CHECK(has(error_of([&] { (void)nn::SpatialTransformer::fromConfig(huge, {loc()}); }), bound));
  st.outH = int64_t{1} << 30;  // a public field: checked on every pass too
  CHECK(has(error_of([&] { st.forward(zeros({1, 1, 2, 2})); }), bound));
}

TEST_CASE("non-finite configuration values are refused at construction") {
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  CHECK(error_of([&] { (void)nn::ELU(nan); }) == "nn.ELU: expected a finite alpha, got nan");
  CHECK(error_of([&] { (void)nn::ELU(-inf); }) == "nn.ELU: expected a finite alpha, got -inf");
  CHECK(has(error_of([&] { (void)nn::SpatialCrossMapLRN(5, 1e-4, 0.75, inf); }), "expected finite alpha, beta and k"));
  CHECK(has(error_of([&] { (void)nn::SpatialCrossMapLRN(5, nan); }), "got alpha nan"));
  CHECK(has(error_of([&] { (void)nn::SpatialCrossMapLRN(5, 1e-4, inf); }), "beta inf"));
  CHECK(has(error_of([&] { (void)nn::BatchNormalization(3, inf); }), "a finite eps"));
  CHECK(has(error_of([&] { (void)nn::SpatialBatchNormalization(3, nan); }), "a finite eps"));
  CHECK(has(error_of([&] { (void)nn::Dropout(nan); }), "expected 0 <= p < 1"));
  CHECK_NOTHROW(nn::ELU(0.5));
  CHECK_NOTHROW(nn::SpatialCrossMapLRN(5, 1e-4, 0.75, 2));
}

TEST_CASE("a convolution whose output sizes fit one by one but not together names itself and the shapes") {
  // huge padding: each output side is 2^31 + 4, the output's bytes 2^64 and more
  nn::SpatialConvolution padded(1, 1, 1, 1, 1, 1, int64_t{1} << 30, int64_t{1} << 30);
  CHECK(error_of([&] {
          padded.forward(zeros({1, 1, 4, 4}));
        }) ==
        "nn.SpatialConvolution::updateOutput: expected an output whose size in bytes fits in int64, got "
        "[1 x 1 x 2147483652 x 2147483652] for input [1 x 1 x 4 x 4] with kernel 1x1, stride 1x1, padding "
        "1073741824x1073741824 and dilation 1x1");
  nn::SpatialFullConvolution strided(1, 1, 1, 1, int64_t{1} << 31, int64_t{1} << 31);
  CHECK(has(error_of([&] {
              strided.forward(zeros({2, 1, 4, 4}));
            }),
            "nn.SpatialFullConvolution::updateOutput: expected an output whose size in bytes fits in int64, got "
            "[2 x 1 x 6442450945 x 6442450945] for input [2 x 1 x 4 x 4]"));
}

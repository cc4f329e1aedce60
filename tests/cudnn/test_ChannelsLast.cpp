// test_ChannelsLast.cpp: the cudnn twins on channels-last (NHWC / NDHWC) tensors (Note
// [Channels-last twins] in cudnn/core/Layout.h): convolutions (strided, padded, grouped, 3-d),
// batch norm (training, with the persistent NHWC kernels, and evaluation), pooling (cuDNN's,
// the ceil-mode kernels and our max-pooling gradient), activations (in place too), the spatial softmax, Residual and a
// small ResNet-like network, in float32 (TF32 off) and float16, against nn in float64 on the
// row-major input. Every 4-d / 5-d output and gradInput must BE channels-last, so a layer that
// silently goes back to NCHW fails. Then the switch (flag channels_last=true) on a row-major
// input, against the row-major run of the same twins; channels-last filters
// (Module::to(MemoryFormat)) in both activation layouts and under the fused optimizer; and the
// tensor layer's element-wise kernels on channels-last CUDA tensors.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <string>

#include "convert/Convert.h"
#include "cudnn/core/Config.h"
#include "nn/Buffers.h"
#include "nn/Linear.h"
#include "nn/ReLU.h"
#include "nn/Residual.h"
#include "nn/SGD.h"
#include "nn/Sequential.h"
#include "nn/Sigmoid.h"
#include "nn/SpatialAveragePooling.h"
#include "nn/SpatialBatchNormalization.h"
#include "nn/SpatialConvolution.h"
#include "nn/SpatialMaxPooling.h"
#include "nn/SpatialSoftMax.h"
#include "nn/Tanh.h"
#include "nn/View.h"
#include "nn/VolumetricBatchNormalization.h"
#include "nn/VolumetricConvolution.h"
#include "tests/support/TwinCheck.h"

using namespace tensor;
using testing::TwinTolerance;

namespace {

const Device gpu = Device::cuda(0);
using Builder = std::function<nn::ModulePtr()>;

// `got` against `want` (nn in float64) within `tol`, or within twice the error of the same twins
// on the row-major input (`rowMajor`, when given): channels-last must be as accurate as the
// row-major layout, whose twins the other suites check against nn layer by layer. A float16
// network's parameter gradients sum rounding over every later layer, so that error can pass
// the per-layer tolerance in both layouts.
void compare(const std::string& what, const Tensor& got, const Tensor& want, double tol,
             const Tensor* rowMajor = nullptr) {
  INFO(what, ": twin ", got.description(), " vs nn ", want.description());
  REQUIRE(got.sizes() == want.sizes());
  CHECK_FALSE(has_nonfinite(got));
  const double err = rel_norm_error(got, want);
  const double rowMajorErr = rowMajor ? rel_norm_error(*rowMajor, want) : 0;
  INFO("relative error ", err, " (tolerance ", tol, ", the row-major layout's error ", rowMajorErr, ")");
  CHECK(err <= std::max(tol, 2 * rowMajorErr));
}

// A 4-d / 5-d result of a channels-last pass must be channels-last (and not merely
// ambiguous: the shapes used here have C > 1 and more than one position).
void expect_channels_last(const std::string& what, const Tensor& t) {
  if (t.dim() != 4 && t.dim() != 5) return;
  INFO(what, " ", t.description(), " strides ", shape_str(t.strides()));
  CHECK(t.is_contiguous(MemoryFormat::ChannelsLast));
  CHECK(suggest_memory_format(t) == MemoryFormat::ChannelsLast);
}

// Every module's output (and gradInput) below `m`, containers included; a View's gradInput
// is its gradOutput reshaped (row-major, as PyTorch's), the next layer converts it once.
void expect_tree_channels_last(nn::Module& m, const std::string& path) {
  expect_channels_last(path + m.type_name() + " output", m.output);
  const bool view = m.type_name().find("View") != std::string::npos;
  if (m.gradInput.defined() && !view) expect_channels_last(path + m.type_name() + " gradInput", m.gradInput);
  if (auto* c = dynamic_cast<nn::Container*>(&m)) {
    for (size_t i = 0; i < c->modules.size(); ++i) {
      expect_tree_channels_last(*c->modules[i], path + std::to_string(i) + ".");
    }
  }
}

struct Run {
  Tensor output, gradInput;
  std::vector<std::pair<std::string, Tensor>> grads, buffers;
};

// One forward and backward of `m` on `x` with gradOutput `g`, results copied out.
Run run(nn::Module& m, const Tensor& x, const Tensor& g) {
  m.zeroGradParameters();
  Run r;
  r.output = m.forward(x).clone();
  r.gradInput = m.backward(x, g).clone();
  for (auto& [name, t] : m.namedGradParameters()) r.grads.emplace_back(name, t.clone());
  for (auto& [name, t] : m.namedBuffers()) r.buffers.emplace_back(name, t.clone());
  return r;
}

void compare_runs(const Run& got, const Run& want, TwinTolerance tol, const Run* rowMajor = nullptr) {
  auto of = [&](const Tensor& t) { return rowMajor ? &t : nullptr; };
  compare("output", got.output, want.output, tol.forward, rowMajor ? of(rowMajor->output) : nullptr);
  compare("gradInput", got.gradInput, want.gradInput, tol.backward, rowMajor ? of(rowMajor->gradInput) : nullptr);
  REQUIRE(got.grads.size() == want.grads.size());
  for (size_t i = 0; i < got.grads.size(); ++i) {
    compare("grad of " + want.grads[i].first, got.grads[i].second, want.grads[i].second, tol.backward,
            rowMajor ? of(rowMajor->grads[i].second) : nullptr);
  }
  REQUIRE(got.buffers.size() == want.buffers.size());
  for (size_t i = 0; i < got.buffers.size(); ++i) {
    compare(want.buffers[i].first, got.buffers[i].second, want.buffers[i].second, tol.forward,
            rowMajor ? of(rowMajor->buffers[i].second) : nullptr);
  }
}

// nn (float64, CPU, row-major input) against the twins of the same network (GPU, `dtype`,
// the input and gradOutput made channels-last). `rowMajorGrad`: hand the twins a row-major
// gradOutput instead (converted once inside).
void expect_channels_last_matches(const Builder& build, const Shape& shape, DType dtype, bool training, uint64_t seed,
                                  bool rowMajorGrad = false, TwinTolerance tol = TwinTolerance{0, 0}) {
  if (tol.forward == 0) tol = TwinTolerance::for_dtype(dtype);
  INFO("seed ", seed, ", ", name(dtype), ", ", training ? "training" : "evaluation", ", input ", shape_str(shape));
  Generator gen(seed);
  nn::ModulePtr ref = build();
  nn::ModulePtr twin = nn::convert(build(), nn::Backend::cudnn);
  INFO(twin->str());
  ref->to(DType::Float64);
  twin->to(gpu);
  twin->to(dtype);
  std::map<std::string, Tensor> initial;  // copied before the runs move the running statistics
  for (const auto& [key, t] : ref->stateDict()) initial.emplace(key, t.clone());
  twin->loadStateDict(initial);
  if (training) {
    ref->train();
    twin->train();
  } else {
    ref->evaluate();
    twin->evaluate();
  }
  const Tensor x = uniform(shape, -1, 1, gen, DType::Float64);
  const Tensor y = ref->forward(x);
  const Tensor g = uniform(y.sizes(), -1, 1, gen, DType::Float64);
  const Run want = run(*ref, x, g);

  const Tensor xg = x.to(gpu, dtype).contiguous(MemoryFormat::ChannelsLast);
  REQUIRE(suggest_memory_format(xg) == MemoryFormat::ChannelsLast);
  const Tensor gg = rowMajorGrad ? g.to(gpu, dtype) : g.to(gpu, dtype).contiguous(MemoryFormat::ChannelsLast);
  // the reference ran forward twice (running statistics): so does each twin
  twin->forward(xg);
  const Run got = run(*twin, xg, gg);
  expect_tree_channels_last(*twin, "");
  nn::ModulePtr plain = nn::convert(build(), nn::Backend::cudnn);
  plain->to(gpu);
  plain->to(dtype);
  plain->loadStateDict(initial);
  training ? plain->train() : plain->evaluate();
  const Tensor xr = x.to(gpu, dtype), gr = g.to(gpu, dtype);
  plain->forward(xr);
  const Run rowMajor = run(*plain, xr, gr);
  compare_runs(got, want, tol, &rowMajor);
}

// Whole networks in float16 (eight layers of rounding, batch norm over few positions): four
// times the per-layer tolerance; float32 keeps its own.
TwinTolerance network_tolerance(DType dt) {
  TwinTolerance t = TwinTolerance::for_dtype(dt);
  if (dt == DType::Float16) t = {4 * t.forward, 4 * t.backward};
  return t;
}

void for_each_dtype(const std::function<void(DType)>& f) {
  for (DType dt : {DType::Float32, DType::Float16}) f(dt);
}

template <class M, class... A>
Builder make(A... args) {
  return [=] { return nn::ModulePtr(std::make_shared<M>(args...)); };
}

nn::ModulePtr sequential(std::initializer_list<nn::ModulePtr> ms) { return std::make_shared<nn::Sequential>(ms); }

// A convolution that feeds a batch norm has no bias, as in ResNet: the batch norm subtracts the
// channel mean, so that bias's gradient is exactly zero and both sides give rounding noise
// (relative errors of 1e8 between two noises said nothing about either).
nn::ModulePtr conv_before_bn(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t pad) {
  auto c = std::make_shared<nn::SpatialConvolution>(in, out, k, k, stride, stride, pad, pad);
  c->noBias();
  return c;
}

// conv 3x3 - bn - relu - conv 3x3 - bn, plus a shortcut (1x1 strided conv + bn when the
// shape changes), as ResNet's basic block.
nn::ModulePtr basic_block(int64_t in, int64_t out, int64_t stride) {
  nn::ModulePtr block =
      sequential({conv_before_bn(in, out, 3, stride, 1), std::make_shared<nn::SpatialBatchNormalization>(out),
                  std::make_shared<nn::ReLU>(true), conv_before_bn(out, out, 3, 1, 1),
                  std::make_shared<nn::SpatialBatchNormalization>(out)});
  nn::ModulePtr shortcut;
  if (in != out || stride != 1) {
    shortcut =
        sequential({conv_before_bn(in, out, 1, stride, 0), std::make_shared<nn::SpatialBatchNormalization>(out)});
  }
  return std::make_shared<nn::Residual>(block, shortcut);
}

nn::ModulePtr small_resnet() {
  return sequential({conv_before_bn(3, 8, 3, 1, 1), std::make_shared<nn::SpatialBatchNormalization>(8),
                     std::make_shared<nn::ReLU>(true), std::make_shared<nn::SpatialMaxPooling>(3, 3, 2, 2, 1, 1),
                     basic_block(8, 8, 1), std::make_shared<nn::ReLU>(), basic_block(8, 16, 2),
                     std::make_shared<nn::ReLU>(), std::make_shared<nn::SpatialAveragePooling>(2, 2, 2, 2),
                     std::make_shared<nn::View>(-1, 16 * 2 * 2), std::make_shared<nn::Linear>(16 * 2 * 2, 5)});
}

// The small ResNet three times on the same weights: nn in float64, and two cudnn twins in `dt`.
struct ResNetTwins {
  nn::ModulePtr ref, plain, cl;
};
ResNetTwins resnet_twins(DType dt) {
  ResNetTwins t{small_resnet(), nn::convert(small_resnet(), nn::Backend::cudnn),
                nn::convert(small_resnet(), nn::Backend::cudnn)};
  t.ref->to(DType::Float64);
  for (auto& m : {t.plain, t.cl}) {
    m->to(gpu);
    m->to(dt);
    m->loadStateDict(t.ref->stateDict());
  }
  return t;
}

}  // namespace

TEST_CASE("channels-last convolutions: plain, strided and padded, grouped, 1x1, no bias, 3-d") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  for_each_dtype([](DType dt) {
    expect_channels_last_matches(make<nn::SpatialConvolution>(3, 8, 3, 3), {2, 3, 9, 9}, dt, true, 5101);
    expect_channels_last_matches(make<nn::SpatialConvolution>(8, 16, 3, 3, 2, 2, 1, 1), {2, 8, 9, 9}, dt, true, 5102);
    expect_channels_last_matches(make<nn::SpatialConvolution>(8, 16, 3, 3, 1, 1, 1, 1, 4), {2, 8, 7, 7}, dt, true,
                                 5103);
    expect_channels_last_matches(make<nn::SpatialConvolution>(16, 8, 1, 1), {2, 16, 5, 6}, dt, true, 5104);
    expect_channels_last_matches(
        [] {
          auto c = std::make_shared<nn::SpatialConvolution>(8, 8, 3, 3, 1, 1, 1, 1);
          c->noBias();
          return nn::ModulePtr(c);
        },
        {2, 8, 6, 6}, dt, true, 5105);
    expect_channels_last_matches(make<nn::VolumetricConvolution>(4, 8, 3, 3, 3, 1, 1, 1, 1, 1, 1), {2, 4, 5, 5, 5}, dt,
                                 true, 5106);
  });
}

TEST_CASE(
    "channels-last convolution: the weight and its gradient stay row-major, gradients accumulate with the scale") {
  // The passes run on a channels-last copy of the filter and take the filter gradient in that
  // layout (Note [Channels-last filters] in cudnn/ops/conv_search.cpp); what the module exposes does not change.
  cudnn::ScopedConfig flags("allow_tf32=false");
  Generator gen(5108);
  auto ref = std::make_shared<nn::SpatialConvolution>(6, 16, 3, 3, 1, 1, 1, 1);
  ref->to(DType::Float64);
  nn::ModulePtr twin =
      nn::convert(std::make_shared<nn::SpatialConvolution>(6, 16, 3, 3, 1, 1, 1, 1), nn::Backend::cudnn);
  twin->to(gpu);
  twin->loadStateDict(ref->stateDict());
  const Tensor x = uniform({3, 6, 7, 5}, -1, 1, gen, DType::Float64);
  const Tensor g = uniform({3, 16, 7, 5}, -1, 1, gen, DType::Float64);
  const Tensor xg = x.to(gpu, DType::Float32).contiguous(MemoryFormat::ChannelsLast);
  const Tensor gg = g.to(gpu, DType::Float32).contiguous(MemoryFormat::ChannelsLast);
  for (nn::Module* m : {static_cast<nn::Module*>(ref.get()), twin.get()}) {
    m->zeroGradParameters();
    m->forward(m == twin.get() ? xg : x);
    m->accGradParameters(m == twin.get() ? xg : x, m == twin.get() ? gg : g, 0.5);
    m->accGradParameters(m == twin.get() ? xg : x, m == twin.get() ? gg : g, 0.25);
  }
  auto grads = twin->namedGradParameters();
  auto want = ref->namedGradParameters();
  REQUIRE(grads.size() == want.size());
  for (size_t i = 0; i < grads.size(); ++i) {
    CHECK(grads[i].second.is_contiguous());
    compare("grad of " + grads[i].first, grads[i].second, want[i].second, 1e-5);
  }
  for (auto& [name, p] : twin->namedParameters()) CHECK(p.is_contiguous());
}

TEST_CASE(
    "a 1x1 convolution's 16-bit channels-last filter and bias gradients: one product, with the scale, NaN and Inf as "
    "nn") {
  // Note [Filter gradients as one product] and Note [A bias gradient in the filter-gradient
  // product] in cudnn/ConvolutionBase.cpp, and the pins that keep cuDNN's pass, where no legacy
  // algorithm runs (Note [When no pinned algorithm runs]); channel counts that are multiples of
  // 8, as a network's, and odd ones, which cuBLASLt may refuse
  Generator gen(5109);
  for (const auto& [in, out] : {std::pair<int64_t, int64_t>{16, 24}, {5, 7}}) {
    auto ref = std::make_shared<nn::SpatialConvolution>(in, out, 1, 1);
    ref->to(DType::Float64);
    const Tensor x = uniform({3, in, 5, 7}, -1, 1, gen, DType::Float64);
    const Tensor g = uniform({3, out, 5, 7}, -1, 1, gen, DType::Float64);
    Tensor bad = g.clone();
    bad[0][1][2][3].fill_(std::numeric_limits<double>::quiet_NaN());
    bad[1][5][0][0].fill_(std::numeric_limits<double>::infinity());
    for (DType dt : {DType::Float16, DType::BFloat16}) {
      for (const char* pin : {"", "deterministic", "time_once"}) {
        const bool pinned = *pin != 0;
        INFO(in, " -> ", out, " channels, ", name(dt), ", filter algorithm: ", pinned ? pin : "not pinned");
        auto twin = std::dynamic_pointer_cast<nn::SpatialConvolution>(
            nn::convert(std::make_shared<nn::SpatialConvolution>(in, out, 1, 1), nn::Backend::cudnn));
        twin->to(gpu);
        twin->loadStateDict(ref->stateDict());
        twin->to(dt);
        if (pinned) twin->setMode("", pin, "");  // any setMode keeps cuDNN's pass
        const Tensor xg = x.to(gpu, dt).contiguous(MemoryFormat::ChannelsLast);
        const double tol = dt == DType::Float16 ? 3e-3 : 2e-2;
        // cuDNN's own pass keeps NaN and Inf by the bad-input matrix's suites; here the product's
        for (const Tensor* grad : {&g, pinned ? &g : static_cast<const Tensor*>(&bad)}) {
          const Tensor gg = grad->to(gpu, dt).contiguous(MemoryFormat::ChannelsLast);
          for (nn::Module* m : {static_cast<nn::Module*>(ref.get()), static_cast<nn::Module*>(twin.get())}) {
            const bool onTwin = m == twin.get();
            m->zeroGradParameters();
            m->forward(onTwin ? xg : x);
            m->accGradParameters(onTwin ? xg : x, onTwin ? gg : *grad, 0.5);
            m->accGradParameters(onTwin ? xg : x, onTwin ? gg : *grad, 0.25);
          }
          CHECK(twin->gradWeight.is_contiguous());
          testing::expect_same_nonfinite("gradWeight", twin->gradWeight, ref->gradWeight, tol);
          testing::expect_same_nonfinite("gradBias", twin->gradBias, ref->gradBias, tol);
        }
      }
    }
  }
}

TEST_CASE("a 1x1 convolution's float16 bias gradient whose sum is beyond float16 before the scale: nn's answer") {
  // Note [A bias gradient in the filter-gradient product]: sums of ~2.6e6 (float16 ends at
  // 65504), scaled by 1/128 into range
  Generator gen(5110);
  auto ref = std::make_shared<nn::SpatialConvolution>(16, 24, 1, 1);
  ref->to(DType::Float64);
  const Tensor x = uniform({3, 16, 5, 7}, -1, 1, gen, DType::Float64);
  const Tensor g = uniform({3, 24, 5, 7}, 20000, 30000, gen, DType::Float64).to(DType::Float16).to(DType::Float64);
  auto twin = std::dynamic_pointer_cast<nn::SpatialConvolution>(
      nn::convert(std::make_shared<nn::SpatialConvolution>(16, 24, 1, 1), nn::Backend::cudnn));
  twin->to(gpu);
  twin->loadStateDict(ref->stateDict());
  twin->to(DType::Float16);
  const Tensor xg = x.to(gpu, DType::Float16).contiguous(MemoryFormat::ChannelsLast);
  const Tensor gg = g.to(gpu, DType::Float16).contiguous(MemoryFormat::ChannelsLast);
  ref->zeroGradParameters();
  twin->zeroGradParameters();
  ref->forward(x);
  twin->forward(xg);
  ref->accGradParameters(x, g, 1.0 / 128);
  twin->accGradParameters(xg, gg, 1.0 / 128);
  const Tensor got = twin->gradBias.cpu().to(DType::Float64);
  for (int64_t c = 0; c < 24; ++c) REQUIRE(std::isfinite(got.get({c})));
  testing::expect_same_nonfinite("gradBias", twin->gradBias, ref->gradBias, 3e-3);
  testing::expect_same_nonfinite("gradWeight", twin->gradWeight, ref->gradWeight, 3e-3);
}

TEST_CASE("channels-last convolutions pinned to algorithms that cannot run them take the graph engines, as nn") {
  // Note [When no pinned algorithm runs]: a 1x1 filter gradient over channels-last tensors has no
  // legacy algorithm at all; the other pins name algorithms cuDNN refuses for these shapes
  cudnn::ScopedConfig flags("allow_tf32=false");
  struct Pins {
    const char *fwd, *bwdFilter, *bwdData;
  };
  for (const Pins& p : {Pins{"small", "deterministic", "deterministic"}, Pins{"fft", "fft", "fft"},
                        Pins{"large", "time_once", "guess_once"}}) {
    INFO("setMode(", p.fwd, ", ", p.bwdFilter, ", ", p.bwdData, ")");
    const auto pinned = [p](int64_t in, int64_t out, int64_t k) -> Builder {
      return [=] {
        auto conv = std::make_shared<nn::SpatialConvolution>(in, out, k, k, 1, 1, k / 2, k / 2);
        conv->setMode(p.fwd, p.bwdFilter, p.bwdData);
        return nn::ModulePtr(conv);
      };
    };
    for_each_dtype([&](DType dt) {
      expect_channels_last_matches(pinned(16, 24, 1), {3, 16, 5, 7}, dt, true, 5110);
      expect_channels_last_matches(pinned(8, 16, 3), {2, 8, 7, 7}, dt, true, 5111);
    });
  }
}

TEST_CASE("channels-last convolution with a row-major gradOutput (converted once)") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  expect_channels_last_matches(make<nn::SpatialConvolution>(8, 16, 3, 3, 1, 1, 1, 1), {2, 8, 7, 7}, DType::Float32,
                               true, 5107, true);
}

TEST_CASE("channels-last batch norm: training (persistent NHWC kernels) and evaluation, 2-d and 3-d") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  for_each_dtype([](DType dt) {
    for (bool training : {true, false}) {
      expect_channels_last_matches(make<nn::SpatialBatchNormalization>(8), {4, 8, 5, 6}, dt, training, 5201);
      expect_channels_last_matches(make<nn::SpatialBatchNormalization>(8, 1e-5, 0.1, false), {4, 8, 5, 6}, dt, training,
                                   5202);
      expect_channels_last_matches(make<nn::VolumetricBatchNormalization>(6), {2, 6, 3, 4, 5}, dt, training, 5203);
    }
  });
  expect_channels_last_matches(make<nn::SpatialBatchNormalization>(8), {4, 8, 5, 6}, DType::Float32, false, 5204, true);
}

TEST_CASE("channels-last pooling: max and average, padded, ceil mode (own kernels)") {
  for_each_dtype([](DType dt) {
    expect_channels_last_matches(make<nn::SpatialMaxPooling>(3, 3, 2, 2, 1, 1), {2, 8, 9, 9}, dt, true, 5301);
    expect_channels_last_matches(make<nn::SpatialAveragePooling>(2, 2, 2, 2), {2, 8, 8, 6}, dt, true, 5302);
    expect_channels_last_matches(make<nn::SpatialAveragePooling>(3, 3, 1, 1, 1, 1), {2, 8, 5, 5}, dt, true, 5303);
    expect_channels_last_matches(
        [] {
          auto p = std::make_shared<nn::SpatialMaxPooling>(3, 3, 2, 2);
          p->ceil();
          return nn::ModulePtr(p);
        },
        {2, 8, 8, 8}, dt, true, 5304);
  });
}

TEST_CASE("channels-last activations and the spatial softmax") {
  for_each_dtype([](DType dt) {
    expect_channels_last_matches(make<nn::ReLU>(), {2, 8, 5, 6}, dt, true, 5401);
    expect_channels_last_matches(make<nn::ReLU>(true), {2, 8, 5, 6}, dt, true, 5402);
    expect_channels_last_matches(make<nn::Tanh>(), {2, 8, 5, 6}, dt, true, 5403);
    expect_channels_last_matches(make<nn::Sigmoid>(), {2, 8, 5, 6}, dt, true, 5404);
    expect_channels_last_matches(make<nn::SpatialSoftMax>(), {2, 8, 5, 6}, dt, true, 5405);
  });
}

TEST_CASE("channels-last Residual (identity and projection shortcuts) and a small ResNet") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  for_each_dtype([](DType dt) {
    expect_channels_last_matches([] { return basic_block(8, 8, 1); }, {2, 8, 6, 6}, dt, true, 5501);
    expect_channels_last_matches([] { return basic_block(8, 16, 2); }, {2, 8, 6, 6}, dt, true, 5502);
    expect_channels_last_matches(small_resnet, {4, 3, 16, 16}, dt, true, 5503, false, network_tolerance(dt));
    expect_channels_last_matches(small_resnet, {4, 3, 16, 16}, dt, false, 5504, false, network_tolerance(dt));
  });
}

TEST_CASE("the switch: channels_last=true runs a row-major input channels-last, with the row-major run's values") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  for (DType dt : {DType::Float32, DType::Float16}) {
    INFO(name(dt));
    Generator gen(5601);
    auto [ref, plain, cl] = resnet_twins(dt);
    const Tensor x = uniform({4, 3, 16, 16}, -1, 1, gen, DType::Float64);
    const Tensor g = uniform({4, 5}, -1, 1, gen, DType::Float64);
    const Tensor xg = x.to(gpu, dt), gg = g.to(gpu, dt);
    REQUIRE(xg.is_contiguous());
    const Run want = run(*ref, x, g);
    const Run rowMajor = run(*plain, xg, gg);
    {
      cudnn::ScopedConfig on("channels_last=true");
      CHECK(cudnn::config().channels_last);
      const Run got = run(*cl, xg, gg);
      compare_runs(got, want, network_tolerance(dt), &rowMajor);
      // the same twins, row-major: the layouts (and so the algorithms) differ, the values agree
      compare_runs(got, rowMajor, network_tolerance(dt));
      CHECK(xg.is_contiguous());  // the caller's input is not touched
      auto& seq = dynamic_cast<nn::Sequential&>(*cl);
      CHECK(seq.modules[0]->gradInput.is_contiguous(MemoryFormat::ChannelsLast));
      for (size_t i = 0; i + 2 < seq.modules.size(); ++i) {  // all but View and Linear
        expect_tree_channels_last(*seq.modules[i], std::to_string(i) + ".");
      }
    }
    CHECK_FALSE(cudnn::config().channels_last);
    auto& seq = dynamic_cast<nn::Sequential&>(*plain);
    CHECK(seq.modules[0]->output.is_contiguous());  // off: the twins keep the row-major layout
  }
  cudnn::ScopedConfig bad("channels_last=false");
  CHECK_THROWS_WITH_AS(cudnn::set_flags("channels_last=maybe"), doctest::Contains("channels_last"), Error);
}

TEST_CASE("channels-last filters (Module::to(MemoryFormat::ChannelsLast)): read and accumulated in place, any input") {
  // The filters laid out as the activations spare the passes their copy; the twins must give
  // nn's values with them in both activation layouts, keep them channels-last, and train with
  // the fused optimizer as the row-major filters do.
  cudnn::ScopedConfig flags("allow_tf32=false");
  for (DType dt : {DType::Float32, DType::Float16}) {
    INFO(name(dt));
    Generator gen(5701);
    auto [ref, plain, cl] = resnet_twins(dt);
    cl->to(MemoryFormat::ChannelsLast);
    auto filters = [](nn::Module& net) {
      std::vector<nn::ConvolutionBase*> out;
      net.apply([&](nn::Module& m) {
        if (auto* c = dynamic_cast<nn::ConvolutionBase*>(&m)) out.push_back(c);
      });
      return out;
    };
    REQUIRE_FALSE(filters(*cl).empty());
    for (nn::ConvolutionBase* c : filters(*cl)) {
      CHECK(nn::is_channels_last_parameter(c->weight));
      CHECK(nn::is_channels_last_parameter(c->gradWeight));
    }
    const Tensor x = uniform({4, 3, 16, 16}, -1, 1, gen, DType::Float64);
    const Tensor g = uniform({4, 5}, -1, 1, gen, DType::Float64);
    const Tensor xg = x.to(gpu, dt), gg = g.to(gpu, dt);
    const Run want = run(*ref, x, g);
    for (bool channelsLastInput : {true, false}) {
      INFO("channels_last=", channelsLastInput);
      cudnn::ScopedConfig on(channelsLastInput ? "channels_last=true" : "channels_last=false");
      const Run rowMajor = run(*plain, xg, gg);
      const Run got = run(*cl, xg, gg);
      compare_runs(got, want, network_tolerance(dt), &rowMajor);
      for (nn::ConvolutionBase* c : filters(*cl)) {  // still laid out as they were
        CHECK(nn::is_channels_last_parameter(c->weight));
        CHECK(nn::is_channels_last_parameter(c->gradWeight));
      }
    }
    // three SGD steps (fused kernels over the channels-last filters) against the row-major ones
    cudnn::ScopedConfig on("channels_last=true");
    nn::SGD sgdPlain(*plain, 0.05, 0.9), sgdCl(*cl, 0.05, 0.9);
    for (int step = 0; step < 3; ++step) {
      for (auto [net, sgd] : {std::pair{plain.get(), &sgdPlain}, std::pair{cl.get(), &sgdCl}}) {
        net->zeroGradParameters();
        net->forward(xg);
        net->backward(xg, gg);
        sgd->step();
      }
    }
    const auto a = plain->stateDict(), b = cl->stateDict();
    for (const auto& [key, t] : a) {
      INFO(key);
      CHECK(rel_norm_error(b.at(key), t) <= 10 * TwinTolerance::for_dtype(dt).backward);
    }
    for (nn::ConvolutionBase* c : filters(*cl)) CHECK(nn::is_channels_last_parameter(c->weight));
  }
}

TEST_CASE("tensor kernels on channels-last CUDA tensors: values, layouts, copies across devices") {
  Generator gen(5701);
  const Tensor a = uniform({2, 3, 4, 5}, -2, 2, gen);
  const Tensor b = uniform({2, 3, 4, 5}, -2, 2, gen);
  const Tensor ag = a.to(gpu).contiguous(MemoryFormat::ChannelsLast);
  const Tensor bg = b.to(gpu).contiguous(MemoryFormat::ChannelsLast);
  CHECK(ag.is_contiguous(MemoryFormat::ChannelsLast));
  CHECK(max_abs_diff(ag, a) == 0);
  CHECK(max_abs_diff(ag + bg, a + b) == 0);
  CHECK(max_abs_diff(ag.mul(b.to(gpu)), a * b) == 0);
  Tensor s = empty_like(ag);
  CHECK(s.strides() == ag.strides());
  s.copy_(ag);
  s.add_(bg, 0.5);
  CHECK(s.is_contiguous(MemoryFormat::ChannelsLast));
  CHECK(max_abs_diff(s, a.add(b, 0.5)) == 0);
  s.fill_(2);
  CHECK(s.sum().item() == 240);
  // across devices and dtypes, keeping the layout
  const Tensor back = ag.cpu();
  CHECK(back.is_contiguous(MemoryFormat::ChannelsLast));
  CHECK(max_abs_diff(back, a) == 0);
  Tensor h = empty({2, 3, 4, 5}, DType::Float16, gpu, MemoryFormat::ChannelsLast);
  h.copy_(a);
  CHECK(max_abs_diff(h, a.to(DType::Float16)) == 0);
  const Tensor cl_cpu = a.contiguous(MemoryFormat::ChannelsLast);
  Tensor d = empty({2, 3, 4, 5}, DType::Float32, gpu);
  d.copy_(cl_cpu);
  CHECK(d.is_contiguous());
  CHECK(max_abs_diff(d, a) == 0);
  CHECK(empty({0, 3, 4, 5}, DType::Float32, gpu).contiguous().is_contiguous());
}

// PoolingTwinChecks.h: what the four pooling twins share (the rows of
// tests/cudnn/test_PoolingFamily.cpp):
// configurations with the ceil-mode effect they are meant to have (checked against sizes worked
// out here, not by nn), expect_twin_matches over batch / batch 1 / non-batch inputs of each,
// max-pooling inputs without ties in any dtype, gradients unaffected by in-place writes into
// the output, and the errors every pooling twin gives.
#pragma once

#include <doctest/doctest.h>

#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "nn/Module.h"
#include "nn/PoolingBase.h"
#include "tests/support/TwinCheck.h"

namespace pooltwin {

using tensor::DType;
using tensor::Shape;
using tensor::Tensor;

inline const tensor::Device gpu = tensor::Device::cuda(0);

// What ceil mode does to a configuration's output size (over all its dims).
enum class Ceil {
  Off,      // floor mode
  NoEffect, // ceil mode, every size as floor's
  Adds,     // ceil mode adds a window in some dim (our kernel computes, not cuDNN)
  Drops,    // ceil mode would add a window that starts in the right padding: Torch drops it
};

// Kernel, stride, padding and the input's spatial sizes in tensor order ((T,) H, W).
struct PoolCfg {
  std::vector<int64_t> k, d, pad;
  Shape spatial;
  Ceil ceil = Ceil::Off;
  bool include_pad = true;  // average pooling's count_include_pad
  std::string what;
  bool ceil_mode() const { return ceil != Ceil::Off; }
};

using PoolFactory = std::function<nn::ModulePtr(const PoolCfg&)>;

// A pooling module (nn or twin) of configuration c, through Torch's constructor.
template <class M>
std::shared_ptr<M> make_pool(const PoolCfg& c) {
  std::shared_ptr<M> m;
  if constexpr (std::is_base_of_v<nn::SpatialPooling, M>) {
    m = std::make_shared<M>(c.k[1], c.k[0], c.d[1], c.d[0], c.pad[1], c.pad[0]);
  } else {
    m = std::make_shared<M>(c.k[0], c.k[2], c.k[1], c.d[0], c.d[2], c.d[1], c.pad[0], c.pad[2], c.pad[1]);
  }
  m->ceil_mode = c.ceil_mode();
  if constexpr (requires { m->count_include_pad; }) m->count_include_pad = c.include_pad;
  return m;
}

// Torch's output size along one dim, written out here: floor or ceil of (in + 2 pad - k) / d,
// plus one; `drop` removes a last ceil window starting at or past in + pad.
inline int64_t torch_size(int64_t in, int64_t k, int64_t d, int64_t pad, bool ceil, bool drop) {
  const int64_t span = in + 2 * pad - k;
  int64_t out = (ceil ? (span + d - 1) / d : span / d) + 1;
  if (ceil && drop && (out - 1) * d >= in + pad) --out;
  return out;
}

// The configuration does what its Ceil label says.
inline void expect_ceil_effect(const PoolCfg& c) {
  INFO(c.what);
  bool adds = false, drops = false;
  for (size_t i = 0; i < c.k.size(); ++i) {
    const int64_t floor_out = torch_size(c.spatial[i], c.k[i], c.d[i], c.pad[i], false, false);
    const int64_t ceil_out = torch_size(c.spatial[i], c.k[i], c.d[i], c.pad[i], true, true);
    const int64_t undropped = torch_size(c.spatial[i], c.k[i], c.d[i], c.pad[i], true, false);
    adds = adds || ceil_out > floor_out;
    drops = drops || (undropped > ceil_out && ceil_out == floor_out);
  }
  switch (c.ceil) {
    case Ceil::Off: break;
    case Ceil::NoEffect: CHECK_FALSE(adds); break;
    case Ceil::Adds: CHECK(adds); break;
    case Ceil::Drops: CHECK_FALSE(adds); CHECK(drops); break;
  }
}

// Within each plane distinct values, exactly representable in float16 and bfloat16 (a shuffled
// ramp of multiples of 1/32, at most 512 per plane): no dtype sees a tie that nn does not, so
// every max-pooling window has one maximum everywhere.
inline Tensor distinct_input(const Shape& shape, size_t spatial, tensor::Generator& gen) {
  int64_t plane = 1;
  for (size_t i = shape.size() - spatial; i < shape.size(); ++i) plane *= shape[i];
  REQUIRE(plane <= 512);
  int64_t total = 1;
  for (int64_t s : shape) total *= s;
  std::vector<double> v(static_cast<size_t>(total));
  std::vector<int64_t> ramp(static_cast<size_t>(plane));
  for (int64_t p = 0; p < total / plane; ++p) {
    for (int64_t j = 0; j < plane; ++j) ramp[static_cast<size_t>(j)] = j;
    for (int64_t j = plane - 1; j > 0; --j) std::swap(ramp[static_cast<size_t>(j)], ramp[static_cast<size_t>(gen.randint(j + 1))]);
    for (int64_t j = 0; j < plane; ++j) {
      v[static_cast<size_t>(p * plane + j)] = static_cast<double>(ramp[static_cast<size_t>(j)] - plane / 2) / 32.0;
    }
  }
  return tensor::from_vector<double>(v, shape);
}

// For each configuration, a fresh nn module and twin per input: [2 x C x spatial],
// [1 x C x spatial] and [C x spatial]; max-pooling inputs from distinct_input, average-pooling
// inputs uniform in [-1, 1].
inline void expect_pool_twins_match(const std::vector<PoolCfg>& cfgs, const PoolFactory& makeNn,
                                    const PoolFactory& makeCu, bool max, DType dt, bool noncontiguous = false,
                                    int64_t channels = 3) {
  tensor::Generator gen(20261123);
  INFO("input seed 20261123");
  for (const PoolCfg& c : cfgs) {
    expect_ceil_effect(c);
    Shape batch{2, channels}, one{1, channels}, single{channels};
    for (int64_t s : c.spatial) {
      batch.push_back(s);
      one.push_back(s);
      single.push_back(s);
    }
    for (const Shape& shape : {batch, one, single}) {
      INFO(c.what, " on ", tensor::shape_str(shape), " in ", std::string(tensor::name(dt)),
           std::string(noncontiguous ? ", non-contiguous" : ""));
      const Tensor x = max ? distinct_input(shape, c.k.size(), gen) : tensor::uniform(shape, -1, 1, gen, DType::Float64);
      nn::ModulePtr ref = makeNn(c), twin = makeCu(c);
      testing::expect_twin_matches(*ref, *twin, x, dt, testing::TwinTolerance::for_dtype(dt), noncontiguous);
    }
  }
}

// A later in-place layer writing into the twin's output between forward and backward (as
// ReLU(true) does; here clamping at 0 and zeroing) leaves the gradient nn's, as nn's indices
// do (See Note [Pooling backward state]). float32, [2 x C x spatial] inputs.
inline void expect_backward_ignores_output_changes(const std::vector<PoolCfg>& cfgs, const PoolFactory& makeNn,
                                                   const PoolFactory& makeCu, bool max, int64_t channels = 3) {
  tensor::Generator gen(99);
  for (const PoolCfg& c : cfgs) {
    INFO(c.what);
    Shape shape{2, channels};
    for (int64_t s : c.spatial) shape.push_back(s);
    const Tensor x = (max ? distinct_input(shape, c.k.size(), gen) : tensor::uniform(shape, -1, 1, gen)).to(DType::Float32);
    nn::ModulePtr ref = makeNn(c), twin = makeCu(c);
    twin->to(gpu);
    const Tensor y = ref->forward(x);
    const Tensor g = tensor::uniform(y.sizes(), -1, 1, gen);
    const Tensor want = ref->backward(x, g).clone();
    const Tensor xg = x.to(gpu), gg = g.to(gpu);
    twin->forward(xg);
    twin->output.clamp_(0.0, 1e30);
    CHECK(tensor::max_abs_diff(twin->backward(xg, gg), want) < 1e-5);
    twin->forward(xg);
    twin->output.fill_(0.0);
    CHECK(tensor::max_abs_diff(twin->backward(xg, gg), want) < 1e-5);
  }
}

// The argument errors of a pooling twin built with kernel 2 and stride 2 (no padding) over
// `spatial` dims: `small` is a [C x spatial] input smaller than the kernel, `ok` one of 4 per dim.
inline void expect_pool_errors(nn::Module& twin, size_t spatial) {
  const std::string name = twin.type_name();
  twin.to(gpu);
  Shape ok{1}, small{1}, bad_rank{};
  for (size_t i = 0; i < spatial; ++i) {
    ok.push_back(4);
    small.push_back(1);
    bad_rank.push_back(4);
  }
  CHECK_THROWS_WITH_AS(twin.forward(tensor::zeros(ok)),
                       (name + "::updateOutput: expected input on a CUDA device, got " +
                        tensor::zeros(ok).description() + " (move it with .to(tensor::Device::cuda()))")
                           .c_str(),
                       tensor::Error);
  CHECK_THROWS_WITH_AS(
      twin.forward(tensor::zeros(ok, DType::Int64, gpu)),
      doctest::Contains((name + "::updateOutput: expected a float32, float64, float16 or bfloat16 input, got int64").c_str()),
      tensor::Error);
  CHECK_THROWS_WITH_AS(twin.forward(tensor::zeros(bad_rank, DType::Float32, gpu)),
                       doctest::Contains((name + "::updateOutput: expected " + (spatial == 2 ? "3D" : "4D")).c_str()),
                       tensor::Error);
  CHECK_THROWS_WITH_AS(twin.forward(tensor::zeros(small, DType::Float32, gpu)),
                       doctest::Contains((name + "::updateOutput: expected input of at least").c_str()), tensor::Error);

  const Tensor x = tensor::zeros(ok, DType::Float32, gpu);
  const Shape out = twin.forward(x).sizes();
  Shape wrong = out;
  wrong.back() += 1;
  CHECK_THROWS_WITH_AS(twin.backward(x, tensor::zeros(wrong, DType::Float32, gpu)),
                       (name + "::updateGradInput: expected gradOutput of the output's shape " + tensor::shape_str(out) +
                        ", got " + tensor::shape_str(wrong))
                           .c_str(),
                       tensor::Error);
  CHECK_THROWS_WITH_AS(twin.backward(x, tensor::zeros(out, DType::Float64, gpu)),
                       doctest::Contains("expected gradOutput of input's dtype and device"), tensor::Error);
  CHECK_THROWS_WITH_AS(twin.backward(x, tensor::zeros(out)),
                       doctest::Contains((name + "::updateGradInput: expected gradOutput on a CUDA device").c_str()),
                       tensor::Error);
  CHECK(twin.backward(x, tensor::zeros(out, DType::Float32, gpu)).sizes() == ok);
}

// NaN, +Inf and -Inf in [2 x C x spatial] inputs, one per plane (Note [NaN and Inf] in
// nn/kernels/Activation.h): nn's non-finite and finite outputs and gradients, in float32,
// through cuDNN and through our ceil-mode kernel alike.
inline void expect_pool_twins_nonfinite(const std::vector<PoolCfg>& cfgs, const PoolFactory& makeNn,
                                        const PoolFactory& makeCu, bool max, int64_t channels = 3) {
  tensor::Generator gen(71);
  for (const PoolCfg& c : cfgs) {
    INFO(c.what);
    Shape shape{2, channels};
    for (int64_t s : c.spatial) shape.push_back(s);
    const Tensor x = max ? distinct_input(shape, c.k.size(), gen) : tensor::uniform(shape, -1, 1, gen, DType::Float64);
    nn::ModulePtr ref = makeNn(c), twin = makeCu(c);
    testing::expect_twin_nonfinite_matches(*ref, *twin, x);
  }
}

}  // namespace pooltwin

// test_Fuse.cpp: cudnn::fuse (Note [Fusion] in cudnn/ops/conv_search.cpp, Note [Fusion as a rewrite]
// in cudnn/Fuse.cpp). Each fused convolution + activation pair, a cudnn.FusedConvolution, must
// give the unfused nn pair's answers (forward, gradInput, every parameter gradient), NaN and
// Inf included, run as one graph operation where cuDNN has an engine for it, leave what cannot
// fuse alone, print as fused, and come apart again with unfuse. The printing and model files
// without a GPU: test_FuseRewrite.cpp.
#include <doctest/doctest.h>

#include <utility>

#include "cudnn/ELU.h"
#include "cudnn/Fuse.h"
#include "cudnn/FusedConvolution.h"
#include "cudnn/ReLU.h"
#include "cudnn/Sigmoid.h"
#include "cudnn/SpatialConvolution.h"
#include "cudnn/SpatialDilatedConvolution.h"
#include "cudnn/SpatialFullConvolution.h"
#include "cudnn/Tanh.h"
#include "cudnn/core/Config.h"
#include "cudnn/ops/conv.h"  // plan()'s interface
#include "nn/ELU.h"
#include "nn/FusedConvolution.h"
#include "nn/ReLU.h"
#include "nn/Sequential.h"
#include "nn/Sigmoid.h"
#include "nn/SpatialConvolution.h"
#include "nn/SpatialDilatedConvolution.h"
#include "nn/SpatialFullConvolution.h"
#include "nn/Tanh.h"
#include "tests/support/TwinCheck.h"

using namespace tensor;
using namespace testing;

namespace {

// conv+ReLU, conv(no bias)+Tanh, dilated conv+Sigmoid, full conv+ReLU (not fusable: transposed),
// conv+ELU (no ELU epilogue: that convolution may fuse its bias alone): three pairs and one bias.
template <bool Twin>
std::shared_ptr<nn::Sequential> network() {
  using Conv = std::conditional_t<Twin, cudnn::SpatialConvolution, nn::SpatialConvolution>;
  using Dilated = std::conditional_t<Twin, cudnn::SpatialDilatedConvolution, nn::SpatialDilatedConvolution>;
  using Full = std::conditional_t<Twin, cudnn::SpatialFullConvolution, nn::SpatialFullConvolution>;
  using ReLU = std::conditional_t<Twin, cudnn::ReLU, nn::ReLU>;
  using Tanh = std::conditional_t<Twin, cudnn::Tanh, nn::Tanh>;
  using Sigmoid = std::conditional_t<Twin, cudnn::Sigmoid, nn::Sigmoid>;
  using ELU = std::conditional_t<Twin, cudnn::ELU, nn::ELU>;
  auto no_bias = std::make_shared<Conv>(8, 8, 3, 3, 1, 1, 1, 1);
  no_bias->noBias();
  return std::make_shared<nn::Sequential>(std::initializer_list<nn::ModulePtr>{
      std::make_shared<Conv>(3, 8, 3, 3, 1, 1, 1, 1), std::make_shared<ReLU>(), no_bias, std::make_shared<Tanh>(),
      std::make_shared<Dilated>(8, 8, 3, 3, 1, 1, 2, 2, 2, 2), std::make_shared<Sigmoid>(),
      std::make_shared<Full>(8, 8, 3, 3, 1, 1, 1, 1), std::make_shared<ReLU>(), std::make_shared<Conv>(8, 4, 1, 1),
      std::make_shared<ELU>()});
}

// What cudnn::fuse does to the twin network, done to the nn one: each plain convolution followed
// by a ReLU, Tanh or Sigmoid becomes an nn.FusedConvolution of the two (the nn pair computed in
// turn), so the reference has the fused network's structure and state names.
void fuse_reference(nn::Sequential& net) {
  using A = nn::PointwiseBase::Activation;
  for (size_t i = 0; i + 1 < net.modules.size(); ++i) {
    const auto* conv = dynamic_cast<const nn::ConvolutionBase*>(net.modules[i].get());
    const auto* act = dynamic_cast<const nn::PointwiseBase*>(net.modules[i + 1].get());
    if (!conv || conv->transposed() || !act) continue;
    if (act->activation() != A::ReLU && act->activation() != A::Tanh && act->activation() != A::Sigmoid) continue;
    net.modules[i] = std::make_shared<nn::FusedConvolution>(net.modules[i], net.modules[i + 1]);
    net.modules.erase(net.modules.begin() + static_cast<std::ptrdiff_t>(i) + 1);
  }
}

// The plan of the convolution at modules[i], or of the convolution inside a fused pair there.
const cudnn::ConvPlan& plan_of(nn::Module& net, size_t i) {
  nn::ModulePtr m = dynamic_cast<nn::Sequential&>(net).modules[i];
  if (auto* fused = dynamic_cast<cudnn::FusedConvolution*>(m.get())) m = fused->modules[0];
  return dynamic_cast<cudnn::SpatialConvolution&>(*m).plan();
}

}  // namespace

// Both search policies: a guess never fuses a bias alone; a timed search (benchmark=true) does
// where it times faster (Note [Fusing a bias alone]), so both of its outcomes are covered.
TEST_CASE("fuse: three pairs and one bias fuse, the rest stays; nn's answers in float32, float16 and bfloat16") {
  for (const bool timed : {false, true}) {
    cudnn::ScopedConfig flags(timed ? "allow_tf32=false,benchmark=true" : "allow_tf32=false");
    Generator gen(timed ? 5104 : 5101);
    for (DType dt : {DType::Float32, DType::Float16, DType::BFloat16}) {
      const std::string what = std::string(name(dt)) + (timed ? ", timed" : ", guessed");
      INFO(what);
      auto ref = network<false>();
      fuse_reference(*ref);
      auto twin = network<true>();
      CHECK(cudnn::fuse(*twin) == 4);
      CHECK(cudnn::fuse(*twin) == 0);  // already fused
      CHECK(twin->size() == 7);
      CHECK(twin->get(0)->str().rfind("cudnn.FusedConvolution(cudnn.SpatialConvolution(3 -> 8", 0) == 0);
      expect_twin_matches(*ref, *twin, uniform({4, 3, 12, 12}, -1, 1, gen, DType::Float64), dt,
                          TwinTolerance::for_dtype(dt));
      if (dt == DType::Float32) {
        // the float32 conv + bias + ReLU runs as one graph operation on cuDNN 9 (H100, H200)
        CHECK(plan_of(*twin, 0).fused_algorithm() >= cudnn::kGraphEngine);
      }
      MESSAGE(what, ": fused engines ran for conv+ReLU: ", plan_of(*twin, 0).fused_algorithm() >= 0,
              ", conv+Tanh: ", plan_of(*twin, 1).fused_algorithm() >= 0,
              ", conv+bias alone: ", plan_of(*twin, 5).fused_algorithm() >= 0);
      if (!timed) CHECK(plan_of(*twin, 5).fused_algorithm() == -1);
      // the pre-activation is never formed: the fused pair's convolution holds no output
      CHECK_FALSE(dynamic_cast<cudnn::FusedConvolution&>(*twin->get(0)).modules[0]->output.defined());
    }
  }
}

TEST_CASE("fuse: NaN and Inf give nn's answers, fused or not, guessed or timed") {
  Generator gen(5102);
  for (const auto& [fuse, timed] : {std::pair{true, false}, std::pair{true, true}, std::pair{false, false}}) {
    INFO("fused ", fuse, ", timed ", timed);
    cudnn::ScopedConfig flags(timed ? "allow_tf32=false,benchmark=true" : "allow_tf32=false");
    auto ref = network<false>();
    auto twin = network<true>();
    if (fuse) {
      fuse_reference(*ref);
      CHECK(cudnn::fuse(*twin) == 4);
    }
    const Tensor x = with_nonfinite(uniform({2, 3, 10, 10}, -1, 1, gen, DType::Float64));
    expect_twin_nonfinite_matches(*ref, *twin, x);
  }
}

TEST_CASE("unfuse restores three-step passes with the same results; training steps agree") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  Generator gen(5103);
  auto twin = network<true>();
  twin->to(Device::cuda(0));
  const Tensor x = uniform({2, 3, 12, 12}, -1, 1, gen, DType::Float32, Device::cuda(0));
  const Tensor g = uniform({2, 4, 12, 12}, -1, 1, gen, DType::Float32, Device::cuda(0));
  auto pass = [&] {
    twin->zeroGradParameters();
    const Tensor y = twin->forward(x).clone();
    const Tensor dx = twin->backward(x, g).clone();
    std::vector<Tensor> grads;
    for (const Tensor& p : twin->gradParameters()) grads.push_back(p.clone());
    return std::make_tuple(y, dx, grads);
  };
  const auto plain = pass();
  CHECK(cudnn::fuse(*twin) == 4);
  const auto fused = pass();
  CHECK(cudnn::unfuse(*twin) == 4);
  CHECK(cudnn::unfuse(*twin) == 0);
  const auto again = pass();
  CHECK(rel_norm_error(std::get<0>(fused), std::get<0>(plain)) < 1e-5);
  CHECK(rel_norm_error(std::get<1>(fused), std::get<1>(plain)) < 1e-4);
  for (size_t i = 0; i < std::get<2>(plain).size(); ++i) {
    CHECK(rel_norm_error(std::get<2>(fused)[i], std::get<2>(plain)[i]) < 1e-4);
  }
  CHECK(max_abs_diff(std::get<0>(again), std::get<0>(plain)) == 0);
  CHECK(max_abs_diff(std::get<1>(again), std::get<1>(plain)) == 0);
}

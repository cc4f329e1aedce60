// test_GradInputNeeded.cpp: the gradInput switch on the cudnn backend (Note [gradInput not
// needed] in nn/Module.cpp): converted networks give the same parameter gradients with and
// without it (and nn's, within the twin tolerance), leave gradInput empty where it is off,
// skip the convolution's backward-data pass, and keep the switch through convert.
#include <doctest/doctest.h>

#include "convert/Convert.h"
#include "cudnn/core/Config.h"
#include "cudnn/SpatialConvolution.h"
#include "tests/support/GradCheck.h"
#include "tests/support/TwinCheck.h"
#include "tests/support/GradInputCases.h"

using namespace tensor;
using namespace testing;

namespace {

const Device gpu = Device::cuda(0);

std::vector<Tensor> gradients_of(nn::Module& net, const Tensor& x, const Tensor& g) {
  net.zeroGradParameters();
  net.forward(x);
  net.backward(x, g);
  std::vector<Tensor> out;
  for (const Tensor& t : net.gradParameters()) out.push_back(t.to(Device::cpu()).to(DType::Float64));
  return out;
}

}  // namespace

TEST_CASE("cudnn: the same parameter gradients with and without gradInput, and nn's") {
  cudnn::ScopedConfig flags("allow_tf32=false,deterministic=true");
  for (const GradInputCase& c : grad_input_cases()) {
    INFO(c.name);
    manual_seed(7);
    auto reference = c.build();
    reference->to(DType::Float64);
    manual_seed(7);
    nn::ModulePtr with = nn::convert(c.build(), cudnn::backend);
    manual_seed(7);
    nn::ModulePtr without = nn::convert(c.build(), cudnn::backend);
    without->setGradInputNeeded(false);
    Generator gen(11);
    const Tensor x = uniform(c.input, -1, 1, gen, DType::Float64);
    const Tensor g = uniform(reference->forward(x).sizes(), -1, 1, gen, DType::Float64);
    const Tensor xg = x.to(DType::Float32).to(gpu), gg = g.to(DType::Float32).to(gpu);
    const auto want = gradients_of(*reference, x, g);
    const auto a = gradients_of(*with, xg, gg);
    const auto b = gradients_of(*without, xg, gg);
    REQUIRE(a.size() == want.size());
    REQUIRE(b.size() == want.size());
    for (size_t i = 0; i < a.size(); ++i) {
      INFO("gradient " << i);
      // ||a - b|| / ||b||, as TwinCheck measures; the same kernels on the same data (atomics in
      // cuDNN's sums may reorder), and nn within the twin tolerance
      CHECK(rel_norm_error(b[i], a[i]) <= 1e-5);
      CHECK(rel_norm_error(b[i], want[i]) <= TwinTolerance::for_dtype(DType::Float32).backward);
    }
    CHECK(with->gradInput.defined());
    CHECK(without->gradInput.defined() == !c.skipsGradInput);
    CHECK(nn::child_at(*without, *without->children(), 0, "test").gradInput.defined() == !c.skipsGradInput);
    CHECK(nn::child_at(*without, *without->children(), 1, "test").gradInput.defined());
  }
}

TEST_CASE("cudnn: a first convolution without gradInput runs no backward-data pass; convert keeps the switch") {
  auto net = grad_input_cases()[0].build();
  net->setGradInputNeeded(false);
  nn::ModulePtr gpuNet = nn::convert(net, cudnn::backend);
  auto& conv = dynamic_cast<cudnn::SpatialConvolution&>(*(*gpuNet->children())[0]);
  CHECK_FALSE(conv.gradInputNeeded());
  CHECK((*gpuNet->children())[1]->gradInputNeeded());
  const Tensor x = uniform({3, 2, 8, 8}, -1, 1, default_generator(), DType::Float32, gpu);
  const Tensor y = gpuNet->forward(x);
  gpuNet->backward(x, uniform(y.sizes(), -1, 1, default_generator(), DType::Float32, gpu));
  CHECK_FALSE(conv.gradInput.defined());
  CHECK_FALSE(gpuNet->gradInput.defined());
  CHECK(conv.gradWeight.abs().sum().item() > 0);
  // back to nn: still off
  nn::ModulePtr back = nn::convert(gpuNet, nn::backend);
  CHECK_FALSE((*back->children())[0]->gradInputNeeded());
}

// test_Module.cpp: what the base class derives from visitState: state dicts, loading with
// mismatch reports, dtype conversion, memory format, train/evaluate, apply.
#include <doctest/doctest.h>

#include "nn/Buffers.h"
#include "nn/LayerNorm.h"
#include "nn/Linear.h"
#include "nn/Sequential.h"
#include "nn/SpatialConvolution.h"
#include "nn/VolumetricConvolution.h"

using namespace tensor;

namespace {
nn::Sequential make_net() {
  return nn::Sequential{std::make_shared<nn::Linear>(4, 3), std::make_shared<nn::Linear>(3, 2, false)};
}
}  // namespace

TEST_CASE("stateDict and loadStateDict") {
  nn::Sequential a = make_net(), b = make_net();
  const auto state = a.stateDict();
  CHECK(state.size() == 3);
  CHECK(state.count("0.weight"));
  CHECK(state.count("0.bias"));
  CHECK(state.count("1.weight"));
  b.loadStateDict(state);
  for (const auto& [name, t] : b.stateDict()) CHECK(max_abs_diff(t, state.at(name)) == 0);
  // loading copies: the source is not aliased
  CHECK_FALSE(b.stateDict().at("0.weight").shares_storage(state.at("0.weight")));

  auto bad = state;
  bad.erase("0.bias");
  bad["1.weight"] = zeros({2, 4});
  bad["2.weight"] = zeros({1});
  try {
    b.loadStateDict(bad);
    FAIL("expected an error");
  } catch (const Error& e) {
    const std::string msg = e.what();
    CHECK(msg.find("nn.Sequential::loadStateDict: 3 mismatches:") == 0);
    CHECK(msg.find("missing '0.bias' [3]") != std::string::npos);
    CHECK(msg.find("'1.weight' has shape [2 x 4], expected [2 x 3]") != std::string::npos);
    CHECK(msg.find("unexpected '2.weight' [1]") != std::string::npos);
  }
  auto partial = state;
  partial.erase("0.bias");
  b.loadStateDict(partial, false);  // non-strict: missing keys are fine
  // a load converts dtypes
  auto as_double = state;
  for (auto& [_, t] : as_double) t = t.to(DType::Float64);
  b.loadStateDict(as_double);
  CHECK(b.stateDict().at("0.weight").dtype() == DType::Float32);
}

TEST_CASE("to(dtype), train/evaluate, apply, zeroGradParameters") {
  nn::Sequential net = make_net();
  net.to(DType::Float64);
  for (auto& p : net.parameters()) CHECK(p.dtype() == DType::Float64);
  for (auto& g : net.gradParameters()) CHECK(g.dtype() == DType::Float64);
  CHECK(net.forward(zeros({2, 4}, DType::Float64)).dtype() == DType::Float64);
  CHECK(net.isTraining());
  net.evaluate();
  int visited = 0;
  net.apply([&](nn::Module& m) {
    CHECK_FALSE(m.isTraining());
    ++visited;
  });
  CHECK(visited == 3);
  net.train();
  CHECK(net.get(1)->isTraining());
  for (auto& g : net.gradParameters()) g.fill_(1);
  net.zeroGradParameters();
  for (auto& g : net.gradParameters()) CHECK(g.abs().max().item() == 0);
  // nn modules compute on the CPU: moving them to the CPU is a no-op, and the
  // parameters keep their identity
  const Tensor w = net.parameters()[0];
  net.to(Device::cpu());
  CHECK(net.parameters()[0].is_same_view(w));
}

TEST_CASE("to(MemoryFormat): the convolutions' filters and gradients, nothing else; values and identity of the rest") {
  auto conv = std::make_shared<nn::SpatialConvolution>(3, 4, 3, 3);
  auto conv3d = std::make_shared<nn::VolumetricConvolution>(2, 3, 3, 3, 3);
  auto norm = std::make_shared<nn::LayerNorm>(Shape{2, 3, 4, 5});  // 4-d parameters it reads row-major
  auto linear = std::make_shared<nn::Linear>(4, 3);
  nn::Sequential net{conv, conv3d, norm, linear};
  const auto before = net.stateDict();
  const Tensor linearWeight = linear->weight, convBias = conv->bias;
  net.to(MemoryFormat::ChannelsLast);
  for (nn::ConvolutionBase* c :
       {static_cast<nn::ConvolutionBase*>(conv.get()), static_cast<nn::ConvolutionBase*>(conv3d.get())}) {
    CHECK(nn::is_channels_last_parameter(c->weight));
    CHECK(nn::is_channels_last_parameter(c->gradWeight));
    CHECK_FALSE(c->weight.is_contiguous());
  }
  CHECK(norm->weight.is_contiguous());
  CHECK(norm->gradWeight.is_contiguous());
  CHECK(linear->weight.is_same_view(linearWeight));
  CHECK(conv->bias.is_same_view(convBias));
  for (const auto& [name, t] : net.stateDict()) {
    INFO(name);
    CHECK(max_abs_diff(t, before.at(name)) == 0);
  }
  // loading values keeps the layout; to(Contiguous) lays the filters back out row-major
  net.loadStateDict(before);
  CHECK(nn::is_channels_last_parameter(conv->weight));
  net.to(MemoryFormat::Contiguous);
  for (auto& p : net.parameters()) CHECK(p.is_contiguous());
  for (auto& g : net.gradParameters()) CHECK(g.is_contiguous());
}

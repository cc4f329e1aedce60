// test_FuseRewrite.cpp: cudnn::fuse as a rewrite one can see (no GPU needed: the twins are
// built, fused, printed, described, rebuilt and converted back on the CPU). Each fusable
// (convolution, activation) pair becomes one cudnn.FusedConvolution that prints, is described
// in model files, loads again, converts to nn as nn.FusedConvolution of the nn pair, and
// unfuse gives the flat pair back; the activation twins keep no pass-through state.
#include <doctest/doctest.h>

#include <algorithm>

#include "convert/Convert.h"
#include "convert/ModelFile.h"
#include "cudnn/ELU.h"
#include "cudnn/Fuse.h"
#include "cudnn/FusedConvolution.h"
#include "cudnn/ReLU.h"
#include "cudnn/SpatialConvolution.h"
#include "cudnn/SpatialFullConvolution.h"
#include "cudnn/Tanh.h"
#include "nn/FusedConvolution.h"
#include "nn/ReLU.h"
#include "nn/Residual.h"
#include "nn/Sequential.h"
#include "nn/SpatialConvolution.h"

namespace {

// conv+ReLU (fuses), full conv+Tanh (transposed: stays), conv+ELU (no ELU epilogue: stays),
// conv+Tanh inside a nested Sequential (fuses).
std::shared_ptr<nn::Sequential> network() {
  auto inner = std::make_shared<nn::Sequential>(std::initializer_list<nn::ModulePtr>{
      std::make_shared<cudnn::SpatialConvolution>(4, 4, 1, 1), std::make_shared<cudnn::Tanh>()});
  return std::make_shared<nn::Sequential>(std::initializer_list<nn::ModulePtr>{
      std::make_shared<cudnn::SpatialConvolution>(3, 4, 3, 3, 1, 1, 1, 1), std::make_shared<cudnn::ReLU>(),
      std::make_shared<cudnn::SpatialFullConvolution>(4, 4, 3, 3), std::make_shared<cudnn::Tanh>(),
      std::make_shared<cudnn::SpatialConvolution>(4, 4, 1, 1), std::make_shared<cudnn::ELU>(), inner});
}

std::vector<std::string> state_names(nn::Module& m) {
  std::vector<std::string> out;
  for (const auto& [name, _] : m.stateDict()) out.push_back(name);
  return out;
}

}  // namespace

TEST_CASE("fuse rewrites each fusable pair into a cudnn.FusedConvolution that prints as one") {
  auto net = network();
  // two pairs, and the bias of the plain convolution before the ELU (not shown: same result)
  CHECK(cudnn::fuse(*net) == 3);
  REQUIRE(net->size() == 6);
  const auto* fused = dynamic_cast<const cudnn::FusedConvolution*>(net->get(0).get());
  REQUIRE(fused != nullptr);
  CHECK(fused->str() == "cudnn.FusedConvolution(cudnn.SpatialConvolution(3 -> 4, 3x3, 1,1, 1,1) + cudnn.ReLU)");
  CHECK(net->get(1)->type_name() == "cudnn.SpatialFullConvolution");
  CHECK(net->get(2)->type_name() == "cudnn.Tanh");
  CHECK(net->get(4)->type_name() == "cudnn.ELU");
  auto& inner = dynamic_cast<nn::Sequential&>(*net->get(5));
  REQUIRE(inner.size() == 1);
  CHECK(inner.get(0)->type_name() == "cudnn.FusedConvolution");
  CHECK(net->str().find("(1): cudnn.FusedConvolution(cudnn.SpatialConvolution(3 -> 4") != std::string::npos);
  CHECK(cudnn::fuse(*net) == 0);  // nothing left to fuse
}

TEST_CASE("a fused network keeps its parameters in order; its state names gain the pair's index") {
  auto plain = network();
  auto fused = network();
  cudnn::fuse(*fused);
  const auto a = plain->parameters(), b = fused->parameters();
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) CHECK(a[i].sizes() == b[i].sizes());
  const std::vector<std::string> names = state_names(*fused);
  auto has = [&](const std::string& n) { return std::find(names.begin(), names.end(), n) != names.end(); };
  CHECK(has("0.0.weight"));  // was 0.weight
  CHECK(has("1.weight"));    // the full convolution, was 2.weight
  CHECK(has("5.0.0.bias"));  // the nested pair's, was 6.0.bias
  CHECK_FALSE(has("6.0.bias"));
}

TEST_CASE("model files describe the fusion and load it again") {
  auto net = network();
  cudnn::fuse(*net);
  const tensor::Json doc = nn::describe_model(*net);
  CHECK(doc.dump().find("\"cudnn.FusedConvolution\"") != std::string::npos);
  nn::ModulePtr back = nn::build_model(doc);
  CHECK(back->str() == net->str());
  CHECK(state_names(*back) == state_names(*net));
}

TEST_CASE("convert to nn gives nn.FusedConvolution of the nn pair; unfuse gives the flat pair back") {
  auto net = network();
  const std::string printed = net->str();
  cudnn::fuse(*net);
  nn::ModulePtr asNn = nn::convert(net, nn::backend);
  auto& seq = dynamic_cast<nn::Sequential&>(*asNn);
  CHECK(seq.get(0)->str() == "nn.FusedConvolution(nn.SpatialConvolution(3 -> 4, 3x3, 1,1, 1,1) + nn.ReLU)");
  CHECK(dynamic_cast<nn::FusedConvolution*>(seq.get(0).get())->backendKind() == nn::Backend::nn);
  auto fused = network();
  CHECK(cudnn::fuse(*fused) == 3);
  CHECK(cudnn::unfuse(*fused) == 3);
  CHECK(cudnn::unfuse(*fused) == 0);
  CHECK(fused->str() == printed);
}

TEST_CASE("unfuse splices a pair into a Sequential and gives it as an nn.Sequential elsewhere") {
  auto pair = [] {
    return std::make_shared<cudnn::FusedConvolution>(std::make_shared<cudnn::SpatialConvolution>(2, 2, 1, 1),
                                                     std::make_shared<cudnn::ReLU>());
  };
  auto holder = std::make_shared<nn::Sequential>(std::initializer_list<nn::ModulePtr>{pair()});
  CHECK(cudnn::unfuse(*holder) == 1);
  REQUIRE(holder->size() == 2);
  CHECK(holder->get(0)->type_name() == "cudnn.SpatialConvolution");
  CHECK(holder->get(1)->type_name() == "cudnn.ReLU");
  auto residual = std::make_shared<nn::Residual>(pair());
  CHECK(cudnn::unfuse(*residual) == 1);
  CHECK(residual->block()->str().rfind("nn.Sequential {", 0) == 0);
}

TEST_CASE("nn.FusedConvolution refuses children that are not a convolution and an activation") {
  CHECK_THROWS_WITH_AS(
      nn::FusedConvolution(std::make_shared<nn::ReLU>(), std::make_shared<nn::SpatialConvolution>(2, 2, 1, 1)),
      doctest::Contains("expected a convolution and an activation (nn.ConvolutionBase, nn.PointwiseBase), got 2 "
                        "modules (nn.ReLU, nn.SpatialConvolution)"),
      tensor::Error);
}

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
#include "cudnn/FusedBatchNormalization.h"
#include "cudnn/FusedConvolution.h"
#include "cudnn/FusedResidual.h"
#include "cudnn/ReLU.h"
#include "cudnn/Residual.h"
#include "cudnn/SpatialBatchNormalization.h"
#include "cudnn/SpatialConvolution.h"
#include "cudnn/SpatialFullConvolution.h"
#include "cudnn/Tanh.h"
#include "nn/FusedBatchNormalization.h"
#include "nn/FusedConvolution.h"
#include "nn/FusedResidual.h"
#include "nn/ReLU.h"
#include "nn/Residual.h"
#include "nn/Sequential.h"
#include "nn/SpatialBatchNormalization.h"
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

// conv (bias fused alone), batch norm + ReLU (fuses), batch norm + Tanh (stays: cuDNN's batch
// norm has no other activation), and inside a Residual's block a batch norm + ReLU (fuses).
std::shared_ptr<nn::Sequential> batch_norm_network() {
  auto block = std::make_shared<nn::Sequential>(std::initializer_list<nn::ModulePtr>{
      std::make_shared<cudnn::SpatialBatchNormalization>(4), std::make_shared<cudnn::ReLU>()});
  return std::make_shared<nn::Sequential>(std::initializer_list<nn::ModulePtr>{
      std::make_shared<cudnn::SpatialConvolution>(3, 4, 3, 3, 1, 1, 1, 1),
      std::make_shared<cudnn::SpatialBatchNormalization>(4), std::make_shared<cudnn::ReLU>(),
      std::make_shared<cudnn::SpatialBatchNormalization>(4), std::make_shared<cudnn::Tanh>(),
      std::make_shared<nn::Residual>(block)});
}

TEST_CASE("fuse rewrites batch norm + ReLU into a cudnn.FusedBatchNormalization; files, convert and unfuse see it") {
  auto net = batch_norm_network();
  const std::string printed = net->str();
  CHECK(cudnn::fuse(*net) == 3);  // two batch-norm pairs and the convolution's bias
  REQUIRE(net->size() == 5);
  CHECK(net->get(1)->str() == "cudnn.FusedBatchNormalization(cudnn.SpatialBatchNormalization (4D) (4) + cudnn.ReLU)");
  CHECK(net->get(2)->type_name() == "cudnn.SpatialBatchNormalization");
  CHECK(net->get(3)->type_name() == "cudnn.Tanh");
  auto& residual = dynamic_cast<nn::Residual&>(*net->get(4));
  auto& block = dynamic_cast<nn::Sequential&>(*residual.block());
  REQUIRE(block.size() == 1);
  CHECK(block.get(0)->type_name() == "cudnn.FusedBatchNormalization");
  CHECK(cudnn::fuse(*net) == 0);
  std::vector<std::string> names = state_names(*net);
  CHECK(std::find(names.begin(), names.end(), "1.0.running_mean") != names.end());  // was 1.running_mean
  CHECK(std::find(names.begin(), names.end(), "4.0.0.0.weight") != names.end());    // was 4.0.0.weight

  const tensor::Json doc = nn::describe_model(*net);
  CHECK(doc.dump().find("\"cudnn.FusedBatchNormalization\"") != std::string::npos);
  nn::ModulePtr back = nn::build_model(doc);
  CHECK(back->str() == net->str());
  CHECK(state_names(*back) == names);

  nn::ModulePtr asNn = nn::convert(back, nn::backend);
  auto& seq = dynamic_cast<nn::Sequential&>(*asNn);
  CHECK(seq.get(1)->str() == "nn.FusedBatchNormalization(nn.SpatialBatchNormalization (4D) (4) + nn.ReLU)");
  CHECK(dynamic_cast<nn::FusedBatchNormalization*>(seq.get(1).get()) != nullptr);
  CHECK(seq.get(1)->backendKind() == nn::Backend::nn);

  CHECK(cudnn::unfuse(*net) == 3);
  CHECK(cudnn::unfuse(*net) == 0);
  CHECK(net->str() == printed);
}

TEST_CASE("fuse leaves an nn batch norm or an nn ReLU (convert's exclude) unfused") {
  auto net = std::make_shared<nn::Sequential>(std::initializer_list<nn::ModulePtr>{
      std::make_shared<nn::SpatialBatchNormalization>(4), std::make_shared<cudnn::ReLU>(),
      std::make_shared<cudnn::SpatialBatchNormalization>(4), std::make_shared<nn::ReLU>()});
  CHECK(cudnn::fuse(*net) == 0);
  CHECK(net->size() == 4);
}

TEST_CASE("nn.FusedBatchNormalization refuses children that are not a batch norm and an activation") {
  CHECK_THROWS_WITH_AS(
      nn::FusedBatchNormalization(std::make_shared<nn::SpatialConvolution>(2, 2, 1, 1), std::make_shared<nn::ReLU>()),
      doctest::Contains("nn.FusedBatchNormalization::FusedBatchNormalization: expected a batch normalization and an "
                        "activation (nn.BatchNormalization, nn.PointwiseBase), got 2 modules (nn.SpatialConvolution, "
                        "nn.ReLU)"),
      tensor::Error);
}

TEST_CASE("fuse rewrites a Residual ending in a batch norm, and the ReLU after it, into a cudnn.FusedResidual") {
  // ResNet's unit: the block's inner batch norm + ReLU fuse first, then the unit's pair
  auto unit = [] {
    auto block = std::make_shared<nn::Sequential>(std::initializer_list<nn::ModulePtr>{
        std::make_shared<cudnn::SpatialConvolution>(4, 4, 1, 1), std::make_shared<cudnn::SpatialBatchNormalization>(4),
        std::make_shared<cudnn::ReLU>(), std::make_shared<cudnn::SpatialConvolution>(4, 4, 3, 3, 1, 1, 1, 1),
        std::make_shared<cudnn::SpatialBatchNormalization>(4)});
    return std::make_shared<nn::Sequential>(std::initializer_list<nn::ModulePtr>{
        std::make_shared<cudnn::Residual>(block), std::make_shared<cudnn::ReLU>()});
  };
  auto net = std::make_shared<nn::Sequential>(std::initializer_list<nn::ModulePtr>{unit(), unit()});
  // a Residual whose block does not end in a batch norm stays
  auto plainBlock = std::make_shared<nn::Sequential>(
      std::initializer_list<nn::ModulePtr>{std::make_shared<cudnn::SpatialConvolution>(4, 4, 1, 1)});
  net->add(std::make_shared<cudnn::Residual>(plainBlock)).add(std::make_shared<cudnn::ReLU>());
  const std::string printed = net->str();
  CHECK(cudnn::fuse(*net) == 2 * (1 + 1 + 2) + 1);  // per unit: two pairs, two biases; then the last conv's bias
  auto& first = dynamic_cast<nn::Sequential&>(*net->get(0));
  REQUIRE(first.size() == 1);
  CHECK(first.get(0)->type_name() == "cudnn.FusedResidual");
  CHECK(first.get(0)->str().rfind("cudnn.FusedResidual(cudnn.Residual {", 0) == 0);
  CHECK(net->get(2)->type_name() == "cudnn.Residual");
  CHECK(net->get(3)->type_name() == "cudnn.ReLU");
  CHECK(cudnn::fuse(*net) == 0);

  const tensor::Json doc = nn::describe_model(*net);
  nn::ModulePtr back = nn::build_model(doc);
  CHECK(back->str() == net->str());
  CHECK(state_names(*back) == state_names(*net));
  nn::ModulePtr asNn = nn::convert(back, nn::backend);
  auto* fusedNn = dynamic_cast<nn::FusedResidual*>(
      dynamic_cast<nn::Sequential&>(*dynamic_cast<nn::Sequential&>(*asNn).get(0)).get(0).get());
  REQUIRE(fusedNn != nullptr);
  CHECK(fusedNn->backendKind() == nn::Backend::nn);
  CHECK(fusedNn->residual().type_name() == "nn.Residual");

  CHECK(cudnn::unfuse(*net) == 2 * (1 + 1 + 2) + 1);
  CHECK(net->str() == printed);
}

TEST_CASE("nn.FusedResidual refuses children that are not a residual unit and an activation") {
  CHECK_THROWS_WITH_AS(
      nn::FusedResidual(std::make_shared<nn::SpatialBatchNormalization>(2), std::make_shared<nn::ReLU>()),
      doctest::Contains("expected a residual unit and an activation (nn.Residual, nn.PointwiseBase), got 2 modules"),
      tensor::Error);
}

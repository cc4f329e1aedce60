// test_LoadWeights.cpp: load_weights' options (Note [Non-strict loading] in convert/ModelFile.cpp):
// the report of a non-strict load, key mapping, strict errors naming the file, NumPy .npz
// weights, and a PyTorch-style state dict of a network with batch norm (num_batches_tracked).
#include <doctest/doctest.h>

#include <cstdio>
#include <string>

#include "convert/ModelFile.h"
#include "nn/BatchNormalization.h"
#include "nn/Linear.h"
#include "nn/Sequential.h"
#include "tensor/Safetensors.h"
#include "tests/support/GradCheck.h"

using namespace tensor;

namespace {
std::shared_ptr<nn::Sequential> net_with_bn() {
  auto net = std::make_shared<nn::Sequential>();
  net->add(std::make_shared<nn::Linear>(3, 2));
  net->add(std::make_shared<nn::BatchNormalization>(2));
  return net;
}
std::string temp(const std::string& name) { return "/tmp/cudnn_nn_test_loadweights_" + name; }
}  // namespace

TEST_CASE("non-strict load_weights reports missing, unexpected and mismatched tensors and loads the rest") {
  manual_seed(4);
  auto src = net_with_bn();
  src->forward(uniform({4, 3}, -1, 1));  // a training forward: num_batches_tracked = 1
  auto state = src->stateDict();
  CHECK(state.at("1.num_batches_tracked").item() == 1);
  state["extra.weight"] = zeros({2});
  state["1.bias"] = zeros({5});  // wrong shape
  state.erase("0.bias");
  const std::string path = temp("partial.safetensors");
  save_safetensors(path, state);

  auto dst = net_with_bn();
  const Tensor bias0 = dst->stateDict().at("0.bias").clone(), bnBias = dst->stateDict().at("1.bias").clone();
  const nn::WeightsReport r = nn::load_weights(*dst, path, {.strict = false});
  CHECK_FALSE(r.complete());
  CHECK(r.missing == std::vector<std::string>{"0.bias"});
  CHECK(r.unexpected == std::vector<std::string>{"extra.weight"});
  REQUIRE(r.mismatched.size() == 1);
  CHECK(r.mismatched[0] == "1.bias: file float32 [5] on cpu, network float32 [2] on cpu");
  CHECK(r.loaded.size() == 5);  // 0.weight, 1.weight, running mean and var, num_batches_tracked
  const auto got = dst->stateDict();
  CHECK(max_abs_diff(got.at("0.weight"), src->stateDict().at("0.weight")) == 0);
  CHECK(got.at("1.num_batches_tracked").item() == 1);
  CHECK(max_abs_diff(got.at("0.bias"), bias0) == 0);  // untouched
  CHECK(max_abs_diff(got.at("1.bias"), bnBias) == 0);

  // strict: every problem in one error that names the file
  CHECK_THROWS_WITH_AS(
      nn::load_weights(*dst, path, {}),
      doctest::Contains(("nn::load_weights: " + path + ": nn.Sequential::loadStateDict: 3 mismatches").c_str()), Error);
  std::remove(path.c_str());
}

TEST_CASE("load_weights maps keys (a DataParallel 'module.' prefix, dropped keys) and reads .npz") {
  manual_seed(5);
  auto src = net_with_bn();
  std::map<std::string, Tensor> prefixed;
  for (const auto& [k, t] : src->stateDict()) prefixed["module." + k] = t;
  prefixed["module.head.weight"] = zeros({1});
  const std::string path = temp("prefixed.safetensors");
  save_safetensors(path, prefixed);
  auto dst = net_with_bn();
  auto strip = [](const std::string& k) { return k.starts_with("module.head.") ? std::string() : k.substr(7); };
  const nn::WeightsReport r = nn::load_weights(*dst, path, {.strict = true, .mapKey = strip});
  CHECK(r.complete());
  CHECK(max_abs_diff(dst->stateDict().at("0.weight"), src->stateDict().at("0.weight")) == 0);
  CHECK_THROWS_WITH_AS(nn::load_weights(*dst, path, {.mapKey = [](const std::string&) { return std::string("x"); }}),
                       doctest::Contains("expected distinct names after the key mapping, got 'x' twice"), Error);
  std::remove(path.c_str());

  // np.savez(path, weight=..., bias=...) of a Linear(3, 2)'s first two rows of arange / 4
  nn::Linear lin(3, 2);
  nn::load_weights(lin, std::string(CUDNN_NN_TEST_DATA) + "/npy/linear.npz");
  CHECK(lin.weight.get({1, 2}) == 6 / 4.0);
  CHECK(lin.bias.to_vector<double>() == std::vector<double>{1, -1});
  nn::Linear wrong(4, 2);
  CHECK_THROWS_WITH_AS(nn::load_weights(wrong, std::string(CUDNN_NN_TEST_DATA) + "/npy/linear.npz"),
                       doctest::Contains("linear.npz: nn.Linear::loadStateDict: 1 mismatch"), Error);
}

// Module::setBackwardHook: fires once per backward, after the module's gradients are in,
// children before their container, in reverse order through a Sequential (what
// DistributedDataParallel's bucket launches rely on).
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "nn/Concat.h"
#include "nn/Linear.h"
#include "nn/ReLU.h"
#include "nn/Sequential.h"

TEST_CASE("backward hooks: order, once per backward, gradients already accumulated") {
  tensor::manual_seed(3);
  auto l1 = std::make_shared<nn::Linear>(4, 5);
  auto relu = std::make_shared<nn::ReLU>();
  auto l2 = std::make_shared<nn::Linear>(5, 3);
  auto inner = std::make_shared<nn::Sequential>(std::initializer_list<nn::ModulePtr>{relu, l2});
  nn::Sequential net({l1, inner});
  std::vector<std::string> fired;
  std::vector<double> gradNorms;
  auto hook = [&](const std::string& name) {
    return [&fired, &gradNorms, name](nn::Module& m) {
      fired.push_back(name);
      double n = 0;
      for (auto& g : m.gradParameters()) n += g.norm();
      gradNorms.push_back(n);
    };
  };
  l1->setBackwardHook(hook("l1"));
  relu->setBackwardHook(hook("relu"));
  l2->setBackwardHook(hook("l2"));
  inner->setBackwardHook(hook("inner"));
  net.setBackwardHook(hook("net"));
  net.zeroGradParameters();
  const tensor::Tensor x = tensor::normal({2, 4}, 0, 1);
  const tensor::Tensor& y = net.forward(x);
  net.backward(x, tensor::ones(y.sizes()));
  CHECK(fired == std::vector<std::string>{"l2", "relu", "inner", "l1", "net"});
  CHECK(gradNorms[0] > 0);  // l2's gradients were in when its hook ran
  CHECK(gradNorms[3] > 0);
  fired.clear();
  net.forward(x);
  net.backward(x, tensor::ones(y.sizes()));
  CHECK(fired.size() == 5);
  l2->setBackwardHook({});  // cleared
  fired.clear();
  net.forward(x);
  net.backward(x, tensor::ones(y.sizes()));
  CHECK(fired == std::vector<std::string>{"relu", "inner", "l1", "net"});
}

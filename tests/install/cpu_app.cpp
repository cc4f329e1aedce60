// cpu_app.cpp: a CPU program built against one component of an installed cudnn-nn
// (scripts/check-install: pkg-config cudnn-nn-nn, and CMake's find_package(cudnn-nn
// COMPONENTS nn)). It links the tensor and nn libraries alone: no NCCL, MPI, cuDNN or cuBLAS
// on its link line (Note [pkg-config components] in meson.build).
#include <cstdio>
#include <memory>

#include "nn/Linear.h"
#include "nn/MSECriterion.h"
#include "nn/SGD.h"
#include "nn/Sequential.h"
#include "nn/Tanh.h"

int main() {
  tensor::manual_seed(1);
  auto net = std::make_shared<nn::Sequential>();
  net->add(std::make_shared<nn::Linear>(3, 8));
  net->add(std::make_shared<nn::Tanh>());
  net->add(std::make_shared<nn::Linear>(8, 1));
  nn::MSECriterion loss;
  nn::SGD sgd(net->parameters(), net->gradParameters(), 0.1);
  const tensor::Tensor x = tensor::uniform({16, 3}, -1, 1);
  const tensor::Tensor y = tensor::uniform({16, 1}, -1, 1);
  double first = 0, last = 0;
  for (int step = 0; step < 50; ++step) {
    net->zeroGradParameters();
    const double l = loss.forward(net->forward(x), y);
    net->backward(x, loss.backward(net->output, y));
    sgd.step();
    (step == 0 ? first : last) = l;
  }
  std::printf("cpu_app: loss %.4f -> %.4f\n", first, last);
  return last < first ? 0 : 1;
}

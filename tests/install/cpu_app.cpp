// cpu_app.cpp: a CPU training program built against one component of an installed cudnn-nn
// (scripts/check-install: pkg-config cudnn-nn-train, and CMake's find_package(cudnn-nn
// COMPONENTS train)). It links the tensor, nn and train libraries alone: no cuDNN, cuBLAS, NCCL
// or MPI on its link line (Note [pkg-config components] in meson.build).
#include <cstdio>
#include <memory>

#include "nn/Linear.h"
#include "nn/MSECriterion.h"
#include "nn/SGD.h"
#include "nn/Sequential.h"
#include "nn/Tanh.h"
#include "train/Data.h"

int main() {
  tensor::manual_seed(1);
  auto net = std::make_shared<nn::Sequential>();
  net->add(std::make_shared<nn::Linear>(3, 8));
  net->add(std::make_shared<nn::Tanh>());
  net->add(std::make_shared<nn::Linear>(8, 1));
  nn::MSECriterion loss;
  nn::SGD sgd(net->parameters(), net->gradParameters(), 0.1);
  auto data = std::make_shared<nn::TensorDataset>(
      std::vector<tensor::Tensor>{tensor::uniform({64, 3}, -1, 1), tensor::uniform({64, 1}, -1, 1)});
  nn::DataLoader::Options options;
  options.batchSize = 16;
  options.shuffle = true;
  nn::DataLoader loader(data, options);
  double first = -1, last = 0;
  for (int64_t epoch = 0; epoch < 20; ++epoch) {
    loader.setEpoch(epoch);
    double sum = 0;
    std::vector<tensor::Tensor> batch;
    while (loader.next(batch)) {
      net->zeroGradParameters();
      sum += loss.forward(net->forward(batch[0]), batch[1]);
      net->backward(batch[0], loss.backward(net->output, batch[1]));
      sgd.step();
    }
    (first < 0 ? first : last) = sum / static_cast<double>(loader.batchesPerEpoch());
  }
  std::printf("cpu_app: loss %.4f -> %.4f\n", first, last);
  return last < first ? 0 : 1;
}

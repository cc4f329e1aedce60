// Networks.h: the networks the samples build, from nn modules only (convert() them for the
// GPU): the convnet-benchmarks layers L1-L5, AlexNet ("one weird trick" variant, as
// convnet-benchmarks times it), VGG-11 (configuration A), ResNet-50 (bottleneck blocks
// through nn::Residual), a 2-layer LSTM (hidden 512, sequence 50, batch 64), and the
// cudnn.torch README's two-layer example, and the Fashion-MNIST sample's conv net ("fashion":
// batch 128 of 1 x 28 x 28, the CPU comparison of scripts/bench_torch.py --cpu).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nn/Sequential.h"
#include "tensor/Tensor.h"

namespace samples {

struct Benchmark {
  std::string name;
  std::shared_ptr<nn::Module> net;
  tensor::Shape input;  // with the batch size convnet-benchmarks uses
  size_t batchDim = 0;  // which entry of `input` is the batch (1 for the sequence-first lstm)
};

// name: L1..L5, alexnet, vgg11, resnet50, resnet50-graph (ResNet-50 as one nn::Graph, the graph
// container's cost), lstm, fashion; throws listing the names for anything else.
Benchmark make_benchmark(const std::string& name);
std::vector<std::string> benchmark_names();

std::shared_ptr<nn::Sequential> readme_network();

// The Fashion-MNIST sample's network: 2 x (conv 3x3 pad 1, batch norm, ReLU, max pool 2),
// Linear(64*7*7 -> hidden), ReLU, Dropout(0.25), Linear(hidden -> 10); input [N x 1 x 28 x 28].
std::shared_ptr<nn::Sequential> fashion_mnist_network(int64_t hidden = 256);  // conv 3->96 11x11 stride 3, ReLU

}  // namespace samples

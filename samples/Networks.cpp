// Networks.cpp
#include "samples/Networks.h"

#include <stdexcept>

#include "nn/CAddTable.h"
#include "nn/Dropout.h"
#include "nn/Graph.h"
#include "nn/LSTM.h"
#include "nn/Linear.h"
#include "nn/ReLU.h"
#include "nn/Residual.h"
#include "nn/SpatialAveragePooling.h"
#include "nn/SpatialBatchNormalization.h"
#include "nn/SpatialConvolution.h"
#include "nn/SpatialMaxPooling.h"
#include "nn/View.h"

namespace samples {

namespace {

using nn::ModulePtr;

ModulePtr conv(int64_t in, int64_t out, int64_t k, int64_t stride = 1, int64_t pad = 0) {
  return std::make_shared<nn::SpatialConvolution>(in, out, k, k, stride, stride, pad, pad);
}
ModulePtr relu() { return std::make_shared<nn::ReLU>(true); }
ModulePtr maxpool(int64_t k, int64_t stride, int64_t pad = 0) {
  return std::make_shared<nn::SpatialMaxPooling>(k, k, stride, stride, pad, pad);
}
ModulePtr bn(int64_t planes) { return std::make_shared<nn::SpatialBatchNormalization>(planes); }

std::shared_ptr<nn::Sequential> layer(int64_t in, int64_t out, int64_t k) {
  auto s = std::make_shared<nn::Sequential>();
  s->add(conv(in, out, k));
  return s;
}

std::shared_ptr<nn::Sequential> alexnet() {
  auto s = std::make_shared<nn::Sequential>();
  s->add(conv(3, 64, 11, 4, 2)).add(relu()).add(maxpool(3, 2));
  s->add(conv(64, 192, 5, 1, 2)).add(relu()).add(maxpool(3, 2));
  s->add(conv(192, 384, 3, 1, 1)).add(relu());
  s->add(conv(384, 256, 3, 1, 1)).add(relu());
  s->add(conv(256, 256, 3, 1, 1)).add(relu()).add(maxpool(3, 2));
  s->add(std::make_shared<nn::View>(256 * 6 * 6));
  s->add(std::make_shared<nn::Dropout>(0.5)).add(std::make_shared<nn::Linear>(256 * 6 * 6, 4096)).add(relu());
  s->add(std::make_shared<nn::Dropout>(0.5)).add(std::make_shared<nn::Linear>(4096, 4096)).add(relu());
  s->add(std::make_shared<nn::Linear>(4096, 1000));
  return s;
}

std::shared_ptr<nn::Sequential> vgg11() {
  auto s = std::make_shared<nn::Sequential>();
  int64_t in = 3;
  for (int64_t v : {64, -1, 128, -1, 256, 256, -1, 512, 512, -1, 512, 512, -1}) {
    if (v < 0) {
      s->add(maxpool(2, 2));
    } else {
      s->add(conv(in, v, 3, 1, 1)).add(relu());
      in = v;
    }
  }
  s->add(std::make_shared<nn::View>(512 * 7 * 7));
  s->add(std::make_shared<nn::Linear>(512 * 7 * 7, 4096)).add(relu()).add(std::make_shared<nn::Dropout>(0.5));
  s->add(std::make_shared<nn::Linear>(4096, 4096)).add(relu()).add(std::make_shared<nn::Dropout>(0.5));
  s->add(std::make_shared<nn::Linear>(4096, 1000));
  return s;
}

// 1x1 reduce, 3x3, 1x1 expand (x4), each with batch norm; projection shortcut when the
// shape changes; ReLU after the sum.
ModulePtr bottleneck(int64_t in, int64_t planes, int64_t stride) {
  auto block = std::make_shared<nn::Sequential>();
  block->add(conv(in, planes, 1)).add(bn(planes)).add(relu());
  block->add(conv(planes, planes, 3, stride, 1)).add(bn(planes)).add(relu());
  block->add(conv(planes, planes * 4, 1)).add(bn(planes * 4));
  ModulePtr shortcut;
  if (stride != 1 || in != planes * 4) {
    auto proj = std::make_shared<nn::Sequential>();
    proj->add(conv(in, planes * 4, 1, stride)).add(bn(planes * 4));
    shortcut = proj;
  }
  auto unit = std::make_shared<nn::Sequential>();
  unit->add(std::make_shared<nn::Residual>(block, shortcut)).add(relu());
  return unit;
}

std::shared_ptr<nn::Sequential> resnet50() {
  auto s = std::make_shared<nn::Sequential>();
  s->add(conv(3, 64, 7, 2, 3)).add(bn(64)).add(relu()).add(maxpool(3, 2, 1));
  int64_t in = 64;
  const int64_t blocks[4] = {3, 4, 6, 3};
  for (int stage = 0; stage < 4; ++stage) {
    const int64_t planes = int64_t(64) << stage;
    for (int64_t b = 0; b < blocks[stage]; ++b) {
      s->add(bottleneck(in, planes, b == 0 && stage > 0 ? 2 : 1));
      in = planes * 4;
    }
  }
  s->add(std::make_shared<nn::SpatialAveragePooling>(7, 7, 1, 1));
  s->add(std::make_shared<nn::View>(2048));
  s->add(std::make_shared<nn::Linear>(2048, 1000));
  return s;
}

// ResNet-50 again, as one nn::Graph: each bottleneck is nodes (block, shortcut or the input
// itself, CAddTable, ReLU) instead of a Residual container, the same modules in the same order,
// so a benchmark row pair shows what the graph container costs.
std::shared_ptr<nn::Graph> resnet50_graph() {
  nn::Node x = nn::Input();
  nn::Node h = x;
  for (const auto& m : {conv(3, 64, 7, 2, 3), bn(64), relu(), maxpool(3, 2, 1)}) h = nn::call(m, h);
  int64_t in = 64;
  const int64_t blocks[4] = {3, 4, 6, 3};
  for (int stage = 0; stage < 4; ++stage) {
    const int64_t planes = int64_t(64) << stage;
    for (int64_t b = 0; b < blocks[stage]; ++b) {
      const int64_t stride = b == 0 && stage > 0 ? 2 : 1;
      nn::Node path = h;
      for (const auto& m : {conv(in, planes, 1), bn(planes), relu(), conv(planes, planes, 3, stride, 1), bn(planes),
                            relu(), conv(planes, planes * 4, 1), bn(planes * 4)}) {
        path = nn::call(m, path);
      }
      nn::Node shortcut = h;
      if (stride != 1 || in != planes * 4) {
        shortcut = nn::call(bn(planes * 4), nn::call(conv(in, planes * 4, 1, stride), h));
      }
      h = nn::call(relu(), nn::call(std::make_shared<nn::CAddTable>(), {path, shortcut}));
      in = planes * 4;
    }
  }
  h = nn::call(std::make_shared<nn::SpatialAveragePooling>(7, 7, 1, 1), h);
  h = nn::call(std::make_shared<nn::View>(2048), h);
  h = nn::call(std::make_shared<nn::Linear>(2048, 1000), h);
  return std::make_shared<nn::Graph>(x, h);
}

}  // namespace

std::vector<std::string> benchmark_names() {
  return {"L1", "L2", "L3", "L4", "L5", "alexnet", "vgg11", "resnet50", "resnet50-graph", "lstm", "fashion"};
}

Benchmark make_benchmark(const std::string& name) {
  if (name == "L1") return {name, layer(3, 96, 11), {128, 3, 128, 128}};
  if (name == "L2") return {name, layer(64, 128, 9), {128, 64, 64, 64}};
  if (name == "L3") return {name, layer(128, 128, 9), {128, 128, 32, 32}};
  if (name == "L4") return {name, layer(128, 128, 7), {128, 128, 16, 16}};
  if (name == "L5") return {name, layer(384, 384, 3), {128, 384, 13, 13}};
  if (name == "alexnet") return {name, alexnet(), {128, 3, 224, 224}};
  if (name == "vgg11") return {name, vgg11(), {64, 3, 224, 224}};
  if (name == "resnet50") return {name, resnet50(), {32, 3, 224, 224}};
  if (name == "resnet50-graph") return {name, resnet50_graph(), {32, 3, 224, 224}};
  if (name == "lstm") {  // sequence first: [50 x 64 x 512]
    auto s = std::make_shared<nn::Sequential>();
    s->add(std::make_shared<nn::LSTM>(512, 512, 2));
    return {name, s, {50, 64, 512}, 1};
  }
  if (name == "fashion") return {name, fashion_mnist_network(), {128, 1, 28, 28}};
  std::string known;
  for (const auto& n : benchmark_names()) known += (known.empty() ? "" : ", ") + n;
  throw std::runtime_error("unknown benchmark '" + name + "' (known: " + known + ")");
}

std::shared_ptr<nn::Sequential> fashion_mnist_network(int64_t hidden) {
  auto net = std::make_shared<nn::Sequential>();
  net->add(conv(1, 32, 3, 1, 1)).add(bn(32)).add(relu()).add(maxpool(2, 2));
  net->add(conv(32, 64, 3, 1, 1)).add(bn(64)).add(relu()).add(maxpool(2, 2));
  net->add(std::make_shared<nn::View>(std::vector<int64_t>{64 * 7 * 7}));
  net->add(std::make_shared<nn::Linear>(64 * 7 * 7, hidden)).add(relu());
  net->add(std::make_shared<nn::Dropout>(0.25));
  net->add(std::make_shared<nn::Linear>(hidden, 10));
  return net;
}

std::shared_ptr<nn::Sequential> readme_network() {
  auto s = std::make_shared<nn::Sequential>();
  s->add(std::make_shared<nn::SpatialConvolution>(3, 96, 11, 11, 3, 3));
  s->add(std::make_shared<nn::ReLU>());
  return s;
}

}  // namespace samples

// Training.h: a small convolutional network and a few SGD steps, the same on every rank and
// in every process (fixed seeds), for comparing data-parallel training with training alone.
#pragma once

#include <memory>
#include <string>

#include "convert/Convert.h"
#include "nn/CrossEntropyCriterion.h"
#include "nn/Linear.h"
#include "nn/ReLU.h"
#include "nn/SGD.h"
#include "nn/Sequential.h"
#include "nn/SpatialBatchNormalization.h"
#include "nn/SpatialConvolution.h"
#include "nn/SpatialMaxPooling.h"
#include "nn/View.h"
#include "tensor/Cuda.h"

namespace testing {

// conv 3->8 3x3 (+ batch norm) -> ReLU -> 2x2 max pool -> Linear 128 -> 10, as cudnn twins on
// `device`; the same weights for the same seed.
inline nn::ModulePtr small_convnet(uint64_t seed, tensor::Device device, bool batchNorm = true) {
  tensor::manual_seed(seed);
  auto net = std::make_shared<nn::Sequential>();
  net->add(std::make_shared<nn::SpatialConvolution>(3, 8, 3, 3, 1, 1, 1, 1));
  if (batchNorm) net->add(std::make_shared<nn::SpatialBatchNormalization>(8));
  net->add(std::make_shared<nn::ReLU>());
  net->add(std::make_shared<nn::SpatialMaxPooling>(2, 2, 2, 2));
  net->add(std::make_shared<nn::View>(tensor::Shape{8 * 4 * 4}));
  net->add(std::make_shared<nn::Linear>(8 * 4 * 4, 10));
  nn::ModulePtr out = nn::convert(net, cudnn::backend);
  tensor::cuda::DeviceGuard guard(device.index);
  out->to(device);
  return out;
}

// Batch `step` of `rows` images [rows x 3 x 8 x 8] and labels, on the CPU; the same everywhere.
inline std::pair<tensor::Tensor, tensor::Tensor> batch(int step, int64_t rows) {
  tensor::Generator gen(900 + static_cast<uint64_t>(step));
  tensor::Tensor x = tensor::normal({rows, 3, 8, 8}, 0, 1, gen);
  tensor::Tensor y = tensor::uniform({rows}, 0, 10, gen, tensor::DType::Float64).floor().to(tensor::DType::Int64);
  return {x, y};
}

// `steps` SGD steps (momentum 0.9) of `net` on rows [begin, begin + rows) of each batch of
// `total` rows, inputs on `device`. Returns the last loss.
inline double train(nn::Module& net, tensor::Device device, int steps, int64_t total, int64_t begin, int64_t rows) {
  auto criterion = nn::convert(std::make_shared<nn::CrossEntropyCriterion>(), cudnn::backend);
  nn::SGD sgd(net, 0.1, 0.9);
  double loss = 0;
  for (int s = 0; s < steps; ++s) {
    auto [x, y] = batch(s, total);
    const tensor::Tensor xs = x.narrow(0, begin, rows).to(device);
    sgd.zeroGrad();
    const tensor::Tensor& out = net.forward(xs);
    const tensor::Tensor ys = y.narrow(0, begin, rows).to(out.device());  // DataParallelTable: the first GPU
    loss = criterion->forward(out, ys);
    net.backward(xs, criterion->backward(out, ys));
    sgd.step();
  }
  return loss;
}

// The largest |a - b| over parameters and buffers, matched by their order; "" when equal in
// names and shapes.
inline double state_diff(nn::Module& a, nn::Module& b, bool relative = false) {
  auto sa = a.stateDict(), sb = b.stateDict();
  double worst = sa.size() == sb.size() ? 0 : 1e30;
  auto ia = sa.begin();
  auto ib = sb.begin();
  for (; ia != sa.end() && ib != sb.end(); ++ia, ++ib) {
    if (ia->second.sizes() != ib->second.sizes()) return 1e30;
    if (!tensor::is_floating(ia->second.dtype())) continue;
    const tensor::Tensor x = ia->second.cpu(), y = ib->second.cpu();
    worst = std::max(worst, relative ? tensor::max_rel_error(x, y) : tensor::max_abs_diff(x, y));
  }
  return worst;
}

}  // namespace testing

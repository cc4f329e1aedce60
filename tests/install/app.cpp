// app.cpp: an out-of-tree program built against an installed cudnn-nn with pkg-config
// (scripts/check-install does: g++ app.cpp $(pkg-config --cflags --libs cudnn-nn)).
// It uses the public headers only, as a user's program would; on a machine with a GPU and
// the cudnn backend it converts the network and checks both backends agree.
#include <cstdio>
#include <iostream>
#include <memory>

#include "convert/Convert.h"
#include "nn/Linear.h"
#include "nn/ReLU.h"
#include "nn/Sequential.h"
#include "nn/SpatialConvolution.h"
#include "nn/View.h"
#include "tensor/Cuda.h"

int main() {
  auto net = std::make_shared<nn::Sequential>();
  net->add(std::make_shared<nn::SpatialConvolution>(3, 8, 3, 3, 1, 1, 1, 1));
  net->add(std::make_shared<nn::ReLU>());
  net->add(std::make_shared<nn::View>(8 * 6 * 6));
  net->add(std::make_shared<nn::Linear>(8 * 6 * 6, 4));
  tensor::Tensor x = tensor::uniform({2, 3, 6, 6}, -1, 1);
  tensor::Tensor y = net->forward(x).clone();
  std::cout << net->str() << "\noutput " << tensor::shape_str(y.sizes()) << "\n";
  if (y.sizes() != tensor::Shape{2, 4} || tensor::has_nonfinite(y)) return 1;
  if (tensor::cuda::is_available()) {
    auto gpu = nn::convert(net, cudnn::backend);
    const tensor::Tensor y2 = gpu->forward(x.to(tensor::Device::cuda())).cpu();
    const double err = tensor::max_rel_error(y2, y);
    std::printf("cudnn backend: max relative error %.2g\n", err);
    if (err > 1e-3) return 1;
  }
  std::printf("app: ok\n");
  return 0;
}

// GradInputCases.h: small networks for the gradInput switch (Note [gradInput not needed] in
// nn/Module.cpp), shared by tests/nn and tests/cudnn: a conv net (convolution, batch norm,
// ReLU, pooling, View, Linear), Concat, Residual with a module shortcut, a spatial transformer
// and an LSTM (which computes gradInput anyway). Each is built from nn modules and a seed, so
// two builds with the same seed hold the same parameters.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nn/Concat.h"
#include "nn/LSTM.h"
#include "nn/Linear.h"
#include "nn/ReLU.h"
#include "nn/Residual.h"
#include "nn/Select.h"
#include "nn/Sequential.h"
#include "nn/SpatialBatchNormalization.h"
#include "nn/SpatialConvolution.h"
#include "nn/SpatialMaxPooling.h"
#include "nn/SpatialTransformer.h"
#include "nn/Tanh.h"
#include "nn/View.h"
#include "tensor/Generator.h"

namespace testing {

struct GradInputCase {
  std::string name;
  std::function<std::shared_ptr<nn::Sequential>()> build;  // nn modules, float64
  tensor::Shape input;
  bool skipsGradInput = true;  // false: the first module computes gradInput anyway (LSTM)
};

inline std::vector<GradInputCase> grad_input_cases() {
  using nn::ModulePtr;
  auto seq = [](std::initializer_list<ModulePtr> children) { return std::make_shared<nn::Sequential>(children); };
  auto flatten = [](int64_t dims) {
    auto v = std::make_shared<nn::View>(-1);
    v->setNumInputDims(dims);
    return v;
  };
  return {
      {"conv net",
       [=] {
         // no bias before batch norm: its gradient is 0 up to rounding, nothing to compare
         auto conv = std::make_shared<nn::SpatialConvolution>(2, 4, 3, 3, 1, 1, 1, 1);
         conv->noBias();
         return seq({conv,
                     std::make_shared<nn::SpatialBatchNormalization>(4), std::make_shared<nn::ReLU>(),
                     std::make_shared<nn::SpatialMaxPooling>(2, 2, 2, 2), flatten(3),
                     std::make_shared<nn::Linear>(4 * 4 * 4, 5)});
       },
       {3, 2, 8, 8}},
      {"concat",
       [=] {
         auto branch = seq({std::make_shared<nn::Linear>(6, 4), std::make_shared<nn::Tanh>()});
         auto cat = std::make_shared<nn::Concat>(1, std::initializer_list<ModulePtr>{std::make_shared<nn::Linear>(6, 3), branch});
         return seq({cat, std::make_shared<nn::Linear>(7, 2)});
       },
       {4, 6}},
      {"residual",
       [=] {
         auto block = seq({std::make_shared<nn::Linear>(6, 6), std::make_shared<nn::ReLU>()});
         return seq({std::make_shared<nn::Residual>(block, std::make_shared<nn::Linear>(6, 6)),
                     std::make_shared<nn::Linear>(6, 3)});
       },
       {4, 6}},
      {"spatial transformer",
       [=] {
         auto lin = std::make_shared<nn::Linear>(2 * 6 * 6, 6);
         lin->weight.mul_(0.05);
         lin->bias.copy_(tensor::from_vector<float>({1, 0, 0, 0, 1, 0}));
         auto st = std::make_shared<nn::SpatialTransformer>(seq({flatten(3), lin}), 4, 4);
         return seq({st, flatten(3), std::make_shared<nn::Linear>(2 * 4 * 4, 3)});
       },
       {3, 2, 6, 6}},
      {"lstm",
       [=] {
         return seq({std::make_shared<nn::LSTM>(5, 4, 1, /*batchFirst=*/true), std::make_shared<nn::Select>(1, -1),
                     std::make_shared<nn::Linear>(4, 3)});
       },
       {2, 3, 5},
       false},
  };
}

}  // namespace testing

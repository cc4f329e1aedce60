// Narrow.h: output = input.narrow(dimension, offset, length), Torch's nn.Narrow: `length`
// elements along one dimension from `offset`. Dimensions and offsets count from 0; a negative
// dimension or offset counts from the end, and a negative length runs to the end (-1: the
// last element included, -2: all but the last; Torch's "input:size(dim) - offset + length +
// 2", 0-based), for inputs of unknown size. The output is a view of the input; gradInput is
// zero but for the window, which holds gradOutput. Twin: cudnn::Narrow.
#pragma once

#include "nn/Module.h"

namespace nn {

class Narrow : public Module {
 public:
  Narrow(int64_t dimension, int64_t offset, int64_t length = 1);

  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  bool computesOn(Device) const override { return true; }  // a view and a copy: tensor ops
  static constexpr std::string_view kTypeName = "nn.Narrow";
  std::string type_name() const override { return std::string(kTypeName); }
  std::string str() const override;  // nn.Narrow(1, 2, -1)
  tensor::Json config() const override;
  static ModulePtr fromConfig(const tensor::Json& config);

  int64_t dimension, offset, length;

 private:
  struct Window {
    int64_t dim, start, length;
  };
  // The window resolved against `input`, checked; throws naming the shapes.
  Window resolve(const Tensor& input, const char* method) const;
};

}  // namespace nn

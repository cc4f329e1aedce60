// Transpose.h: output = input with each pair of dimensions swapped in turn, Torch's
// nn.Transpose({1, 2}, {3, 4}): Transpose({{0, 1}, {2, 3}}) swaps dimensions 0 and 1, then 2
// and 3 of the result (0-based; a negative dimension counts from the end). The output is a
// view of the input (not contiguous), and gradInput a view of gradOutput with the swaps undone
// in reverse order. Twin: cudnn::Transpose.
#pragma once

#include <utility>
#include <vector>

#include "nn/Module.h"

namespace nn {

class Transpose : public Module {
 public:
  using Pairs = std::vector<std::pair<int64_t, int64_t>>;
  explicit Transpose(Pairs permutations);

  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  bool computesOn(Device) const override { return true; }  // views only
  static constexpr std::string_view kTypeName = "nn.Transpose";
  std::string type_name() const override { return std::string(kTypeName); }
  std::string str() const override;  // nn.Transpose({0, 1}, {2, 3})
  tensor::Json config() const override;
  static ModulePtr fromConfig(const tensor::Json& config);

  Pairs permutations;

 private:
  // The pairs resolved against a tensor of `rank` dims; throws naming `input`'s shape.
  Pairs resolve(const Tensor& input, const char* method) const;
};

}  // namespace nn

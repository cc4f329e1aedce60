// TableModule.h: the base of the modules that take or give tables and compute with tensor
// operations (CAddTable, JoinTable, SplitTable, SelectTable, ...): they refuse the tensor
// interface, naming the table one, and run wherever their tensors are (Note [Tables] in
// nn/Value.cpp), so they have no twin: convert() leaves them as they are, as it leaves Sequential.
// Positions in tables are 0-based and negative ones count from the end, as dimensions are here.
#pragma once

#include "nn/Module.h"

namespace nn {

class TableModule : public Module {
 public:
  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  bool usesTables() const override { return true; }
  bool computesOn(Device) const override { return true; }
  void accGradParametersValue(const Value&, const Value&, double = 1.0) override {}  // no parameters

 protected:
  TableModule() = default;
  // input's entries as tensors, checked: a table of `min` to `max` entries, each a tensor of
  // the first's dtype and device; errors name the entry ("entry 2 of the input").
  std::vector<Tensor> tensorEntries(const Value& input, const char* method, size_t min, size_t max) const;
  // {x1, x2}: two floating tensors of one shape, [N x D] or [D] (PairwiseDistance, CosineDistance)
  std::vector<Tensor> rowPair(const Value& input, const char* method) const;
  // position `index` (negative from the end) of a table of `size` entries, checked
  size_t resolvePosition(int64_t index, size_t size, const char* method) const;
};

// Throws "<where>expected a floating-point <what>, got <description>" unless t is float16,
// bfloat16, float32 or float64: table modules compute with tensor operations, which take every
// floating dtype on every device (a float16 network's CAddTable on the GPU).
void check_floating(const std::string& where, const Tensor& t, const char* what);
// Throws "<where>expected gradOutput to have the output's structure <..>, got <..>" unless it has.
void check_grad_structure(const std::string& where, const Value& output, const Value& gradOutput);

}  // namespace nn

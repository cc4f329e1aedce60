// ConcatTable.h: Torch's nn.ConcatTable: every child gets the same input (a tensor or a table)
// and the output is the table of their outputs; gradInput is the sum of the children's
// gradInputs. With CAddTable after it, a residual block of any branches:
//   Sequential{ConcatTable{branch, Identity}, CAddTable}.
// Prints as Torch does:
//   nn.ConcatTable {
//     input
//       |`-> (1): nn.Linear(4 -> 3)
//       `-> (2): nn.Identity
//        ... -> output
//   }
#pragma once

#include "nn/Container.h"

namespace nn {

class ConcatTable : public Container {
 public:
  ConcatTable() = default;
  ConcatTable(std::initializer_list<ModulePtr> children);

  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  const Value& updateOutputValue(const Value& input) override;
  const Value& updateGradInputValue(const Value& input, const Value& gradOutput) override;
  void accGradParametersValue(const Value& input, const Value& gradOutput, double scale = 1.0) override;
  bool usesTables() const override { return true; }
  static constexpr std::string_view kTypeName = "nn.ConcatTable";
  std::string type_name() const override { return std::string(kTypeName); }
  static ModulePtr fromConfig(const tensor::Json& config, std::vector<ModulePtr> children);
  std::string str() const override;

 protected:
  void backwardValueImpl(const Value& input, const Value& gradOutput, double scale) override;

 private:
  template <class Step>
  void backwardPass(const Value& gradOutput, Step step);
};

// Torch's printing of a container whose children run side by side (ConcatTable, ParallelTable).
std::string branches_str(const Container& c, const std::vector<ModulePtr>& kids, const char* method);

}  // namespace nn

// ParallelTable.h: Torch's nn.ParallelTable: child i gets entry i of the input table, and the
// output is the table of their outputs; gradInput is the table of their gradInputs. The table
// has one entry per child. Prints as ConcatTable does.
#pragma once

#include "nn/Container.h"

namespace nn {

class ParallelTable : public Container {
 public:
  ParallelTable() = default;
  ParallelTable(std::initializer_list<ModulePtr> children);

  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  const Value& updateOutputValue(const Value& input) override;
  const Value& updateGradInputValue(const Value& input, const Value& gradOutput) override;
  void accGradParametersValue(const Value& input, const Value& gradOutput, double scale = 1.0) override;
  bool usesTables() const override { return true; }
  static constexpr std::string_view kTypeName = "nn.ParallelTable";
  std::string type_name() const override { return std::string(kTypeName); }
  static ModulePtr fromConfig(const tensor::Json& config, std::vector<ModulePtr> children);
  std::string str() const override;

 protected:
  void backwardValueImpl(const Value& input, const Value& gradOutput, double scale) override;

 private:
  const Table& entries(const Value& input, const char* method) const;  // one per child, checked
  template <class Step>
  void backwardPass(const Value& input, const Value& gradOutput, Step step);
};

}  // namespace nn

// SplitTable.h: Torch's nn.SplitTable: a tensor split along `dimension` into the table of its
// slices (views, that dimension removed; 0-based, negative from the end; with nInputDims >= 0 an
// input of nInputDims + 1 dimensions is a batch and the dimension moves by one, as Torch's).
// gradInput stacks the slices' gradients back. Takes a tensor, gives a table.
#pragma once

#include "nn/TableModule.h"

namespace nn {

class SplitTable : public TableModule {
 public:
  explicit SplitTable(int64_t dimension, int64_t nInputDims = -1);
  const Value& updateOutputValue(const Value& input) override;
  const Value& updateGradInputValue(const Value& input, const Value& gradOutput) override;
  static constexpr std::string_view kTypeName = "nn.SplitTable";
  std::string type_name() const override { return std::string(kTypeName); }
  std::string str() const override;  // nn.SplitTable(1)
  tensor::Json config() const override;
  static ModulePtr fromConfig(const tensor::Json& config);

  int64_t dimension, nInputDims;

 private:
  int64_t resolve(const Tensor& input, const char* method) const;
};

}  // namespace nn

// JoinTable.h: Torch's nn.JoinTable: the table's tensors concatenated along `dimension`
// (0-based, negative from the end, as Concat's); gradInput is the table of gradOutput's slices.
// With nInputDims >= 0, entries of nInputDims + 1 dimensions are taken as a batch and the
// dimension moves by one, as Torch's (JoinTable(0, 1) joins [D] vectors and [N x D] rows alike).
// Entries agree in every size but `dimension`, and in dtype and device.
#pragma once

#include "nn/TableModule.h"

namespace nn {

class JoinTable : public TableModule {
 public:
  explicit JoinTable(int64_t dimension, int64_t nInputDims = -1);
  const Value& updateOutputValue(const Value& input) override;
  const Value& updateGradInputValue(const Value& input, const Value& gradOutput) override;
  static constexpr std::string_view kTypeName = "nn.JoinTable";
  std::string type_name() const override { return std::string(kTypeName); }
  std::string str() const override;  // nn.JoinTable(1)
  tensor::Json config() const override;
  static ModulePtr fromConfig(const tensor::Json& config);

  int64_t dimension, nInputDims;

 private:
  int64_t resolve(const Tensor& first, const char* method) const;
};

}  // namespace nn

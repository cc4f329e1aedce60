// SelectTable.h: Torch's nn.SelectTable: entry `index` of a table (a tensor or a table; 0-based
// here, negative from the end: SelectTable(-1) is the last). gradInput has the input's
// structure: gradOutput at `index`, zeros of each other entry's shape elsewhere, as Torch's.
// nn::Node::operator[] and split() of a graph use it.
#pragma once

#include "nn/TableModule.h"

namespace nn {

class SelectTable : public TableModule {
 public:
  explicit SelectTable(int64_t index);
  const Value& updateOutputValue(const Value& input) override;
  const Value& updateGradInputValue(const Value& input, const Value& gradOutput) override;
  static constexpr std::string_view kTypeName = "nn.SelectTable";
  std::string type_name() const override { return std::string(kTypeName); }
  std::string str() const override;  // nn.SelectTable(0)
  tensor::Json config() const override;
  static ModulePtr fromConfig(const tensor::Json& config);

  int64_t index;
};

}  // namespace nn

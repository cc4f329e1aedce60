// FlattenTable.h: Torch's nn.FlattenTable: a nested table's tensors as one flat table, depth
// first ({x, {y, {z}}} -> {x, y, z}); gradInput puts gradOutput's entries back in the input's
// nesting. A tensor input gives a table of one entry.
#pragma once

#include "nn/TableModule.h"

namespace nn {

class FlattenTable : public TableModule {
 public:
  const Value& updateOutputValue(const Value& input) override;
  const Value& updateGradInputValue(const Value& input, const Value& gradOutput) override;
  static constexpr std::string_view kTypeName = "nn.FlattenTable";
  std::string type_name() const override { return std::string(kTypeName); }
  static ModulePtr fromConfig(const tensor::Json& config);
};

}  // namespace nn

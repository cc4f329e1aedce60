// NarrowTable.h: Torch's nn.NarrowTable: the sub-table of `length` entries from `offset`
// (0-based; a negative offset counts from the end; length -1 runs to the end, as Torch's
// negative lengths: -k ends k - 1 entries before it). gradInput has the input's structure:
// gradOutput's entries in the window, zeros of each other entry's shape outside it.
#pragma once

#include "nn/TableModule.h"

namespace nn {

class NarrowTable : public TableModule {
 public:
  explicit NarrowTable(int64_t offset, int64_t length = 1);
  const Value& updateOutputValue(const Value& input) override;
  const Value& updateGradInputValue(const Value& input, const Value& gradOutput) override;
  static constexpr std::string_view kTypeName = "nn.NarrowTable";
  std::string type_name() const override { return std::string(kTypeName); }
  std::string str() const override;  // nn.NarrowTable(1, 2)
  tensor::Json config() const override;
  static ModulePtr fromConfig(const tensor::Json& config);

  int64_t offset, length;

 private:
  std::pair<size_t, size_t> window(const Table& items, const char* method) const;  // [begin, end)
};

}  // namespace nn

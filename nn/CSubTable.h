// CSubTable.h: Torch's nn.CSubTable on a table of tensors: output = x1 - x2 (two entries, broadcast); gradInput =
// {gradOutput, -gradOutput}, each reduced to its entry's shape (nn/ElementwiseTableBase.h).
#pragma once

#include "nn/ElementwiseTableBase.h"

namespace nn {

class CSubTable : public ElementwiseTableModule<CSubTable, TableOp::Sub> {
 public:
  static constexpr std::string_view kTypeName = "nn.CSubTable";
};

}  // namespace nn

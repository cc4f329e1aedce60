// CDivTable.h: Torch's nn.CDivTable on a table of tensors: output = x1 / x2 (two entries, broadcast); gradInput =
// {gradOutput / x2, -gradOutput * x1 / x2^2}, each reduced to its entry's shape (nn/ElementwiseTableBase.h).
#pragma once

#include "nn/ElementwiseTableBase.h"

namespace nn {

class CDivTable : public ElementwiseTableModule<CDivTable, TableOp::Div> {
 public:
  static constexpr std::string_view kTypeName = "nn.CDivTable";
};

}  // namespace nn

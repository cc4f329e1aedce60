// CMulTable.h: Torch's nn.CMulTable on a table of tensors: output = x1 * x2 * ... (one or more entries, broadcast);
// gradInput i = gradOutput times the others, each reduced to its entry's shape (nn/ElementwiseTableBase.h).
#pragma once

#include "nn/ElementwiseTableBase.h"

namespace nn {

class CMulTable : public ElementwiseTableModule<CMulTable, TableOp::Mul> {
 public:
  static constexpr std::string_view kTypeName = "nn.CMulTable";
};

}  // namespace nn

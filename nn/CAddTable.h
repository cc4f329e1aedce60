// CAddTable.h: Torch's nn.CAddTable on a table of tensors: output = x1 + x2 + ... (one or more entries, broadcast);
// gradInput i = gradOutput, each reduced to its entry's shape (nn/ElementwiseTableBase.h).
#pragma once

#include "nn/ElementwiseTableBase.h"

namespace nn {

class CAddTable : public ElementwiseTableModule<CAddTable, TableOp::Add> {
 public:
  static constexpr std::string_view kTypeName = "nn.CAddTable";
};

}  // namespace nn

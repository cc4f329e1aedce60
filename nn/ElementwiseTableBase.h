// ElementwiseTableBase.h: the base of Torch's element-wise table modules, which combine the
// tensors of a table into one: CAddTable (x1 + x2 + ...), CSubTable (x1 - x2), CMulTable
// (x1 * x2 * ...), CDivTable (x1 / x2). The entries broadcast against each other as PyTorch's
// operators do (token embeddings [B x T x D] plus positions [T x D]); each gradient is reduced
// back to its entry's shape. Entries share one dtype and device. Gradients are PyTorch's
// (CMulTable: gradOutput times the product of the other entries, so a zero entry is exact;
// CDivTable: gradOutput / x2 and -gradOutput * x1 / x2^2), so NaN and Inf follow the same
// arithmetic on every device.
#pragma once

#include "nn/ModuleConfig.h"
#include "nn/TableModule.h"

namespace nn {

enum class TableOp { Add, Sub, Mul, Div };

class ElementwiseTableBase : public TableModule {
 public:
  const Value& updateOutputValue(const Value& input) override;
  const Value& updateGradInputValue(const Value& input, const Value& gradOutput) override;
  TableOp op() const { return op_; }

 protected:
  explicit ElementwiseTableBase(TableOp op) : op_(op) {}

 private:
  TableOp op_;
  std::vector<Tensor> gradInputs_;  // each entry's gradient buffer
};

// The constructor, type_name() and fromConfig of one member: `class CAddTable : public
// ElementwiseTableModule<CAddTable, TableOp::Add>`.
template <class Self, TableOp Op>
class ElementwiseTableModule : public ElementwiseTableBase {
 public:
  ElementwiseTableModule() : ElementwiseTableBase(Op) {}
  std::string type_name() const override { return std::string(Self::kTypeName); }
  static ModulePtr fromConfig(const tensor::Json& config) {
    ConfigReader(config, Self::kTypeName).finish();
    return std::make_shared<Self>();
  }
};

// The broadcast shape of the entries (tensor::broadcast_shapes, PyTorch's rules), or an Error
// naming `where` and every entry's shape.
Shape broadcast_shapes(const std::string& where, const std::vector<Tensor>& entries);
// t summed over the dimensions that broadcasting added to a tensor of `shape` (a copy when it
// must sum, t itself when the shapes agree).
Tensor sum_to_shape(const Tensor& t, const Shape& shape);

}  // namespace nn

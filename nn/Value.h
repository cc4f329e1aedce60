// Value.h: what a module with several inputs or outputs takes and gives: a tensor, or a table
// (Torch's word) of values, nested as deep as a network needs ({x, {h, c}}). Modules of one
// tensor keep their tensor interface (Module::forward(const Tensor&)); the table interface
// (Module::forward(const Value&)) is the table modules', nn::Graph's, and every module's
// through a Value that holds a tensor (Note [Tables] in nn/Value.cpp).
//   nn::CAddTable add;
//   const nn::Value& sum = add.forward(nn::Table{a, b});   // sum.tensor() is a + b
#pragma once

#include <string>
#include <vector>

#include "tensor/Tensor.h"

namespace nn {

class Value;
using Table = std::vector<Value>;

class Value {
 public:
  Value() = default;                                  // empty: neither a tensor nor a table (an absent gradient)
  Value(tensor::Tensor t) : tensor_(std::move(t)) {}  // NOLINT: implicit, as a Torch table entry
  Value(Table items) : items_(std::move(items)), isTable_(true) {}  // NOLINT: implicit

  bool isTensor() const { return !isTable_ && tensor_.defined(); }
  bool isTable() const { return isTable_; }
  bool empty() const { return !isTable_ && !tensor_.defined(); }

  // The tensor, or an Error "<where>expected <what> to be a tensor, got a table of 2 entries".
  const tensor::Tensor& tensor(const std::string& where, const char* what = "the input") const;
  // The tensor or an undefined one (a table gives an undefined tensor).
  const tensor::Tensor& tensorOrUndefined() const { return tensor_; }
  // The entries, or an Error naming `where` when this is not a table.
  const Table& table(const std::string& where, const char* what = "the input") const;
  Table& table(const std::string& where, const char* what = "the input");
  // Entries of a table (0 for a tensor) and entry i, checked.
  size_t size() const { return isTable_ ? items_.size() : 0; }
  const Value& operator[](size_t i) const;

  // "float32 [2 x 3] on cpu", "table {float32 [2] on cpu, table {...}}", "nothing"
  std::string description() const;
  // Same structure (tensor / table of the same lengths, recursively) and tensor shapes.
  bool sameStructure(const Value& other) const;

 private:
  tensor::Tensor tensor_;
  Table items_;
  bool isTable_ = false;
};

// The whole value's tensors, depth first.
std::vector<tensor::Tensor> tensors_of(const Value& v);
// acc += g, entry by entry (acc and g of one structure; an empty acc becomes a copy of g): the
// gradient of a value read by several modules is the sum of theirs. `where` names the caller.
void accumulate(Value& acc, const Value& g, const std::string& where);
// A value of v's structure whose tensors are zeros of v's tensors' shapes, dtypes and devices.
Value zeros_like(const Value& v);
// A value of v's structure with each tensor cloned (its own storage).
Value clone(const Value& v);
// dst = a copy of src, into dst's own tensors where they have src's shapes, dtypes and devices
// (no allocation in steady state), else into fresh ones.
void copy_into(Value& dst, const Value& src);

}  // namespace nn

// Value.cpp
#include "nn/Value.h"

namespace nn {

// Note [Tables]
// Torch's modules take a tensor or a Lua table of them; nngraph wires such modules into a
// graph. Here a Value is either, and a table holds Values, so nesting is free. The tensor
// interface stays the fast path: Module::forward(const Tensor&) is unchanged, and a container
// takes the Value path only where a child needs it (Module::usesTables). Every module takes a
// Value holding a tensor (the default updateOutputValue runs the tensor interface, so a leaf
// costs one Tensor handle copy there); modules that take or give tables override the Value
// methods and refuse the tensor interface where it cannot hold their input or output. Table
// modules compute with tensor operations, which run on the tensors' device, so they need no
// twin (as Sequential needs none) and take tables whose tensors are on any one device.
// Gradients: the gradient of a value read by several consumers is the sum of theirs
// (accumulate); a table entry that a module does not read gets a zero gradient of its shape,
// as Torch's SelectTable gives, so every gradInput has its input's structure.

const tensor::Tensor& Value::tensor(const std::string& where, const char* what) const {
  if (!isTensor()) throw tensor::Error(where + "expected " + what + " to be a tensor, got " + description());
  return tensor_;
}

const Table& Value::table(const std::string& where, const char* what) const {
  if (!isTable_) throw tensor::Error(where + "expected " + what + " to be a table, got " + description());
  return items_;
}

Table& Value::table(const std::string& where, const char* what) {
  if (!isTable_) throw tensor::Error(where + "expected " + what + " to be a table, got " + description());
  return items_;
}

const Value& Value::operator[](size_t i) const {
  if (!isTable_ || i >= items_.size()) {
    throw tensor::Error("nn::Value: entry " + std::to_string(i + 1) + " of " + description() + " does not exist");
  }
  return items_[i];
}

std::string Value::description() const {
  if (isTable_) {
    std::string s = "table {";
    for (size_t i = 0; i < items_.size(); ++i) s += (i ? ", " : "") + items_[i].description();
    return s + "}";
  }
  return tensor_.defined() ? tensor_.description() : "nothing";
}

bool Value::sameStructure(const Value& other) const {
  if (isTable_ != other.isTable_) return false;
  if (!isTable_) return tensor_.defined() == other.tensor_.defined() && tensor_.sizes() == other.tensor_.sizes();
  if (items_.size() != other.items_.size()) return false;
  for (size_t i = 0; i < items_.size(); ++i) {
    if (!items_[i].sameStructure(other.items_[i])) return false;
  }
  return true;
}

namespace {
void collect(const Value& v, std::vector<tensor::Tensor>& out) {
  if (v.isTable()) {
    for (size_t i = 0; i < v.size(); ++i) collect(v[i], out);
  } else if (v.isTensor()) {
    out.push_back(v.tensorOrUndefined());
  }
}
}  // namespace

std::vector<tensor::Tensor> tensors_of(const Value& v) {
  std::vector<tensor::Tensor> out;
  collect(v, out);
  return out;
}

void copy_into(Value& dst, const Value& src) {
  if (src.isTable()) {
    if (!dst.isTable() || dst.size() != src.size()) dst = Table(src.size());
    Table& items = dst.table("nn::copy_into: ");
    for (size_t i = 0; i < items.size(); ++i) copy_into(items[i], src[i]);
    return;
  }
  if (!src.isTensor()) {
    dst = Value();
    return;
  }
  const tensor::Tensor& s = src.tensorOrUndefined();
  if (dst.isTensor()) {
    tensor::Tensor d = dst.tensorOrUndefined();
    if (d.sizes() == s.sizes() && d.dtype() == s.dtype() && d.device() == s.device() && !d.shares_storage(s)) {
      d.copy_(s);
      return;
    }
  }
  dst = s.clone();
}

void accumulate(Value& acc, const Value& g, const std::string& where) {
  if (g.empty()) return;
  if (acc.empty()) {
    acc = clone(g);
    return;
  }
  if (acc.isTable() != g.isTable() || (acc.isTable() && acc.size() != g.size())) {
    throw tensor::Error(where + "expected gradients of one structure to sum, got " + acc.description() + " and " +
                        g.description());
  }
  if (acc.isTable()) {
    Table& items = acc.table(where);
    for (size_t i = 0; i < items.size(); ++i) accumulate(items[i], g[i], where);
    return;
  }
  const tensor::Tensor& a = acc.tensorOrUndefined();
  const tensor::Tensor& b = g.tensorOrUndefined();
  if (a.sizes() != b.sizes() || a.device() != b.device()) {
    throw tensor::Error(where + "expected gradients of one shape and device to sum, got " + a.description() + " and " +
                        b.description());
  }
  tensor::Tensor sum = a;
  sum.add_(b);
}

Value zeros_like(const Value& v) {
  if (v.isTable()) {
    Table items;
    items.reserve(v.size());
    for (size_t i = 0; i < v.size(); ++i) items.push_back(zeros_like(v[i]));
    return items;
  }
  if (!v.isTensor()) return {};
  return tensor::zeros_like(v.tensorOrUndefined());
}

Value clone(const Value& v) {
  if (v.isTable()) {
    Table items;
    items.reserve(v.size());
    for (size_t i = 0; i < v.size(); ++i) items.push_back(clone(v[i]));
    return items;
  }
  if (!v.isTensor()) return {};
  return v.tensorOrUndefined().clone();
}

}  // namespace nn

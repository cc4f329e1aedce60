// PairCriterionBase.cpp
#include "nn/PairCriterionBase.h"

#include "nn/Buffers.h"
#include "nn/TableModule.h"

namespace nn {

double PairCriterionBase::updateOutput(const Tensor&, const Tensor&) {
  throw Error(where("updateOutput") + "takes a table {x1, x2}: call forward(nn::Table{x1, x2}, target)");
}

const Tensor& PairCriterionBase::updateGradInput(const Tensor&, const Tensor&) {
  throw Error(where("updateGradInput") + "takes a table {x1, x2}: call backward(nn::Table{x1, x2}, target)");
}

std::pair<Tensor, Tensor> PairCriterionBase::pair(const Value& input, const Tensor& target, int64_t rank,
                                                  const char* method) const {
  const Table& items = input.table(where(method));
  if (items.size() != 2) throw Error(where(method) + "expected a table {x1, x2}, got " + input.description());
  const Tensor& x1 = items[0].tensor(where(method), "x1");
  const Tensor& x2 = items[1].tensor(where(method), "x2");
  check_floating(where(method), x1, "x1");
  if (x1.sizes() != x2.sizes() || x1.dtype() != x2.dtype() || x1.device() != x2.device() ||
      (x1.dim() != rank && x1.dim() != rank - 1)) {
    throw Error(where(method) + "expected x1 and x2 of one shape, dtype and device, " + std::to_string(rank) +
                "-d (a batch) or " + std::to_string(rank - 1) + "-d, got " + x1.description() + " and " +
                x2.description());
  }
  const int64_t n = x1.dim() == rank ? x1.size(0) : 1;
  if (target.numel() != n || target.dim() > 1 || target.dtype() != x1.dtype() || target.device() != x1.device()) {
    throw Error(where(method) + "expected a target of " + std::to_string(n) + " entries (1 or -1) in " +
                tensor::name(x1.dtype()) + " on the inputs' device, got " + target.description());
  }
  if (target.numel() > 0 && target.abs().ne(1).to(tensor::DType::Float64).sum().item() != 0) {
    throw Error(where(method) + "expected a target of 1 and -1 only, got " + target.description());
  }
  return {x1, x2};
}

}  // namespace nn

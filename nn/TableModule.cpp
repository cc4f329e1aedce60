// TableModule.cpp
#include "nn/TableModule.h"

namespace nn {

const Tensor& TableModule::updateOutput(const Tensor&) { refuseTensorInterface("updateOutput"); }

const Tensor& TableModule::updateGradInput(const Tensor&, const Tensor&) { refuseTensorInterface("updateGradInput"); }

std::vector<Tensor> TableModule::tensorEntries(const Value& input, const char* method, size_t min, size_t max) const {
  const Table& items = input.table(where(method));
  if (items.size() < min || items.size() > max) {
    std::string want = min == max        ? std::to_string(min)
                       : max == SIZE_MAX ? "at least " + std::to_string(min)
                                         : std::to_string(min) + " to " + std::to_string(max);
    throw Error(where(method) + "expected a table of " + want + " tensors, got " + input.description());
  }
  std::vector<Tensor> out;
  out.reserve(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string what = "entry " + std::to_string(i) + " of the input";
    const Tensor& t = items[i].tensor(where(method), what.c_str());
    if (i > 0 && (t.dtype() != out[0].dtype() || t.device() != out[0].device())) {
      throw Error(where(method) + "expected " + what + " to have entry 0's dtype and device (" + out[0].description() +
                  "), got " + t.description());
    }
    out.push_back(t);
  }
  return out;
}

std::vector<Tensor> TableModule::rowPair(const Value& input, const char* method) const {
  std::vector<Tensor> xs = tensorEntries(input, method, 2, 2);
  check_floating(where(method), xs[0], "entry 0 of the input");
  if (xs[0].sizes() != xs[1].sizes() || xs[0].dim() < 1 || xs[0].dim() > 2) {
    throw Error(where(method) + "expected two [N x D] or [D] tensors of one shape, got " +
                tensor::shape_str(xs[0].sizes()) + " and " + tensor::shape_str(xs[1].sizes()));
  }
  return xs;
}

size_t TableModule::resolvePosition(int64_t index, size_t size, const char* method) const {
  const auto n = static_cast<int64_t>(size);
  if (index < -n || index >= n) {
    throw Error(where(method) + "expected a position in [" + std::to_string(-n) + ", " + std::to_string(n - 1) +
                "] of a table of " + std::to_string(n) + " entries, got " + std::to_string(index));
  }
  return static_cast<size_t>(index < 0 ? index + n : index);
}

void check_floating(const std::string& where, const Tensor& t, const char* what) {
  if (!tensor::is_floating(t.dtype()))
    throw Error(where + "expected a floating-point " + what + ", got " + t.description());
}

void check_grad_structure(const std::string& where, const Value& output, const Value& gradOutput) {
  if (!output.sameStructure(gradOutput)) {
    throw Error(where + "expected gradOutput to have the output's structure " + output.description() + ", got " +
                gradOutput.description());
  }
}

}  // namespace nn

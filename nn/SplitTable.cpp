// SplitTable.cpp
#include "nn/SplitTable.h"

#include "nn/Buffers.h"
#include "nn/ModuleConfig.h"

namespace nn {

SplitTable::SplitTable(int64_t dimension_, int64_t nInputDims_) : dimension(dimension_), nInputDims(nInputDims_) {}

int64_t SplitTable::resolve(const Tensor& input, const char* method) const {
  const int64_t rank = input.dim();
  int64_t d = dimension;
  if (nInputDims >= 0 && rank == nInputDims + 1 && d >= 0) ++d;
  if (d < -rank || d >= rank) {
    throw Error(where(method) + "expected an input with dimension " + std::to_string(dimension) + ", got " +
                input.description());
  }
  return d < 0 ? d + rank : d;
}

const Value& SplitTable::updateOutputValue(const Value& input) {
  const Tensor& x = input.tensor(where("updateOutput"));
  const int64_t d = resolve(x, "updateOutput");
  Table slices(static_cast<size_t>(x.size(d)));
  for (int64_t i = 0; i < x.size(d); ++i) slices[static_cast<size_t>(i)] = x.select(d, i);
  outputValue = std::move(slices);
  return outputValue;
}

const Value& SplitTable::updateGradInputValue(const Value& input, const Value& gradOutput) {
  const Tensor& x = input.tensor(where("updateGradInput"));
  const int64_t d = resolve(x, "updateGradInput");
  Shape slice = x.sizes();
  slice.erase(slice.begin() + d);
  const Table& grads = gradOutput.table(where("updateGradInput"), "gradOutput");
  if (static_cast<int64_t>(grads.size()) != x.size(d)) {
    throw Error(where("updateGradInput") + "expected gradOutput to be a table of " + std::to_string(x.size(d)) +
                " tensors (input " + tensor::shape_str(x.sizes()) + "), got " + gradOutput.description());
  }
  ensure(gradInput, x.sizes(), x);
  for (size_t i = 0; i < grads.size(); ++i) {
    const std::string what = "entry " + std::to_string(i) + " of gradOutput";
    const Tensor& g = grads[i].tensor(where("updateGradInput"), what.c_str());
    check_grad_output_shape(where("updateGradInput"), slice, g);
    gradInput.select(d, static_cast<int64_t>(i)).copy_(g);
  }
  gradInputValue = gradInput;
  return gradInputValue;
}

std::string SplitTable::str() const {
  return type_name() + "(" + std::to_string(dimension) + (nInputDims >= 0 ? ", " + std::to_string(nInputDims) : "") +
         ")";
}

tensor::Json SplitTable::config() const {
  return tensor::Json::Object{{"dimension", dimension}, {"nInputDims", nInputDims}};
}

ModulePtr SplitTable::fromConfig(const tensor::Json& config) {
  ConfigReader r(config, kTypeName);
  const int64_t dimension = r.integer("dimension");
  const int64_t nInputDims = r.integer("nInputDims", -1);
  r.finish();
  return std::make_shared<SplitTable>(dimension, nInputDims);
}

}  // namespace nn

// JoinTable.cpp
#include "nn/JoinTable.h"

#include <cstdint>

#include "nn/Buffers.h"
#include "nn/ModuleConfig.h"

namespace nn {

JoinTable::JoinTable(int64_t dimension_, int64_t nInputDims_) : dimension(dimension_), nInputDims(nInputDims_) {}

int64_t JoinTable::resolve(const Tensor& first, const char* method) const {
  const int64_t rank = first.dim();
  int64_t d = dimension;
  if (nInputDims >= 0 && rank == nInputDims + 1 && d >= 0) ++d;  // a batch of entries
  if (d < -rank || d >= rank) {
    throw Error(where(method) + "expected dimension in [" + std::to_string(-rank) + ", " + std::to_string(rank - 1) +
                "] for entries of " + tensor::shape_str(first.sizes()) + ", got " + std::to_string(dimension));
  }
  return d < 0 ? d + rank : d;
}

const Value& JoinTable::updateOutputValue(const Value& input) {
  const std::vector<Tensor> xs = tensorEntries(input, "updateOutput", 1, SIZE_MAX);
  const int64_t d = resolve(xs[0], "updateOutput");
  Shape shape = xs[0].sizes();
  for (size_t i = 1; i < xs.size(); ++i) {
    const Shape& s = xs[i].sizes();
    bool ok = s.size() == shape.size();
    for (size_t k = 0; ok && k < s.size(); ++k) ok = static_cast<int64_t>(k) == d || s[k] == shape[k];
    if (!ok) {
      throw Error(where("updateOutput") + "expected entry " + std::to_string(i) + " to match " +
                  tensor::shape_str(xs[0].sizes()) + " (entry 0) except in dimension " + std::to_string(d) + ", got " +
                  tensor::shape_str(s));
    }
    shape[d] += s[d];
  }
  ensure(output, shape, xs[0], tensor::suggest_memory_format(xs[0]));  // a channels-last input stays so
  int64_t offset = 0;
  for (const Tensor& x : xs) {
    output.narrow(d, offset, x.size(d)).copy_(x);
    offset += x.size(d);
  }
  outputValue = output;
  return outputValue;
}

const Value& JoinTable::updateGradInputValue(const Value& input, const Value& gradOutput) {
  const std::vector<Tensor> xs = tensorEntries(input, "updateGradInput", 1, SIZE_MAX);
  const Tensor& g = gradOutput.tensor(where("updateGradInput"), "gradOutput");
  const int64_t d = resolve(xs[0], "updateGradInput");
  Shape shape = xs[0].sizes();
  shape[d] = 0;
  for (const Tensor& x : xs) shape[d] += x.size(d);
  check_grad_output_shape(where("updateGradInput"), shape, g);
  Table grads(xs.size());
  int64_t offset = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    grads[i] = g.narrow(d, offset, xs[i].size(d)).contiguous(tensor::suggest_memory_format(g));
    offset += xs[i].size(d);
  }
  gradInputValue = std::move(grads);
  return gradInputValue;
}

std::string JoinTable::str() const {
  return type_name() + "(" + std::to_string(dimension) + (nInputDims >= 0 ? ", " + std::to_string(nInputDims) : "") +
         ")";
}

tensor::Json JoinTable::config() const {
  return tensor::Json::Object{{"dimension", dimension}, {"nInputDims", nInputDims}};
}

ModulePtr JoinTable::fromConfig(const tensor::Json& config) {
  ConfigReader r(config, kTypeName);
  const int64_t dimension = r.integer("dimension");
  const int64_t nInputDims = r.integer("nInputDims", -1);
  r.finish();
  return std::make_shared<JoinTable>(dimension, nInputDims);
}

}  // namespace nn

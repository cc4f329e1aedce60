// Select.cpp
#include "nn/Select.h"

#include "nn/Buffers.h"
#include "nn/ModuleConfig.h"

namespace nn {

Select::Select(int64_t dimension_, int64_t index_) : dimension(dimension_), index(index_) {}

std::pair<int64_t, int64_t> Select::resolve(const Tensor& input, const char* method) const {
  const int64_t rank = input.dim();
  const int64_t d = dimension < 0 ? dimension + rank : dimension;
  if (d < 0 || d >= rank) {
    throw Error(where(method) + "expected an input with dimension " + std::to_string(dimension) + ", got " +
                tensor::shape_str(input.sizes()));
  }
  const int64_t size = input.size(d);
  const int64_t i = index < 0 ? index + size : index;
  if (i < 0 || i >= size) {
    throw Error(where(method) + "expected index " + std::to_string(index) + " to lie in dimension " +
                std::to_string(d) + " of size " + std::to_string(size) + ", got input " +
                tensor::shape_str(input.sizes()));
  }
  return {d, i};
}

const Tensor& Select::updateOutput(const Tensor& input) {
  const auto [d, i] = resolve(input, "updateOutput");
  output = input.select(d, i);
  return output;
}

const Tensor& Select::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  const auto [d, i] = resolve(input, "updateGradInput");
  Shape expected = input.sizes();
  expected.erase(expected.begin() + d);
  if (gradOutput.sizes() != expected) {
    throw Error(where("updateGradInput") + "expected gradOutput of " + tensor::shape_str(expected) + " (input " +
                tensor::shape_str(input.sizes()) + "), got " + tensor::shape_str(gradOutput.sizes()));
  }
  check_matches(where("updateGradInput"), gradOutput, input, "gradOutput", "input");
  ensure(gradInput, input.sizes(), input).zero_();
  gradInput.select(d, i).copy_(gradOutput);
  return gradInput;
}

std::string Select::str() const {
  return type_name() + "(" + std::to_string(dimension) + ", " + std::to_string(index) + ")";
}

tensor::Json Select::config() const { return tensor::Json::Object{{"dimension", dimension}, {"index", index}}; }

ModulePtr Select::fromConfig(const tensor::Json& config) {
  ConfigReader c(config, kTypeName);
  const int64_t dimension = c.integer("dimension"), index = c.integer("index");
  c.finish();
  return std::make_shared<Select>(dimension, index);
}

}  // namespace nn

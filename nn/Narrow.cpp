// Narrow.cpp
#include "nn/Narrow.h"

#include "nn/Buffers.h"
#include "nn/ModuleConfig.h"

namespace nn {

Narrow::Narrow(int64_t dimension_, int64_t offset_, int64_t length_)
    : dimension(dimension_), offset(offset_), length(length_) {
  if (length == 0) throw Error(std::string(kTypeName) + ": expected a non-zero length, got 0");
}

Narrow::Window Narrow::resolve(const Tensor& input, const char* method) const {
  const int64_t rank = input.dim();
  const int64_t d = dimension < 0 ? dimension + rank : dimension;
  if (d < 0 || d >= rank) {
    throw Error(where(method) + "expected an input with dimension " + std::to_string(dimension) + ", got " +
                tensor::shape_str(input.sizes()));
  }
  const int64_t size = input.size(d);
  const int64_t start = offset < 0 ? offset + size : offset;
  const int64_t n = length < 0 ? size - start + length + 1 : length;
  if (start < 0 || n < 0 || start + n > size) {
    throw Error(where(method) + "expected offset " + std::to_string(offset) + " and length " + std::to_string(length) +
                " to lie in dimension " + std::to_string(d) + " of size " + std::to_string(size) + ", got input " +
                tensor::shape_str(input.sizes()));
  }
  return {d, start, n};
}

const Tensor& Narrow::updateOutput(const Tensor& input) {
  const Window w = resolve(input, "updateOutput");
  output = input.narrow(w.dim, w.start, w.length);
  return output;
}

const Tensor& Narrow::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  const Window w = resolve(input, "updateGradInput");
  Shape expected = input.sizes();
  expected[w.dim] = w.length;
  if (!gradOutput.defined() || gradOutput.sizes() != expected) {
    throw Error(where("updateGradInput") + "expected gradOutput of " + tensor::shape_str(expected) + " (input " +
                tensor::shape_str(input.sizes()) + "), got " +
                (gradOutput.defined() ? tensor::shape_str(gradOutput.sizes()) : std::string("undefined")));
  }
  check_matches(where("updateGradInput"), gradOutput, input, "gradOutput", "input");
  ensure(gradInput, input.sizes(), input).zero_();
  if (w.length > 0) gradInput.narrow(w.dim, w.start, w.length).copy_(gradOutput);
  return gradInput;
}

std::string Narrow::str() const {
  return type_name() + "(" + std::to_string(dimension) + ", " + std::to_string(offset) + ", " + std::to_string(length) +
         ")";
}

tensor::Json Narrow::config() const {
  return tensor::Json::Object{{"dimension", dimension}, {"offset", offset}, {"length", length}};
}

ModulePtr Narrow::fromConfig(const tensor::Json& config) {
  ConfigReader c(config, kTypeName);
  const int64_t dimension = c.integer("dimension"), offset = c.integer("offset"), length = c.integer("length", 1);
  c.finish();
  return std::make_shared<Narrow>(dimension, offset, length);
}

}  // namespace nn

// Unsqueeze.cpp
#include "nn/Unsqueeze.h"

#include "nn/ModuleConfig.h"

namespace nn {

Unsqueeze::Unsqueeze(int64_t pos_, int64_t numInputDims_) : pos(pos_), numInputDims(numInputDims_) {}

Unsqueeze& Unsqueeze::setNumInputDims(int64_t n) {
  numInputDims = n;
  return *this;
}

Shape Unsqueeze::outputShape(const Tensor& input, const char* method) const {
  if (!input.defined()) throw Error(where(method) + "input is undefined");
  const int64_t rank = input.dim();
  const bool batch = numInputDims > 0 && rank == numInputDims + 1;
  const int64_t p = pos < 0 ? pos + rank + 1 : pos + (batch ? 1 : 0);
  if (p < 0 || p > rank) {
    throw Error(where(method) + "expected an input of at least " + std::to_string(pos < 0 ? -pos - 1 : pos) +
                " dimensions (position " + std::to_string(pos) + "), got " + tensor::shape_str(input.sizes()));
  }
  Shape out = input.sizes();
  out.insert(out.begin() + p, 1);
  return out;
}

const Tensor& Unsqueeze::updateOutput(const Tensor& input) {
  output = input.reshape(outputShape(input, "updateOutput"));
  return output;
}

const Tensor& Unsqueeze::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  const Shape expected = outputShape(input, "updateGradInput");
  if (!gradOutput.defined() || gradOutput.sizes() != expected) {
    throw Error(where("updateGradInput") + "expected gradOutput of the output's shape " + tensor::shape_str(expected) +
                " (input " + tensor::shape_str(input.sizes()) + "), got " +
                (gradOutput.defined() ? tensor::shape_str(gradOutput.sizes()) : std::string("undefined")));
  }
  gradInput = gradOutput.reshape(input.sizes());
  return gradInput;
}

std::string Unsqueeze::str() const { return type_name() + "(" + std::to_string(pos) + ")"; }

tensor::Json Unsqueeze::config() const { return tensor::Json::Object{{"pos", pos}, {"numInputDims", numInputDims}}; }

ModulePtr Unsqueeze::fromConfig(const tensor::Json& config) {
  ConfigReader c(config, kTypeName);
  const int64_t pos = c.integer("pos"), n = c.integer("numInputDims", 0);
  c.finish();
  return std::make_shared<Unsqueeze>(pos, n);
}

}  // namespace nn

// Squeeze.cpp
#include "nn/Squeeze.h"

#include "nn/ModuleConfig.h"

namespace nn {

Squeeze::Squeeze(int64_t dim_, int64_t numInputDims_) : dim(dim_), numInputDims(numInputDims_) {}

Squeeze& Squeeze::setNumInputDims(int64_t n) {
  numInputDims = n;
  return *this;
}

Shape Squeeze::outputShape(const Tensor& input, const char* method) const {
  if (!input.defined()) throw Error(where(method) + "input is undefined");
  const int64_t rank = input.dim();
  const bool batch = numInputDims > 0 && rank == numInputDims + 1;
  Shape out;
  if (!dim) {
    for (int64_t d = 0; d < rank; ++d) {
      if (input.size(d) != 1 || (batch && d == 0)) out.push_back(input.size(d));
    }
    return out;
  }
  int64_t d = *dim < 0 ? *dim + rank : *dim + (batch ? 1 : 0);
  if (d < 0 || d >= rank) {
    throw Error(where(method) + "expected an input with dimension " + std::to_string(*dim) + ", got " +
                tensor::shape_str(input.sizes()));
  }
  out = input.sizes();
  if (out[d] == 1) out.erase(out.begin() + d);
  return out;
}

const Tensor& Squeeze::updateOutput(const Tensor& input) {
  output = input.reshape(outputShape(input, "updateOutput"));
  return output;
}

const Tensor& Squeeze::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  const Shape expected = outputShape(input, "updateGradInput");
  if (!gradOutput.defined() || gradOutput.sizes() != expected) {
    throw Error(where("updateGradInput") + "expected gradOutput of the output's shape " + tensor::shape_str(expected) +
                " (input " + tensor::shape_str(input.sizes()) + "), got " +
                (gradOutput.defined() ? tensor::shape_str(gradOutput.sizes()) : std::string("undefined")));
  }
  gradInput = gradOutput.reshape(input.sizes());
  return gradInput;
}

std::string Squeeze::str() const { return dim ? type_name() + "(" + std::to_string(*dim) + ")" : type_name(); }

tensor::Json Squeeze::config() const {
  return tensor::Json::Object{{"dim", dim ? tensor::Json(*dim) : tensor::Json()}, {"numInputDims", numInputDims}};
}

ModulePtr Squeeze::fromConfig(const tensor::Json& config) {
  ConfigReader c(config, kTypeName);
  const std::optional<int64_t> dim = c.optionalInteger("dim");
  const int64_t n = c.integer("numInputDims", 0);
  c.finish();
  auto m = dim ? std::make_shared<Squeeze>(*dim, n) : std::make_shared<Squeeze>();
  m->numInputDims = n;
  return m;
}

}  // namespace nn

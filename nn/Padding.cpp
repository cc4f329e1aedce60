// Padding.cpp
#include "nn/Padding.h"

#include <sstream>

#include "nn/Buffers.h"
#include "nn/ModuleConfig.h"

namespace nn {

Padding::Padding(int64_t dim_, int64_t pad_, int64_t nInputDim_, double value_, int64_t index_)
    : dim(dim_), pad(pad_), nInputDim(nInputDim_), value(value_), index(index_) {
  if (index < 0) throw Error(std::string(kTypeName) + ": expected index >= 0, got " + std::to_string(index));
}

Padding::Layout Padding::resolve(const Tensor& input, const char* method) const {
  if (!input.defined()) throw Error(where(method) + "input is undefined");
  const int64_t rank = input.dim();
  const int64_t d = dim < 0 ? dim + rank : dim + (nInputDim > 0 && rank > nInputDim ? 1 : 0);
  if (d < 0 || d >= rank) {
    throw Error(where(method) + "expected an input with dimension " + std::to_string(dim) + ", got " +
                tensor::shape_str(input.sizes()));
  }
  const int64_t size = input.size(d);
  if (index > size) {
    throw Error(where(method) + "expected index " + std::to_string(index) + " to lie in dimension " +
                std::to_string(d) + " of size " + std::to_string(size) + ", got input " +
                tensor::shape_str(input.sizes()));
  }
  const int64_t split = pad > 0 ? size - index : index;
  return {d, pad < 0 ? -pad : pad, size, split};
}

const Tensor& Padding::updateOutput(const Tensor& input) {
  const Layout l = resolve(input, "updateOutput");
  Shape shape = input.sizes();
  shape[l.dim] += l.before;
  ensure(output, shape, input).fill_(value);
  if (l.split > 0) output.narrow(l.dim, 0, l.split).copy_(input.narrow(l.dim, 0, l.split));
  if (l.size > l.split) {
    output.narrow(l.dim, l.split + l.before, l.size - l.split).copy_(input.narrow(l.dim, l.split, l.size - l.split));
  }
  return output;
}

const Tensor& Padding::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  const Layout l = resolve(input, "updateGradInput");
  Shape expected = input.sizes();
  expected[l.dim] += l.before;
  if (!gradOutput.defined() || gradOutput.sizes() != expected) {
    throw Error(where("updateGradInput") + "expected gradOutput of the output's shape " + tensor::shape_str(expected) +
                " (input " + tensor::shape_str(input.sizes()) + "), got " +
                (gradOutput.defined() ? tensor::shape_str(gradOutput.sizes()) : std::string("undefined")));
  }
  check_matches(where("updateGradInput"), gradOutput, input, "gradOutput", "input");
  ensure(gradInput, input.sizes(), input);
  if (l.split > 0) gradInput.narrow(l.dim, 0, l.split).copy_(gradOutput.narrow(l.dim, 0, l.split));
  if (l.size > l.split) {
    gradInput.narrow(l.dim, l.split, l.size - l.split)
        .copy_(gradOutput.narrow(l.dim, l.split + l.before, l.size - l.split));
  }
  return gradInput;
}

std::string Padding::str() const {
  std::ostringstream s;
  s << type_name() << "(" << dim << ", " << pad;
  if (nInputDim != 0) s << ", nInputDim " << nInputDim;
  if (value != 0) s << ", value " << value;
  if (index != 0) s << ", index " << index;
  s << ")";
  return s.str();
}

tensor::Json Padding::config() const {
  return tensor::Json::Object{{"dim", dim}, {"pad", pad}, {"nInputDim", nInputDim}, {"value", value}, {"index", index}};
}

ModulePtr Padding::fromConfig(const tensor::Json& config) {
  ConfigReader c(config, kTypeName);
  const int64_t dim = c.integer("dim"), pad = c.integer("pad"), nInputDim = c.integer("nInputDim", 0);
  const double value = c.number("value", 0);
  const int64_t index = c.integer("index", 0);
  c.finish();
  return std::make_shared<Padding>(dim, pad, nInputDim, value, index);
}

}  // namespace nn

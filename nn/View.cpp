// View.cpp
#include "nn/View.h"

#include <algorithm>

#include "nn/ModuleConfig.h"
#include "tensor/Format.h"

namespace nn {

using tensor::join;

View::View(Shape size_) : size(std::move(size_)) {
  bool inferred = false;
  for (int64_t s : size) {
    if (s == -1) {
      if (inferred) {
        throw Error(std::string(kTypeName) + ": expected at most one -1 size, got (" + join(size, ", ") + ")");
      }
      inferred = true;
    } else if (s <= 0) {
      throw Error(std::string(kTypeName) + ": expected positive sizes or -1, got (" + join(size, ", ") + ")");
    } else {
      numElements *= s;
    }
  }
  if (size.empty()) throw Error(std::string(kTypeName) + ": expected at least one size");
}

View& View::setNumInputDims(int64_t n) {
  if (n < 0) throw Error(where("setNumInputDims") + "expected a non-negative count, got " + std::to_string(n));
  numInputDims = n;
  return *this;
}

Shape View::outputShape(const Tensor& input) const {
  const int64_t rank = input.dim();
  const int64_t sampleDims = numInputDims ? std::min(*numInputDims, rank) : rank;
  int64_t perSample = 1;  // elements of the trailing sampleDims dimensions
  for (int64_t d = rank - sampleDims; d < rank; ++d) perSample *= input.size(d);
  if (perSample % numElements != 0) {
    const std::string holder =
        numInputDims ? "the last " + std::to_string(sampleDims) + " dimensions of an input" : std::string("an input");
    throw Error(where("updateOutput") + "expected " + holder + " to hold a multiple of " + std::to_string(numElements) +
                " elements to view as (" + join(size, ", ") + "), got " + tensor::shape_str(input.sizes()));
  }
  // What is left over is the batch, unless a -1 size absorbs it.
  const bool inferred = std::find(size.begin(), size.end(), -1) != size.end();
  int64_t batch = inferred ? 1 : perSample / numElements;
  for (int64_t d = 0; d < rank - sampleDims; ++d) batch *= input.size(d);
  Shape shape;
  if (!(batch == 1 && (!numInputDims || rank <= *numInputDims))) shape.push_back(batch);
  shape.insert(shape.end(), size.begin(), size.end());
  // the -1 size resolved, so that the shape compares with gradOutput's
  int64_t known = 1;
  for (int64_t s : shape) known *= s == -1 ? 1 : s;
  // with an empty batch (known == 0) the -1 size is still what one sample gives it
  for (int64_t& s : shape) {
    if (s == -1) s = known != 0 ? input.numel() / known : (numElements != 0 ? perSample / numElements : 0);
  }
  return shape;
}

std::string View::str() const { return type_name() + "(" + join(size, ", ") + ")"; }

tensor::Json View::config() const { return sizeConfig(size, "numInputDims", numInputDims); }

ModulePtr View::fromConfig(const tensor::Json& config) {
  ConfigReader c(config, kTypeName);
  auto m = std::make_shared<View>(c.shape("size"));
  if (auto n = c.optionalInteger("numInputDims")) m->setNumInputDims(*n);
  c.finish();
  return m;
}

}  // namespace nn

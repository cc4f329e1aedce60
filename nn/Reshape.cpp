// Reshape.cpp
#include "nn/Reshape.h"

#include "nn/ModuleConfig.h"
#include "tensor/Format.h"

namespace nn {

using tensor::join;

Reshape::Reshape(Shape size_, std::optional<bool> batchMode_) : size(std::move(size_)), batchMode(batchMode_) {
  if (size.empty()) throw Error(std::string(kTypeName) + ": expected at least one size");
  for (int64_t s : size) {
    if (s <= 0) throw Error(std::string(kTypeName) + ": expected positive sizes, got (" + join(size, ", ") + ")");
    nelement *= s;
  }
}

Shape Reshape::outputShape(const Tensor& input) const {
  const bool single =
      batchMode.has_value() ? !*batchMode : input.numel() == nelement && !(input.dim() > 0 && input.size(0) == 1);
  if (single) {
    if (input.numel() != nelement) {
      throw Error(where("updateOutput") + "expected an input of " + std::to_string(nelement) +
                  " elements to reshape to " + tensor::shape_str(size) + ", got " + tensor::shape_str(input.sizes()));
    }
    return size;
  }
  if (input.dim() == 0 || input.numel() != input.size(0) * nelement) {
    throw Error(where("updateOutput") + "expected an input of [batch x ...] with " + std::to_string(nelement) +
                " elements per sample to reshape to [batch x " + join(size, " x ") + "], got " +
                tensor::shape_str(input.sizes()));
  }
  Shape shape{input.size(0)};
  shape.insert(shape.end(), size.begin(), size.end());
  return shape;
}

std::string Reshape::str() const { return type_name() + "(" + join(size, "x") + ")"; }

tensor::Json Reshape::config() const { return sizeConfig(size, "batchMode", batchMode); }

ModulePtr Reshape::fromConfig(const tensor::Json& config) {
  ConfigReader c(config, kTypeName);
  const Shape size = c.shape("size");
  const std::optional<bool> batchMode = c.optionalFlag("batchMode");
  c.finish();
  return std::make_shared<Reshape>(size, batchMode);
}

}  // namespace nn

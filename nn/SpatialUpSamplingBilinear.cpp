// SpatialUpSamplingBilinear.cpp
#include "nn/SpatialUpSamplingBilinear.h"

#include "nn/ModuleConfig.h"

namespace nn {

SpatialUpSamplingBilinear::SpatialUpSamplingBilinear(int64_t scale, bool alignCorners)
    : scale_factor(scale), align_corners(alignCorners) {
  if (scale < 1) throw Error(std::string(kTypeName) + ": expected scale >= 1, got " + std::to_string(scale));
}

SpatialUpSamplingBilinear::SpatialUpSamplingBilinear(Size size, bool alignCorners)
    : oheight(size.oheight), owidth(size.owidth), align_corners(alignCorners) {
  if (oheight < 1 || owidth < 1) {
    throw Error(std::string(kTypeName) + ": expected an output size of at least 1 x 1, got " + std::to_string(oheight) +
                " x " + std::to_string(owidth));
  }
}

// See Note [Bilinear output size].
std::pair<int64_t, int64_t> SpatialUpSamplingBilinear::outputSize(int64_t height, int64_t width) const {
  if (scale_factor > 0) {
    if (align_corners) return {(height - 1) * scale_factor + 1, (width - 1) * scale_factor + 1};
    return {height * scale_factor, width * scale_factor};
  }
  return {oheight, owidth};
}

std::string SpatialUpSamplingBilinear::str() const {
  std::string s =
      type_name() + "(" +
      (scale_factor > 0 ? std::to_string(scale_factor) : std::to_string(oheight) + "x" + std::to_string(owidth));
  return s + (align_corners ? ")" : ", align_corners=false)");
}

tensor::Json SpatialUpSamplingBilinear::config() const {
  return tensor::Json::Object{
      {"scale", scale_factor}, {"oheight", oheight}, {"owidth", owidth}, {"align_corners", align_corners}};
}

ModulePtr SpatialUpSamplingBilinear::fromConfig(const tensor::Json& config) {
  ConfigReader c(config, kTypeName);
  const int64_t scale = c.integer("scale", 0), oh = c.integer("oheight", 0), ow = c.integer("owidth", 0);
  const bool align = c.flag("align_corners", true);
  c.finish();
  if (scale > 0) return std::make_shared<SpatialUpSamplingBilinear>(scale, align);
  return std::make_shared<SpatialUpSamplingBilinear>(Size{oh, ow}, align);
}

}  // namespace nn

// SpatialDilatedConvolution.cpp
#include "nn/SpatialDilatedConvolution.h"

#include "nn/ModuleConfig.h"

namespace nn {

SpatialDilatedConvolution::SpatialDilatedConvolution(int64_t nInputPlane_, int64_t nOutputPlane_, int64_t kW_,
                                                     int64_t kH_, int64_t dW_, int64_t dH_, int64_t padW_,
                                                     int64_t padH_, int64_t dilationW_, int64_t dilationH_)
    : SpatialConvolution(nInputPlane_, nOutputPlane_, kW_, kH_, dW_, dH_, padW_, padH_) {
  dilationW = dilationW_;
  dilationH = dilationH_;
  checkConfig(spec(), nullptr);
}

std::string SpatialDilatedConvolution::str() const { return describe({1, 0}, true); }

ModulePtr SpatialDilatedConvolution::fromConfig(const tensor::Json& config) {
  ConfigReader c(config, kTypeName);
  const int64_t nIn = c.integer("nInputPlane"), nOut = c.integer("nOutputPlane");
  const int64_t kW = c.integer("kW"), kH = c.integer("kH"), dW = c.integer("dW", 1), dH = c.integer("dH", 1);
  const int64_t padW = c.integer("padW", 0), padH = c.integer("padH", 0);
  const int64_t dilationW = c.integer("dilationW", 1), dilationH = c.integer("dilationH", 1);
  const int64_t groups = c.integer("groups", 1);
  const bool bias = c.flag("bias", true);
  const ConvAlgorithms algo = ConvAlgorithms::fromConfig(c);
  c.finish();  // every key read and checked before anything is allocated
  auto m = std::make_shared<SpatialDilatedConvolution>(nIn, nOut, kW, kH, dW, dH, padW, padH, dilationW, dilationH);
  // Torch's constructor has no groups; the field does (set after construction, as a user would)
  if (groups != 1) {
    m->groups = groups;
    m->weight = Tensor();  // reallocated in the new shape
    m->initParameters();
  }
  if (!bias) m->noBias();
  m->algo = algo;
  return m;
}

}  // namespace nn

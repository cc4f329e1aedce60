// SpatialConvolution.cpp: the fields as a ConvSpec; the computation is ConvolutionBase's.
#include "nn/SpatialConvolution.h"

#include "nn/ModuleConfig.h"

namespace nn {

SpatialConvolution::SpatialConvolution(int64_t nInputPlane_, int64_t nOutputPlane_, int64_t kW_, int64_t kH_,
                                       int64_t dW_, int64_t dH_, int64_t padW_, int64_t padH_, int64_t groups_)
    : ConvolutionModule(nInputPlane_, nOutputPlane_),
      kW(kW_), kH(kH_), dW(dW_), dH(dH_), padW(padW_), padH(padH_), groups(groups_) {
  initParameters();
}

ConvSpec SpatialConvolution::spec() const {
  ConvSpec s;
  s.nd = 2;
  s.k = {1, kH, kW};
  s.stride = {1, dH, dW};
  s.pad = {0, padH, padW};
  s.dilation = {1, dilationH, dilationW};
  s.groups = groups;
  return s;
}

std::string SpatialConvolution::str() const { return describe({1, 0}); }

tensor::Json SpatialConvolution::config() const {
  return tensor::Json::Object{{"nInputPlane", nInputPlane}, {"nOutputPlane", nOutputPlane}, {"kW", kW}, {"kH", kH},
                              {"dW", dW}, {"dH", dH}, {"padW", padW}, {"padH", padH}, {"groups", groups},
                              {"dilationW", dilationW}, {"dilationH", dilationH}, {"bias", bias.defined()},
                              {"algo", algo.config()}};
}

ModulePtr SpatialConvolution::fromConfig(const tensor::Json& config) {
  ConfigReader c(config, kTypeName);
  const int64_t nIn = c.integer("nInputPlane"), nOut = c.integer("nOutputPlane");
  const int64_t kW = c.integer("kW"), kH = c.integer("kH"), dW = c.integer("dW", 1), dH = c.integer("dH", 1);
  const int64_t padW = c.integer("padW", 0), padH = c.integer("padH", 0), groups = c.integer("groups", 1);
  const int64_t dilationW = c.integer("dilationW", 1), dilationH = c.integer("dilationH", 1);
  const bool bias = c.flag("bias", true);
  const ConvAlgorithms algo = ConvAlgorithms::fromConfig(c);
  c.finish();  // every key read and checked before anything is allocated
  auto m = std::make_shared<SpatialConvolution>(nIn, nOut, kW, kH, dW, dH, padW, padH, groups);
  m->dilationW = dilationW;
  m->dilationH = dilationH;
  m->checkConfig(m->spec(), nullptr);
  if (!bias) m->noBias();
  m->algo = algo;
  return m;
}

}  // namespace nn

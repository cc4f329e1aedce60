// SpatialFullConvolution.cpp: the fields as a transposed ConvSpec; the computation is
// ConvolutionBase's (Note [Transposed convolution as the adjoint]).
#include "nn/SpatialFullConvolution.h"

#include "nn/ModuleConfig.h"

namespace nn {

SpatialFullConvolution::SpatialFullConvolution(int64_t nInputPlane_, int64_t nOutputPlane_, int64_t kW_, int64_t kH_,
                                               int64_t dW_, int64_t dH_, int64_t padW_, int64_t padH_, int64_t adjW_,
                                               int64_t adjH_, int64_t groups_)
    : ConvolutionModule(nInputPlane_, nOutputPlane_),
      kW(kW_), kH(kH_), dW(dW_), dH(dH_), padW(padW_), padH(padH_), adjW(adjW_), adjH(adjH_), groups(groups_) {
  initParameters();
}

ConvSpec SpatialFullConvolution::spec() const {
  ConvSpec s;
  s.nd = 2;
  s.k = {1, kH, kW};
  s.stride = {1, dH, dW};
  s.pad = {0, padH, padW};
  s.adj = {0, adjH, adjW};
  s.groups = groups;
  return s;
}

std::string SpatialFullConvolution::str() const { return describe({1, 0}); }

tensor::Json SpatialFullConvolution::config() const {
  return tensor::Json::Object{{"nInputPlane", nInputPlane}, {"nOutputPlane", nOutputPlane}, {"kW", kW}, {"kH", kH},
                              {"dW", dW}, {"dH", dH}, {"padW", padW}, {"padH", padH}, {"adjW", adjW}, {"adjH", adjH},
                              {"groups", groups}, {"bias", bias.defined()}, {"algo", algo.config()}};
}

ModulePtr SpatialFullConvolution::fromConfig(const tensor::Json& config) {
  ConfigReader c(config, kTypeName);
  const int64_t nIn = c.integer("nInputPlane"), nOut = c.integer("nOutputPlane");
  const int64_t kW = c.integer("kW"), kH = c.integer("kH"), dW = c.integer("dW", 1), dH = c.integer("dH", 1);
  const int64_t padW = c.integer("padW", 0), padH = c.integer("padH", 0);
  const int64_t adjW = c.integer("adjW", 0), adjH = c.integer("adjH", 0), groups = c.integer("groups", 1);
  const bool bias = c.flag("bias", true);
  const ConvAlgorithms algo = ConvAlgorithms::fromConfig(c);
  c.finish();  // every key read and checked before anything is allocated
  auto m = std::make_shared<SpatialFullConvolution>(nIn, nOut, kW, kH, dW, dH, padW, padH, adjW, adjH, groups);
  if (!bias) m->noBias();
  m->algo = algo;
  return m;
}

}  // namespace nn

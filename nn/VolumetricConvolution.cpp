// VolumetricConvolution.cpp: the fields as a ConvSpec; the computation is ConvolutionBase's.
#include "nn/VolumetricConvolution.h"

#include "nn/ModuleConfig.h"

namespace nn {

VolumetricConvolution::VolumetricConvolution(int64_t nInputPlane_, int64_t nOutputPlane_, int64_t kT_, int64_t kW_,
                                             int64_t kH_, int64_t dT_, int64_t dW_, int64_t dH_, int64_t padT_,
                                             int64_t padW_, int64_t padH_, int64_t groups_)
    : ConvolutionModule(nInputPlane_, nOutputPlane_),
      kT(kT_), kW(kW_), kH(kH_), dT(dT_), dW(dW_), dH(dH_), padT(padT_), padW(padW_), padH(padH_), groups(groups_) {
  initParameters();
}

ConvSpec VolumetricConvolution::spec() const {
  ConvSpec s;
  s.nd = 3;
  s.k = {kT, kH, kW};
  s.stride = {dT, dH, dW};
  s.pad = {padT, padH, padW};
  s.groups = groups;
  return s;
}

std::string VolumetricConvolution::str() const { return describe({0, 2, 1}); }

tensor::Json VolumetricConvolution::config() const {
  return tensor::Json::Object{{"nInputPlane", nInputPlane}, {"nOutputPlane", nOutputPlane}, {"kT", kT}, {"kW", kW},
                              {"kH", kH}, {"dT", dT}, {"dW", dW}, {"dH", dH}, {"padT", padT}, {"padW", padW},
                              {"padH", padH}, {"groups", groups}, {"bias", bias.defined()}, {"algo", algo.config()}};
}

ModulePtr VolumetricConvolution::fromConfig(const tensor::Json& config) {
  ConfigReader c(config, kTypeName);
  const int64_t nIn = c.integer("nInputPlane"), nOut = c.integer("nOutputPlane");
  const int64_t kT = c.integer("kT"), kW = c.integer("kW"), kH = c.integer("kH");
  const int64_t dT = c.integer("dT", 1), dW = c.integer("dW", 1), dH = c.integer("dH", 1);
  const int64_t padT = c.integer("padT", 0), padW = c.integer("padW", 0), padH = c.integer("padH", 0);
  const int64_t groups = c.integer("groups", 1);
  const bool bias = c.flag("bias", true);
  const ConvAlgorithms algo = ConvAlgorithms::fromConfig(c);
  c.finish();  // every key read and checked before anything is allocated
  auto m = std::make_shared<VolumetricConvolution>(nIn, nOut, kT, kW, kH, dT, dW, dH, padT, padW, padH, groups);
  if (!bias) m->noBias();
  m->algo = algo;
  return m;
}

}  // namespace nn

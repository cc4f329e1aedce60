// VolumetricConvolution.cpp: the fields as a ConvSpec; the computation is ConvolutionBase's.
#include "nn/VolumetricConvolution.h"

namespace nn {

VolumetricConvolution::VolumetricConvolution(int64_t nInputPlane_, int64_t nOutputPlane_, int64_t kT_, int64_t kW_,
                                             int64_t kH_, int64_t dT_, int64_t dW_, int64_t dH_, int64_t padT_,
                                             int64_t padW_, int64_t padH_, int64_t groups_)
    : ConvolutionBase(nInputPlane_, nOutputPlane_, false),
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

}  // namespace nn

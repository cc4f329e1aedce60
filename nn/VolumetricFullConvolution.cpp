// VolumetricFullConvolution.cpp: the fields as a transposed ConvSpec; the computation is
// ConvolutionBase's (Note [Transposed convolution as the adjoint]).
#include "nn/VolumetricFullConvolution.h"

namespace nn {

VolumetricFullConvolution::VolumetricFullConvolution(int64_t nInputPlane_, int64_t nOutputPlane_, int64_t kT_,
                                                     int64_t kW_, int64_t kH_, int64_t dT_, int64_t dW_, int64_t dH_,
                                                     int64_t padT_, int64_t padW_, int64_t padH_, int64_t adjT_,
                                                     int64_t adjW_, int64_t adjH_, int64_t groups_)
    : ConvolutionBase(nInputPlane_, nOutputPlane_, true),
      kT(kT_), kW(kW_), kH(kH_), dT(dT_), dW(dW_), dH(dH_), padT(padT_), padW(padW_), padH(padH_),
      adjT(adjT_), adjW(adjW_), adjH(adjH_), groups(groups_) {
  initParameters();
}

ConvSpec VolumetricFullConvolution::spec() const {
  ConvSpec s;
  s.nd = 3;
  s.k = {kT, kH, kW};
  s.stride = {dT, dH, dW};
  s.pad = {padT, padH, padW};
  s.adj = {adjT, adjH, adjW};
  s.groups = groups;
  return s;
}

std::string VolumetricFullConvolution::str() const { return describe({0, 2, 1}); }

}  // namespace nn

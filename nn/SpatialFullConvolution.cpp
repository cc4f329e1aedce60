// SpatialFullConvolution.cpp: the fields as a transposed ConvSpec; the computation is
// ConvolutionBase's (Note [Transposed convolution as the adjoint]).
#include "nn/SpatialFullConvolution.h"

namespace nn {

SpatialFullConvolution::SpatialFullConvolution(int64_t nInputPlane_, int64_t nOutputPlane_, int64_t kW_, int64_t kH_,
                                               int64_t dW_, int64_t dH_, int64_t padW_, int64_t padH_, int64_t adjW_,
                                               int64_t adjH_, int64_t groups_)
    : ConvolutionBase(nInputPlane_, nOutputPlane_, true),
      kW(kW_), kH(kH_), dW(dW_), dH(dH_), padW(padW_), padH(padH_), adjW(adjW_), adjH(adjH_), groups(groups_) {
  initParameters();
}

ConvSpec SpatialFullConvolution::spec() const {
  ConvSpec s;
  s.nd = 2;
  s.k = {kH, kW, 1};
  s.stride = {dH, dW, 1};
  s.pad = {padH, padW, 0};
  s.adj = {adjH, adjW, 0};
  s.groups = groups;
  return s;
}

std::string SpatialFullConvolution::str() const { return describe({1, 0}); }

}  // namespace nn

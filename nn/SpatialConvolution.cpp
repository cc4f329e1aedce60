// SpatialConvolution.cpp: the fields as a ConvSpec; the computation is ConvolutionBase's.
#include "nn/SpatialConvolution.h"

namespace nn {

SpatialConvolution::SpatialConvolution(int64_t nInputPlane_, int64_t nOutputPlane_, int64_t kW_, int64_t kH_,
                                       int64_t dW_, int64_t dH_, int64_t padW_, int64_t padH_, int64_t groups_)
    : ConvolutionBase(nInputPlane_, nOutputPlane_, false),
      kW(kW_), kH(kH_), dW(dW_), dH(dH_), padW(padW_), padH(padH_), groups(groups_) {
  initParameters();
}

ConvSpec SpatialConvolution::spec() const {
  ConvSpec s;
  s.nd = 2;
  s.k = {kH, kW, 1};
  s.stride = {dH, dW, 1};
  s.pad = {padH, padW, 0};
  s.dilation = {dilationH, dilationW, 1};
  s.groups = groups;
  return s;
}

std::string SpatialConvolution::str() const { return describe({1, 0}); }

}  // namespace nn

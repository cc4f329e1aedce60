// SpatialDilatedConvolution.cpp
#include "nn/SpatialDilatedConvolution.h"

namespace nn {

SpatialDilatedConvolution::SpatialDilatedConvolution(int64_t nInputPlane_, int64_t nOutputPlane_, int64_t kW_,
                                                     int64_t kH_, int64_t dW_, int64_t dH_, int64_t padW_,
                                                     int64_t padH_, int64_t dilationW_, int64_t dilationH_)
    : SpatialConvolution(nInputPlane_, nOutputPlane_, kW_, kH_, dW_, dH_, padW_, padH_) {
  dilationW = dilationW_;
  dilationH = dilationH_;
  checkConfig(type_name() + ": ");
}

std::string SpatialDilatedConvolution::str() const { return describe({1, 0}, true); }

}  // namespace nn

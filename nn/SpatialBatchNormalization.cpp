// SpatialBatchNormalization.cpp
#include "nn/SpatialBatchNormalization.h"

namespace nn {

SpatialBatchNormalization::SpatialBatchNormalization(int64_t nOutput_, double eps_, double momentum_,
                                                     bool affine_)
    : BatchNormalization(nOutput_, eps_, momentum_, affine_, 4) {}

}  // namespace nn

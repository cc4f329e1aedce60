// VolumetricBatchNormalization.cpp
#include "nn/VolumetricBatchNormalization.h"

namespace nn {

VolumetricBatchNormalization::VolumetricBatchNormalization(int64_t nOutput_, double eps_, double momentum_,
                                                           bool affine_)
    : BatchNormalization(nOutput_, eps_, momentum_, affine_, 5) {}

}  // namespace nn

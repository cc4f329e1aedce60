// InstanceNorm.h: cudnn.InstanceNorm, nn::InstanceNorm on CUDA tensors through our kernels (the
// family base cudnn::GroupNormBase, cudnn/GroupNormBase.h), running statistics included.
#pragma once

#include "cudnn/GroupNormBase.h"
#include "nn/InstanceNorm.h"

namespace cudnn {

using InstanceNorm = GroupNormBase<nn::InstanceNorm>;

}  // namespace cudnn

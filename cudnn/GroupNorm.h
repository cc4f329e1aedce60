// GroupNorm.h: cudnn.GroupNorm, nn::GroupNorm on CUDA tensors through our kernels (the family
// base cudnn::GroupNormBase, cudnn/GroupNormBase.h).
#pragma once

#include "cudnn/GroupNormBase.h"
#include "nn/GroupNorm.h"

namespace cudnn {

using GroupNorm = GroupNormBase<nn::GroupNorm>;

}  // namespace cudnn

// SpatialBatchNormalization.cpp: all of the computation is in cudnn::BatchNormBase.
#include "cudnn/SpatialBatchNormalization.h"

// SpatialSoftMax.cpp: all of the computation is in cudnn::SoftMaxBase.
#include "cudnn/SpatialSoftMax.h"

// SpatialLogSoftMax.cpp: all of the computation is in nn::SoftMaxBase and kernels::softmax_*.
#include "nn/SpatialLogSoftMax.h"

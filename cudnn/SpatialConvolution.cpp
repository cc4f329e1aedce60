// SpatialConvolution.cpp: all of the computation is in cudnn::ConvolutionBase.
#include "cudnn/SpatialConvolution.h"

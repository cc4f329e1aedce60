// VolumetricFullConvolution.cpp: all of the computation is in cudnn::ConvolutionBase.
#include "cudnn/VolumetricFullConvolution.h"

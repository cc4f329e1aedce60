// SoftMax.cpp: all of the computation is in cudnn::SoftMaxBase.
#include "cudnn/SoftMax.h"

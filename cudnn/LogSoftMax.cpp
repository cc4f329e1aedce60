// LogSoftMax.cpp: all of the computation is in cudnn::SoftMaxBase.
#include "cudnn/LogSoftMax.h"

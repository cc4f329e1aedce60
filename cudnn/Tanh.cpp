// Tanh.cpp: all of the computation is in cudnn::Pointwise.
#include "cudnn/Tanh.h"

// Sigmoid.cpp: all of the computation is in nn::Pointwise and kernels::activation_*.
#include "nn/Sigmoid.h"

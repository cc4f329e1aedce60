// ReLU.cpp
#include "nn/ReLU.h"

namespace nn {

ReLU::ReLU(bool inplace_) : Pointwise(inplace_) {}

}  // namespace nn

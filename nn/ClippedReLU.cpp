// ClippedReLU.cpp
#include "nn/ClippedReLU.h"

#include <cmath>
#include <sstream>

namespace nn {

ClippedReLU::ClippedReLU(double ceiling_, bool inplace_) : Pointwise(inplace_), ceiling(ceiling_) {
  if (!(ceiling > 0) || !std::isfinite(ceiling)) {
    std::ostringstream msg;
    msg << "nn.ClippedReLU: expected a positive finite ceiling, got " << ceiling;
    throw Error(msg.str());
  }
}

}  // namespace nn

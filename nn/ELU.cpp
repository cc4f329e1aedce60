// ELU.cpp
#include "nn/ELU.h"

#include <cstdio>

namespace nn {

ELU::ELU(double alpha_, bool inplace_) : Pointwise(inplace_), alpha(alpha_) {}

std::string ELU::str() const {
  char buf[64];
  std::snprintf(buf, sizeof buf, " (alpha:%f)", alpha);
  return type_name() + buf;
}

}  // namespace nn

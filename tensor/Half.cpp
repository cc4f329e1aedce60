// Half.cpp: the host side of Half.h's conversions, through Eigen::half and Eigen::bfloat16,
// out of line so that Eigen stays out of the headers. NaNs never get here: see Note
// [16-bit NaNs].
#include "tensor/Half.h"

#include <Eigen/Core>

namespace tensor::detail {

uint16_t eigen_half_from_float(float f) { return Eigen::numext::bit_cast<uint16_t>(Eigen::half(f)); }

float eigen_half_to_float(uint16_t h) { return static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(h)); }

uint16_t eigen_bfloat16_from_float(float f) { return Eigen::numext::bit_cast<uint16_t>(Eigen::bfloat16(f)); }

}  // namespace tensor::detail

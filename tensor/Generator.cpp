// Generator.cpp: scalar draws and the process-wide default generator.
#include "tensor/Generator.h"

#include <cmath>
#include <numbers>

#include "tensor/DType.h"

namespace tensor {

double Generator::normal() {
  double u1 = 0, u2 = 0;
  Philox::uniform_pair(seed_, reserve(1), u1, u2);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

int64_t Generator::randint(int64_t n) {
  TENSOR_CHECK(n > 0, "Generator::randint: expected n > 0, got ", n);
  return static_cast<int64_t>(uniform() * static_cast<double>(n)) % n;
}

Generator& default_generator() {
  static Generator gen;
  return gen;
}

void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

}  // namespace tensor

// Report.h: what the testing kit's checks return. A check never stops at the first mismatch:
// it records every failed expectation as one line of text (naming the tensor, the shapes and
// dtypes, the error and its bound) and counts the expectations it evaluated, so a doctest,
// GoogleTest or plain main() test reports all of them. Misuse (a float32 input to a float64
// gradient check, a tensor with no non-contiguous layout) throws tensor::Error at once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensor/DType.h"

namespace nn::testkit {

// Thrown by Report::require(): a tensor::Error, so any framework that reports a
// std::exception reports a failed check with every line of its report.
class Failure : public tensor::Error {
 public:
  using tensor::Error::Error;
};

struct Report {
  std::string subject;                // what was checked: "cudnn.ReLU vs nn.ReLU in float16"
  std::vector<std::string> failures;  // one line per failed expectation
  int64_t checks = 0;                 // expectations evaluated

  bool ok() const { return failures.empty(); }
  // Counts one expectation; records `what` when it failed. Returns `passed`.
  bool expect(bool passed, const std::string& what);
  // Adds another report's checks and failures, its subject prefixing each of its lines.
  void merge(const Report& other);
  // "<subject>: ok (n checks)" or "<subject>: k of n checks failed:" and one line each.
  std::string str() const;
  // Throws Failure(str()) unless ok(); returns *this for chaining.
  const Report& require() const;
};

}  // namespace nn::testkit

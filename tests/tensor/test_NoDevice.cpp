// tensor/Cuda.h's queries on a machine without a visible GPU (a CUDA build on a CPU-only CI
// machine, or a build without CUDA): they answer as documented instead of throwing.
#include <doctest/doctest.h>

#include "tensor/Cuda.h"

TEST_CASE("cuda queries without a visible device: no capture is under way") {
  if (tensor::cuda::device_count() > 0) {
    MESSAGE("a GPU is visible: tests/cudnn/test_GraphStep covers capturing() there");
    return;
  }
  CHECK_FALSE(tensor::cuda::is_available());
  CHECK_FALSE(tensor::cuda::Graph::capturing());  // threw "no CUDA device is visible" on a CUDA build
  CHECK_FALSE(tensor::cuda::Graph::capturing(0));
}

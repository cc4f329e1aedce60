// gpu_main.cpp: doctest runner for the GPU suites. Without a usable CUDA device the whole
// executable exits 77, which meson reports as SKIP: a GPU test never counts as passed
// where it could not run.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include "tensor/Cuda.h"

int main(int argc, char** argv) {
  if (!tensor::cuda::is_available()) {
    std::printf("SKIP: no CUDA device visible (built with CUDA: %s)\n",
                tensor::cuda::built_with_cuda() ? "yes" : "no");
    return 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}

// test_swish_gpu.cpp: ext::CudnnSwish against ext::Swish with the testing kit's whole twin
// contract (float64 and float32, training and evaluation, contiguous and not, NaN/Inf parity,
// an empty batch, no allocation in steady state, convert and model-file round trips). Without
// a GPU it exits 77, which meson reports as SKIP.
#include <cstdio>

#include "CudnnSwish.h"
#include "Register.h"
#include "tensor/Cuda.h"
#include "testkit/Testkit.h"

using tensor::DType;

int main() {
  if (!tensor::cuda::is_available()) {
    std::printf("SKIP: no CUDA device visible\n");
    return 77;
  }
  ext::register_swish();
  nn::testkit::ContractOptions options;
  options.dtypes = {DType::Float64, DType::Float32};  // the kernels' dtypes
  options.twinType = "ext.CudnnSwish";
  tensor::Generator gen(2);
  int failed = 0;
  for (double beta : {1.0, 0.75}) {
    const nn::testkit::Report r = nn::testkit::check_twin_contract(
        [beta] { return std::make_shared<ext::Swish>(beta); },
        [beta] { return std::make_shared<ext::CudnnSwish>(beta); }, tensor::uniform({8, 3, 5, 5}, -3, 3, gen), options);
    std::printf("%s\n", r.str().c_str());
    failed += r.ok() ? 0 : 1;
  }
  std::printf("test_swish_gpu: %s\n", failed ? "FAILED" : "ok");
  return failed ? 1 : 0;
}

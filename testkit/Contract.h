// Contract.h: every check a built-in twin passes, in one call, for a user's module and its
// twin: check_twin in each dtype, in training and evaluation mode, on a contiguous and a
// non-contiguous input; NaN and Inf parity; an empty batch; no allocation in steady state; a
// convert round trip and a model-file round trip. The gradients of the reference itself are
// checked with check_gradients (GradCheck.h), which needs no GPU.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "testkit/TwinCheck.h"

namespace nn::testkit {

struct ContractOptions {
  std::vector<tensor::DType> dtypes = {tensor::DType::Float64, tensor::DType::Float32, tensor::DType::Float16,
                                       tensor::DType::BFloat16};
  std::function<TwinTolerance(tensor::DType)> tolerance = TwinTolerance::for_dtype;
  int64_t batchDim = 0;   // the dimension an empty batch empties
  bool nonfinite = true;  // NaN/Inf parity, in the input and in gradOutput (off for modules that define no such parity)
  bool convert = true;    // the pair is registered with nn::register_twin
  bool modelFile = true;  // the type is registered with nn::register_model_type
  std::string twinType;   // for check_convert_roundtrip
  tensor::Device device = tensor::Device::cuda(0);
};

// `makeReference` builds the nn module, `makeTwin` its twin with the same arguments (fresh
// ones for each check). Runs with TF32 off where the build has cuDNN.
Report check_twin_contract(const std::function<nn::ModulePtr()>& makeReference,
                           const std::function<nn::ModulePtr()>& makeTwin, const tensor::Tensor& input,
                           const ContractOptions& options = {});

}  // namespace nn::testkit

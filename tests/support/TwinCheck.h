// TwinCheck.h: doctest adapters over the testing kit's twin checks (testkit/TwinCheck.h): an nn
// module (float64, CPU) and its cudnn twin (on the GPU, in a chosen dtype) with the same state
// give the same output, gradInput, parameter gradients and buffers, within stated tolerances;
// then the twin's state survives a safetensors round trip and a convert round trip nn -> cudnn -> nn.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "nn/Criterion.h"
#include "nn/Module.h"
#include "testkit/Inputs.h"
#include "testkit/TwinCheck.h"

namespace testing {

using nn::testkit::TwinTolerance;   // forward / backward bounds, for_dtype(dt)
using nn::testkit::with_nonfinite;  // NaN, +Inf and -Inf at fixed flat positions

// nn::testkit::check_twin with the twin on cuda:0 in `dtype` (a non-contiguous copy of the
// input when `noncontiguous`). Training mode is whatever the modules are in.
void expect_twin_matches(nn::Module& reference, nn::Module& twin, const tensor::Tensor& input,
                         tensor::DType dtype = tensor::DType::Float32,
                         TwinTolerance tol = TwinTolerance::for_dtype(tensor::DType::Float32),
                         bool noncontiguous = false);

// nn::testkit::check_twin_criterion: the same for criteria and a target.
void expect_twin_criterion_matches(nn::Criterion& reference, nn::Criterion& twin, const tensor::Tensor& input,
                                   const tensor::Tensor& target, tensor::DType dtype = tensor::DType::Float32,
                                   TwinTolerance tol = TwinTolerance::for_dtype(tensor::DType::Float32));

// nn::testkit::check_twin_nonfinite: NaN, +Inf and -Inf at the same places of the output,
// gradInput, every parameter gradient and every buffer; finite values within the tolerance.
void expect_twin_nonfinite_matches(nn::Module& reference, nn::Module& twin, const tensor::Tensor& input,
                                   const std::vector<int64_t>& positions = {},
                                   tensor::DType dtype = tensor::DType::Float32,
                                   TwinTolerance tol = TwinTolerance::for_dtype(tensor::DType::Float32));

// nn::testkit::check_twin_nonfinite_gradient: a finite input, NaN, +Inf and -Inf in gradOutput;
// the same kinds at the same places of gradInput and every parameter gradient.
void expect_twin_nonfinite_gradient_matches(nn::Module& reference, nn::Module& twin, const tensor::Tensor& input,
                                            const std::vector<int64_t>& positions = {},
                                            tensor::DType dtype = tensor::DType::Float32,
                                            TwinTolerance tol = TwinTolerance::for_dtype(tensor::DType::Float32));

// nn::testkit::check_twin_criterion_nonfinite: the same for a criterion.
void expect_twin_criterion_nonfinite_matches(nn::Criterion& reference, nn::Criterion& twin, const tensor::Tensor& input,
                                             const tensor::Tensor& target, const std::vector<int64_t>& positions = {},
                                             tensor::DType dtype = tensor::DType::Float32,
                                             TwinTolerance tol = TwinTolerance::for_dtype(tensor::DType::Float32));

// nn::testkit::compare_nonfinite: element-wise agreement on NaN / +Inf / -Inf and on the
// finite values.
void expect_same_nonfinite(const char* what, const tensor::Tensor& got, const tensor::Tensor& want, double tol);

// nn::testkit::check_convert_roundtrip: convert(nn module -> cudnn) gives the expected type
// name and the same outputs as the nn module; converting back gives an nn module with
// bit-identical state (same storage when it was already on the target device), the training
// mode preserved.
void expect_convert_roundtrip(nn::ModulePtr module, const tensor::Tensor& input);

// nn::testkit::check_criterion_convert_roundtrip: the same for a criterion, in float32.
void expect_criterion_convert_roundtrip(nn::CriterionPtr criterion, const tensor::Tensor& input,
                                        const tensor::Tensor& target);

}  // namespace testing

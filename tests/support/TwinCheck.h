// TwinCheck.h: the cudnn.torch promise, as a test helper: an nn module (float64, CPU) and its
// cudnn twin (on the GPU, in a chosen dtype) with the same state give the same output,
// gradInput, parameter gradients and buffers, within stated tolerances; then the twin's state
// survives a safetensors round trip and a convert round trip nn -> cudnn -> nn.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "nn/Criterion.h"
#include "nn/Module.h"

namespace testing {

struct TwinTolerance {
  double forward = 1e-5;   // ||twin - nn|| / ||nn|| on the output and buffers
  double backward = 1e-4;  // on gradInput and every parameter gradient
  static TwinTolerance for_dtype(tensor::DType dt);  // float32 (TF32 off), float16, bfloat16, float64
};

// `reference` is an nn module; `twin` its cudnn twin built with the same arguments. The twin
// gets the reference's state, moves to the GPU and `dtype`; both see `input` (the twin a
// converted copy, made non-contiguous when `noncontiguous`), and one random gradOutput.
// Training mode is whatever the modules are in.
void expect_twin_matches(nn::Module& reference, nn::Module& twin, const tensor::Tensor& input,
                         tensor::DType dtype = tensor::DType::Float32, TwinTolerance tol = TwinTolerance::for_dtype(tensor::DType::Float32),
                         bool noncontiguous = false);

// The same for criteria and a target (a target of the input's dtype, MSE's, is converted
// with the input: to float64 for nn, to `dtype` for the twin; class targets are kept).
void expect_twin_criterion_matches(nn::Criterion& reference, nn::Criterion& twin, const tensor::Tensor& input,
                                   const tensor::Tensor& target, tensor::DType dtype = tensor::DType::Float32,
                                   TwinTolerance tol = TwinTolerance::for_dtype(tensor::DType::Float32));

// Non-finite inputs (Note [NaN and Inf] in nn/kernels/Activation.h): `input` with NaN, +Inf
// and -Inf written at fixed flat positions (by default about 1/7, 3/7 and 5/7 of the way
// through; `positions` lists others, cycling through NaN, +Inf, -Inf).
tensor::Tensor with_nonfinite(const tensor::Tensor& input, const std::vector<int64_t>& positions = {});

// Twin against nn (float64, CPU) on such an input: element by element, both say NaN, +Inf or
// -Inf at the same places of the output, gradInput (from a finite gradOutput), every parameter
// gradient and every buffer, and the finite values agree within the tolerance. Mismatches are
// listed with their positions and both values, so the test measures what the twin does.
void expect_twin_nonfinite_matches(nn::Module& reference, nn::Module& twin, const tensor::Tensor& input,
                                   const std::vector<int64_t>& positions = {},
                                   tensor::DType dtype = tensor::DType::Float32,
                                   TwinTolerance tol = TwinTolerance::for_dtype(tensor::DType::Float32));

// The same for a criterion: the losses are both NaN, the same infinity, or close; the
// gradients agree element by element. The target is kept as given (converted like the input
// when it has the input's dtype, as expect_twin_criterion_matches does).
void expect_twin_criterion_nonfinite_matches(nn::Criterion& reference, nn::Criterion& twin, const tensor::Tensor& input,
                                             const tensor::Tensor& target, const std::vector<int64_t>& positions = {},
                                             tensor::DType dtype = tensor::DType::Float32,
                                             TwinTolerance tol = TwinTolerance::for_dtype(tensor::DType::Float32));

// Element-wise agreement of two tensors on NaN / +Inf / -Inf and on the finite values.
void expect_same_nonfinite(const char* what, const tensor::Tensor& got, const tensor::Tensor& want, double tol);

// convert(nn module -> cudnn) gives the expected type name and the same outputs as the nn
// module; converting back gives an nn module with bit-identical state (same storage when
// it was already on the target device), the training mode preserved.
void expect_convert_roundtrip(nn::ModulePtr module, const tensor::Tensor& input);

// The same for a criterion (nn::convert(CriterionPtr, ...) both ways), in float32: the cudnn
// criterion gives nn's loss and gradient, its state lives on the GPU, and converting back
// gives an nn criterion with bit-identical state. A floating target is taken in float32.
void expect_criterion_convert_roundtrip(nn::CriterionPtr criterion, const tensor::Tensor& input,
                                        const tensor::Tensor& target);

}  // namespace testing

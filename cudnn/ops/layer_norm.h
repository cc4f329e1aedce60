// layer_norm.h: cuDNN's graph-API layer norm for cudnn::LayerNorm, the alternative to our
// kernels (cudnn/kernels/LayerNorm.h) behind the flag layernorm.engine:
//   ours  (default) our kernels: one block per row, fixed-order parameter sums;
//   cudnn cuDNN's layer norm engines (a one-operation graph of
//         CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR / ..._NORM_BACKWARD_DESCRIPTOR in
//         CUDNN_LAYER_NORM mode, built through the backend API as ops/attention_graph.cpp
//         builds attention) where cuDNN builds and runs a plan: float16, bfloat16 and float32
//         data with weight and bias; our kernels elsewhere (float64, no affine, a refused
//         graph), saying why under verbose=true.
// Set it with set_flags("layernorm.engine=cudnn") or CUDNN_NN_FLAGS; it is
// config().layernorm_engine, restored by ScopedConfig (ScopedLayerNormEngine sets and restores it
// alone). The statistics are the same buffers either way (mean and rstd, float32 [rows]), so a
// backward may take the other engine than its forward.
#pragma once

#include <string>

#include "cudnn/Config.h"
#include "cudnn/core/ScopedSetting.h"
#include "tensor/Tensor.h"

namespace cudnn {

// The flag layernorm.engine (LayerNormEngine and its names are cudnn/Config.h's).
inline LayerNormEngine layer_norm_engine() { return config().layernorm_engine; }
using ScopedLayerNormEngine = ScopedSetting<&Config::layernorm_engine>;

// Why the graph is not tried for x (float64, no affine parameters, empty), or "" when it is.
std::string layer_norm_graph_refusal(const tensor::Tensor& x, bool affine);

// x [rows x cols] contiguous on a CUDA device; weight, bias [cols] float32 (the engines'
// parameter type; the module hands float32 copies of 16-bit parameters); y like x; mean,
// rstd float32 [rows]. False, with `why`, where cuDNN builds or runs no plan for it (nothing
// written then: the caller runs our kernels).
bool layer_norm_forward_graph(const tensor::Tensor& x, int64_t rows, int64_t cols, const tensor::Tensor& weight,
                              const tensor::Tensor& bias, double eps, const tensor::Tensor& y,
                              const tensor::Tensor& mean, const tensor::Tensor& rstd, std::string& why);
// dy like x; dx like x; weight [cols] float32; dweight and dbias [cols] float32, written (not
// accumulated). The saved statistics stand in for epsilon.
bool layer_norm_backward_graph(const tensor::Tensor& x, const tensor::Tensor& dy, int64_t rows, int64_t cols,
                               const tensor::Tensor& weight, const tensor::Tensor& mean, const tensor::Tensor& rstd,
                               const tensor::Tensor& dx, const tensor::Tensor& dweight, const tensor::Tensor& dbias,
                               std::string& why);

// The engine the last layer norm pass on this thread ran: "cudnn engine N", "ours", or
// "ours: <why cuDNN's was not taken>". For tests and benchmarks.
const std::string& layer_norm_last_path(bool backward = false);
void set_layer_norm_last_path(bool backward, std::string path);

}  // namespace cudnn

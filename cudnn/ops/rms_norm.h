// rms_norm.h: cuDNN's graph-API RMS norm for cudnn::RMSNorm, the alternative to our kernels
// (cudnn/kernels/RMSNorm.h) behind the flag rmsnorm.engine:
//   kernel (default) our kernels: one block per row, fixed-order weight sums;
//   cudnn  cuDNN's norm engines in CUDNN_RMS_NORM mode (the one-operation graph of
//          layer_norm.cpp, which builds both modes through graph_plan.h, its plans in the same
//          graph::PlanCache): float16, bfloat16 and float32 data with a weight; our kernels
//          elsewhere (float64, no affine, an empty input, a refused graph), saying why under
//          verbose=true and in rms_norm_last_path().
// Set it with set_flags("rmsnorm.engine=cudnn") or CUDNN_NN_FLAGS; it is config().rmsnorm_engine,
// restored by ScopedConfig (ScopedRMSNormEngine sets and restores it alone). The statistics are
// the same buffer either way (rstd, float32 [rows]), so a backward may take the other engine
// than its forward.
#pragma once

#include <string>

#include "cudnn/Config.h"
#include "cudnn/core/ScopedSetting.h"
#include "tensor/Tensor.h"

namespace cudnn {

// The flag rmsnorm.engine (RMSNormEngine and its names are cudnn/Config.h's).
inline RMSNormEngine rms_norm_engine() { return config().rmsnorm_engine; }
using ScopedRMSNormEngine = ScopedSetting<&Config::rmsnorm_engine>;

// Why the graph is not tried for x (float64, no weight, empty), or "" when it is.
std::string rms_norm_graph_refusal(const tensor::Tensor& x, bool affine);

// x [rows x cols] contiguous on a CUDA device; weight [cols] float32 (the module hands a float32
// copy of a 16-bit weight); y like x; rstd float32 [rows]. False, with `why`, where cuDNN builds
// or runs no plan for it (nothing written then: the caller runs our kernels).
bool rms_norm_forward_graph(const tensor::Tensor& x, int64_t rows, int64_t cols, const tensor::Tensor& weight,
                            double eps, const tensor::Tensor& y, const tensor::Tensor& rstd, std::string& why);
// dy like x; dx like x; weight [cols] float32; dweight [cols] float32, written (not accumulated).
// The saved rstd stands in for epsilon.
bool rms_norm_backward_graph(const tensor::Tensor& x, const tensor::Tensor& dy, int64_t rows, int64_t cols,
                             const tensor::Tensor& weight, const tensor::Tensor& rstd, const tensor::Tensor& dx,
                             const tensor::Tensor& dweight, std::string& why);

// The engine the last RMS norm pass on this thread ran: "cudnn engine N", "kernel", or
// "kernel: <why cuDNN's was not taken>". For tests and benchmarks.
const std::string& rms_norm_last_path(bool backward = false);
void set_rms_norm_last_path(bool backward, std::string path);

}  // namespace cudnn

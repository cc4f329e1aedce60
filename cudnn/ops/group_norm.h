// group_norm.h: group normalisation through cuDNN's graph-API layer norm, for cudnn::GroupNorm
// and cudnn::InstanceNorm (cudnn/GroupNormBase.h), the alternative to our kernels
// (cudnn/kernels/GroupNorm.h) behind the flag groupnorm.engine:
//   kernel (default) our kernels: one block a (sample, group), fixed-order parameter sums;
//   cudnn  the input [N x C x *] viewed as a layer norm over [N*G x (C/G)*S] with unit scale and
//          zero bias (the one-operation graph of cudnn/ops/layer_norm.h, its plans in its
//          graph::PlanCache), then the per-channel affine parameters and their gradients on our
//          kernels (Note [Group norm as a layer norm] in group_norm.cpp); our kernels where the
//          graph cannot serve (float64, InstanceNorm's running statistics, an empty input, a
//          shape cuDNN refuses), saying why in group_norm_last_path().
// Set it with set_flags("groupnorm.engine=cudnn") or CUDNN_NN_FLAGS; it is
// config().groupnorm_engine, restored by ScopedConfig (ScopedGroupNormEngine sets and restores it
// alone). The statistics are the same buffers either way (saveMean and saveRstd, float32 [N x G]
// for float32 and 16-bit data), so a backward may take the other engine than its forward.
#pragma once

#include <string>

#include "cudnn/Config.h"
#include "cudnn/core/ScopedSetting.h"
#include "tensor/Tensor.h"

namespace cudnn {

// The flag groupnorm.engine (GroupNormEngine and its names are cudnn/Config.h's).
inline GroupNormEngine group_norm_engine() { return config().groupnorm_engine; }
using ScopedGroupNormEngine = ScopedSetting<&Config::groupnorm_engine>;

// Why the graph is not tried for x, or "" when it is. runningStatistics: in a forward, the
// module tracks running statistics (InstanceNorm's); in a backward, they normalised (its
// evaluation mode).
std::string group_norm_graph_refusal(const tensor::Tensor& x, bool backward, bool runningStatistics);

// x [N x C x *] contiguous on a CUDA device, as rows = N*G rows of cols = (C/G)*S values; ones and
// zeros float32 [cols]; y like x, written with the normalised x (no affine); mean and rstd
// float32 [rows]. False, with `why`, where cuDNN builds or runs no plan (nothing written then).
bool group_norm_forward_graph(const tensor::Tensor& x, int64_t rows, int64_t cols, const tensor::Tensor& ones,
                              const tensor::Tensor& zeros, double eps, const tensor::Tensor& y,
                              const tensor::Tensor& mean, const tensor::Tensor& rstd, std::string& why);
// g the gradient of the normalised x (gradOutput times the channel's weight), like x; dx like x;
// dscale and dbias float32 [cols], scratch cuDNN writes (its per-column sums, not the module's
// per-channel gradients). The saved statistics stand in for epsilon.
bool group_norm_backward_graph(const tensor::Tensor& x, const tensor::Tensor& g, int64_t rows, int64_t cols,
                               const tensor::Tensor& ones, const tensor::Tensor& mean, const tensor::Tensor& rstd,
                               const tensor::Tensor& dx, const tensor::Tensor& dscale, const tensor::Tensor& dbias,
                               std::string& why);

// The engine the last group norm pass (forward, or backward's input gradient) on this thread
// ran: "cudnn engine N", "kernel", or "kernel: <why cuDNN's was not taken>". For tests and
// benchmarks.
const std::string& group_norm_last_path(bool backward = false);
void set_group_norm_last_path(bool backward, std::string path);

}  // namespace cudnn

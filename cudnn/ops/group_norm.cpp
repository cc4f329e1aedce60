// group_norm.cpp: group normalisation as cuDNN's layer norm (group_norm.h).
//
// Note [Group norm as a layer norm]
// Group (n, g) of a contiguous input [N x C x S] is the contiguous row n G + g of M = (C/G) S
// values, so a layer norm over [N*G x M] computes group norm's mean, biased variance and xhat.
// A layer norm's scale and bias are per column, but the channel of column j of row (n, g) is
// g C/G + j/S: it depends on the row's group, so weight[c] cannot be folded into the column
// scale (G = 1 aside, which is not singled out: one path). The layer norm runs with unit scale
// and zero bias, and the per-channel parts stay ours:
//   forward  cuDNN's training phase writes xhat into y and the statistics into saveMean and
//            saveRstd, in evaluation too: every forward keeps its statistics (nn's contract,
//            nn/GroupNormBase.h), and a backward after an evaluation forward is legal, so the
//            inference phase, which writes none, is not used (it would save N*G*8 bytes of
//            writes against megabytes of data). With affine parameters our apply kernel then
//            rewrites y = (x - mean) rstd weight[c] + bias[c] from x and cuDNN's statistics:
//            the kernel engine's y for those statistics exactly, where y weight + bias from a
//            16-bit xhat would round twice, for the same bytes moved (a read and a write).
//   backward dx = rstd (g - mean(g) - xhat mean(g xhat)) with g = dy weight[c]: cuDNN's layer
//            norm backward with unit scale, given g for dy, which our kernel forms in the data
//            type (for 16-bit data one rounding more than the kernel engine, which keeps g in
//            float: well inside the twins' tolerances). cuDNN's per-column scale and bias
//            gradients are scratch, dropped; gradWeight and gradBias come from our fixed-order
//            kernel, as on the kernel engine (the same bits).
// Our kernels run instead, the path saying why, for float64 (cuDNN's norm engines take none);
// InstanceNorm with tracked running statistics: in training their update needs each instance's
// biased variance, which the layer norm does not output (1/rstd^2 - eps would cancel digits
// where the variance is small against eps), and in evaluation they normalise, which is no layer
// norm (nor is its backward, dx = rstd weight dy); an empty input; and a shape or type cuDNN
// builds or runs no plan for (layer_norm.cpp's reason).
#include "cudnn/ops/group_norm.h"

#include <string>
#include <utility>

#include "cudnn/ops/layer_norm.h"

namespace cudnn {

using tensor::DType;
using tensor::Tensor;

namespace {
thread_local std::string last_forward, last_backward;
}  // namespace

std::string group_norm_graph_refusal(const Tensor& x, bool backward, bool runningStatistics) {
  if (x.dtype() == DType::Float64) return "cuDNN's layer norm takes no float64";
  if (runningStatistics) {
    return backward ? "the running statistics normalised (InstanceNorm in evaluation): dx = rstd weight dy"
                    : "InstanceNorm's running statistics (cuDNN's layer norm keeps no variance to update them "
                      "with, nor normalises with given statistics)";
  }
  if (x.numel() == 0) return "an empty input";
  return "";
}

bool group_norm_forward_graph(const Tensor& x, int64_t rows, int64_t cols, const Tensor& ones, const Tensor& zeros,
                              double eps, const Tensor& y, const Tensor& mean, const Tensor& rstd, std::string& why) {
  return layer_norm_forward_graph(x, rows, cols, ones, zeros, eps, y, mean, rstd, why);
}

bool group_norm_backward_graph(const Tensor& x, const Tensor& g, int64_t rows, int64_t cols, const Tensor& ones,
                               const Tensor& mean, const Tensor& rstd, const Tensor& dx, const Tensor& dscale,
                               const Tensor& dbias, std::string& why) {
  return layer_norm_backward_graph(x, g, rows, cols, ones, mean, rstd, dx, dscale, dbias, why);
}

const std::string& group_norm_last_path(bool backward) { return backward ? last_backward : last_forward; }
void set_group_norm_last_path(bool backward, std::string path) {
  (backward ? last_backward : last_forward) = std::move(path);
}

}  // namespace cudnn

// GroupNormBase.cpp: checks and buffers around kernels::group_norm_*, as nn::GroupNormBase, and
// the choice of engine (groupnorm.engine: our kernels, or cuDNN's layer norm through
// cudnn/ops/group_norm.h; See Note [Group norm as a layer norm] in cudnn/ops/group_norm.cpp).
#include "cudnn/GroupNormBase.h"

#include <optional>
#include <string>

#include "cudnn/kernels/GroupNorm.h"
#include "cudnn/ops/group_norm.h"
#include "nn/Buffers.h"

namespace cudnn::detail {

namespace {

bool is_half(tensor::DType dt) { return dt == tensor::DType::Float16 || dt == tensor::DType::BFloat16; }

// nn::ensure for a statistics buffer [N x G] next to x: float32 for 16-bit x (nn/GroupNormBase.h).
void ensure_stats(Tensor& buf, const tensor::Shape& shape, const Tensor& x) {
  nn::ensure(buf, shape, is_half(x.dtype()) ? tensor::DType::Float32 : x.dtype(), x.device());
}

// The checks every pass starts with: a floating CUDA input of the parameters' (or the running
// statistics') dtype and device, then nn's shape checks; with gradOutput its checks too.
nn::GroupNormBase::Layout checked(const nn::GroupNormBase& m, const Tensor& input, const Tensor* gradOutput,
                                  const char* method) {
  const std::string w = m.where(method);
  const Tensor& ref = m.typeReference();
  check_on_device(w, input, ref);
  check_cuda(w, input, "input");
  if (ref.defined()) nn::check_matches(w, input, ref, "input", m.weight.defined() ? "weight" : "running_mean");
  const nn::GroupNormBase::Layout l = m.layout(input, method);
  if (gradOutput) {
    check_cuda(w, *gradOutput, "gradOutput");
    m.checkGradOutput(input, *gradOutput, method);
  }
  return l;
}

kernels::GroupDims dims_of(const nn::GroupNormBase::Layout& l) { return {l.N, l.C, l.G, l.S}; }

// The first n of t, float32 [at least n] on `device`, grown where shorter (then filled with
// `fill` where given).
Tensor prefix(Tensor& t, int64_t n, tensor::Device device, std::optional<double> fill) {
  if (!t.defined() || t.numel() < n || t.device() != device) {
    t = fill ? tensor::full({n}, *fill, tensor::DType::Float32, device)
             : tensor::empty({n}, tensor::DType::Float32, device);
  }
  return t.narrow(0, 0, n);
}

// Layer norm's view of the input: N*G rows of (C/G)*S values.
struct RowsCols {
  int64_t rows, cols;
};
RowsCols rows_cols(const nn::GroupNormBase::Layout& l) { return {l.N * l.G, l.C / l.G * l.S}; }

// gradInput through cuDNN's layer norm backward where groupnorm.engine=cudnn and it serves (Note
// [Group norm as a layer norm]); false, the path saying why, where our kernel is to run.
bool cudnn_backward_input(nn::GroupNormBase& m, const Tensor& x, const Tensor& gy, const nn::GroupNormBase::Layout& l,
                          GroupNormScratch& scratch) {
  if (group_norm_engine() != GroupNormEngine::Cudnn) {
    set_group_norm_last_path(true, "kernel");
    return false;
  }
  std::string why = group_norm_graph_refusal(x, true, m.fixedStatistics);
  if (why.empty()) {
    const auto [rows, cols] = rows_cols(l);
    const Tensor ones = prefix(scratch.ones, cols, x.device(), 1);
    const Tensor dscale = prefix(scratch.dscale, cols, x.device(), std::nullopt);
    const Tensor dbias = prefix(scratch.dbias, cols, x.device(), std::nullopt);
    Tensor g = gy;  // dy weight[c], the gradient of xhat
    if (m.affine()) {
      g = tensor::empty(x.sizes(), x.dtype(), x.device());  // from the caching allocator
      kernels::group_norm_scale_channels(gy, dims_of(l), m.weight, g);
    }
    if (group_norm_backward_graph(x, g, rows, cols, ones, m.saveMean, m.saveRstd, m.gradInput, dscale, dbias, why)) {
      set_group_norm_last_path(true, why);
      return true;
    }
  }
  set_group_norm_last_path(true, "kernel: " + why);
  return false;
}

}  // namespace

void group_norm_forward(nn::GroupNormBase& m, const Tensor& input, GroupNormScratch& scratch) {
  const nn::GroupNormBase::Layout l = checked(m, input, nullptr, "updateOutput");
  const Tensor x = input.contiguous();
  nn::ensure(m.output, x.sizes(), x);
  ensure_stats(m.saveMean, {l.N, l.G}, x);
  ensure_stats(m.saveRstd, {l.N, l.G}, x);
  m.fixedStatistics = m.normalisesWithRunningStatistics();
  const kernels::GroupDims d = dims_of(l);
  std::string path = "kernel";
  if (group_norm_engine() == GroupNormEngine::Cudnn) {
    std::string why = group_norm_graph_refusal(x, false, m.trackRunningStats());
    if (why.empty()) {
      const auto [rows, cols] = rows_cols(l);
      const Tensor ones = prefix(scratch.ones, cols, x.device(), 1), zeros = prefix(scratch.zeros, cols, x.device(), 0);
      if (group_norm_forward_graph(x, rows, cols, ones, zeros, m.eps, m.output, m.saveMean, m.saveRstd, why)) {
        // y = xhat so far; the affine parameters from x and cuDNN's statistics (Note [Group norm as a layer norm])
        if (m.affine()) kernels::group_norm_apply(x, d, m.saveMean, m.saveRstd, m.weight, m.bias, m.output);
        set_group_norm_last_path(false, why);
        return;
      }
    }
    path = "kernel: " + why;
  }
  set_group_norm_last_path(false, path);
  if (x.numel() == 0) return;
  if (m.fixedStatistics) {
    kernels::instance_norm_running_statistics(m.running_mean, m.running_var, d, m.eps, m.saveMean, m.saveRstd);
  } else {
    const bool update = m.trackRunningStats() && m.isTraining();
    // the biased variances for the running update, from the caching allocator
    const Tensor var = update ? tensor::empty({l.N, l.G}, m.saveMean.dtype(), x.device()) : Tensor();
    kernels::group_norm_statistics(x, d, m.eps, m.saveMean, m.saveRstd, var);
    if (update) kernels::instance_norm_update_running(m.saveMean, var, d, m.momentum, m.running_mean, m.running_var);
  }
  kernels::group_norm_apply(x, d, m.saveMean, m.saveRstd, m.weight, m.bias, m.output);
}

void group_norm_backward(nn::GroupNormBase& m, const Tensor& input, const Tensor& gradOutput, bool wantGradInput,
                         bool wantParams, double scale, const char* method, GroupNormScratch& scratch) {
  if (!wantGradInput && !m.affine()) return;
  const nn::GroupNormBase::Layout l = checked(m, input, &gradOutput, method);
  if (wantParams && m.affine()) m.checkParameters(method, true);
  const Tensor x = input.contiguous(), gy = gradOutput.contiguous();
  const kernels::GroupDims d = dims_of(l);
  if (wantGradInput) {
    nn::ensure(m.gradInput, x.sizes(), x);
    if (!cudnn_backward_input(m, x, gy, l, scratch)) {
      kernels::group_norm_backward_input(x, gy, d, m.saveMean, m.saveRstd, m.weight, m.fixedStatistics, m.gradInput);
    }
  }
  if (wantParams && m.affine()) {
    kernels::group_norm_backward_params(x, gy, d, m.saveMean, m.saveRstd, m.gradWeight, m.gradBias, scale);
  }
}

}  // namespace cudnn::detail

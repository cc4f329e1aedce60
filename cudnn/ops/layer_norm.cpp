// layer_norm.cpp: cuDNN's layer norm and RMS norm as one-operation graphs (layer_norm.h,
// rms_norm.h): one builder for both modes of the norm nodes. The shapes and types are the ones
// cuDNN's norm engines are documented with (cudnn-frontend's layernorm and rmsnorm samples, read
// for the pattern): x, y, dy, dx [rows, cols, 1, 1] of the data type; scale, bias and their
// gradients [1, cols, 1, 1] in float32; the statistics [rows, 1, 1, 1] in float32; epsilon a
// float by value, forward only (backward reads the saved statistics). CUDNN_RMS_NORM has no
// mean and no bias (nor their gradients): its graph leaves those attributes unset.
#include "cudnn/ops/layer_norm.h"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <memory>
#include <mutex>
#include <set>

#include "cudnn/core/Config.h"
#include "cudnn/core/Handle.h"
#include "cudnn/ops/graph_plan.h"
#include "cudnn/ops/rms_norm.h"
#include "tensor/Cuda.h"
#include "tensor/LruCache.h"

namespace cudnn {

using tensor::DType;
using tensor::Tensor;

namespace {

thread_local std::string last_forward, last_backward, last_rms_forward, last_rms_backward;

// The norm nodes' two modes this file builds.
enum class Mode : int64_t { Layer, Rms };

enum Uid : int64_t { kX = 1, kY, kMean, kRstd, kScale, kBias, kEps, kDY, kDX, kDScale, kDBias };

struct Plan {
  std::deque<BackendDescriptor> keep;  // the plan last
  std::set<int64_t> used;
  graph::PlanInfo info;
  std::mutex mutex;  // one run at a time: the variant packs are the plan's
  graph::VariantPackCache packs;
};

// The key of the norm plans (both modes) in the one plan-cache type (graph_plan.h).
struct PlanKey {
  int64_t mode, backward, dtype, rows, cols;
  uint64_t handle;  // handle_serial()
};
static_assert(sizeof(PlanKey) == 6 * 8, "PlanKey must have no padding");

struct Cached {
  std::shared_ptr<Plan> plan;
  std::string why;  // when plan is null
};

cudnnDataType_t data_type(DType t) {
  return t == DType::Float16 ? CUDNN_DATA_HALF : t == DType::BFloat16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
}

std::shared_ptr<Plan> build(Mode kind, bool backward, DType dtype, int64_t rows, int64_t cols, std::string& why) {
  const bool rms = kind == Mode::Rms;
  auto p = std::make_shared<Plan>();
  const cudnnDataType_t dt = data_type(dtype);
  auto tensor = [&](int64_t uid, cudnnDataType_t type, const tensor::Shape& dims, const tensor::Shape& strides,
                    bool by_value = false) -> const BackendDescriptor& {
    p->keep.push_back(graph::tensor_descriptor(uid, type, dims, strides, false, by_value));
    p->used.insert(uid);
    return p->keep.back();
  };
  const tensor::Shape data{rows, cols, 1, 1}, data_strides{cols, 1, cols, cols};
  const tensor::Shape param{1, cols, 1, 1}, param_strides{cols, 1, cols, cols};
  const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
  const tensor::Shape stat{rows, 1, 1, 1}, stat_strides{1, 1, 1, 1};
  const cudnnBackendNormMode_t mode = rms ? CUDNN_RMS_NORM : CUDNN_LAYER_NORM;
  const char* what = rms ? "RMS norm" : "layer norm";
  BackendDescriptor op(backward ? CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR
                                : CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR);
  const auto& x = tensor(kX, dt, data, data_strides);
  const BackendDescriptor* mean = rms ? nullptr : &tensor(kMean, CUDNN_DATA_FLOAT, stat, stat_strides);
  const auto& rstd = tensor(kRstd, CUDNN_DATA_FLOAT, stat, stat_strides);
  const auto& scale = tensor(kScale, f32, param, param_strides);
  if (!backward) {
    const cudnnBackendNormFwdPhase_t phase = CUDNN_NORM_FWD_TRAINING;  // the statistics are written
    const auto& eps = tensor(kEps, f32, {1, 1, 1, 1}, {1, 1, 1, 1}, true);
    const BackendDescriptor* bias = rms ? nullptr : &tensor(kBias, f32, param, param_strides);
    const auto& y = tensor(kY, dt, data, data_strides);
    op.set(CUDNN_ATTR_OPERATION_NORM_FWD_MODE, CUDNN_TYPE_NORM_MODE, 1, &mode);
    op.set(CUDNN_ATTR_OPERATION_NORM_FWD_PHASE, CUDNN_TYPE_NORM_FWD_PHASE, 1, &phase);
    op.set_descriptor(CUDNN_ATTR_OPERATION_NORM_FWD_XDESC, x);
    if (mean) op.set_descriptor(CUDNN_ATTR_OPERATION_NORM_FWD_MEAN_DESC, *mean);
    op.set_descriptor(CUDNN_ATTR_OPERATION_NORM_FWD_INV_VARIANCE_DESC, rstd);
    op.set_descriptor(CUDNN_ATTR_OPERATION_NORM_FWD_SCALE_DESC, scale);
    if (bias) op.set_descriptor(CUDNN_ATTR_OPERATION_NORM_FWD_BIAS_DESC, *bias);
    op.set_descriptor(CUDNN_ATTR_OPERATION_NORM_FWD_EPSILON_DESC, eps);
    op.set_descriptor(CUDNN_ATTR_OPERATION_NORM_FWD_YDESC, y);
  } else {
    const auto& dy = tensor(kDY, dt, data, data_strides);
    const auto& dx = tensor(kDX, dt, data, data_strides);
    const auto& dscale = tensor(kDScale, f32, param, param_strides);
    const BackendDescriptor* dbias = rms ? nullptr : &tensor(kDBias, f32, param, param_strides);
    op.set(CUDNN_ATTR_OPERATION_NORM_BWD_MODE, CUDNN_TYPE_NORM_MODE, 1, &mode);
    op.set_descriptor(CUDNN_ATTR_OPERATION_NORM_BWD_XDESC, x);
    if (mean) op.set_descriptor(CUDNN_ATTR_OPERATION_NORM_BWD_MEAN_DESC, *mean);
    op.set_descriptor(CUDNN_ATTR_OPERATION_NORM_BWD_INV_VARIANCE_DESC, rstd);
    op.set_descriptor(CUDNN_ATTR_OPERATION_NORM_BWD_DYDESC, dy);
    op.set_descriptor(CUDNN_ATTR_OPERATION_NORM_BWD_SCALE_DESC, scale);
    op.set_descriptor(CUDNN_ATTR_OPERATION_NORM_BWD_DSCALE_DESC, dscale);
    if (dbias) op.set_descriptor(CUDNN_ATTR_OPERATION_NORM_BWD_DBIAS_DESC, *dbias);
    op.set_descriptor(CUDNN_ATTR_OPERATION_NORM_BWD_DXDESC, dx);
  }
  if (const cudnnStatus_t st = op.try_finalize(); st != CUDNN_STATUS_SUCCESS) {
    why = std::string("cuDNN describes no ") + what + " operation (" + cudnnGetErrorString(st) + ")";
    return nullptr;
  }
  p->keep.push_back(std::move(op));
  if (!graph::operation_graph({p->keep.back().get()}, handle(), what, p->keep, why)) return nullptr;
  std::string tried;
  if (!graph::first_plan(p->keep.back().get(), handle(), p->keep, p->info, tried)) {
    why = std::string("no cuDNN engine takes the ") + what + " graph" +
          (tried.empty() ? std::string() : " (" + tried + ")");
    return nullptr;
  }
  return p;
}

graph::PlanCache<PlanKey, Cached>& plan_cache() {
  static auto* cache = new graph::PlanCache<PlanKey, Cached>;  // outlives every plan
  return *cache;
}
// Released at shutdown, before the handles the plans were built with (as conv_search.cpp's).
void release_plans() { plan_cache().clear(); }

// Plans by mode, pass, dtype, shape and handle; a refusal is remembered too.
Cached plan_for(Mode kind, bool backward, DType dtype, int64_t rows, int64_t cols) {
  tensor::cuda::register_shutdown_hook(&release_plans);
  const PlanKey key{static_cast<int64_t>(kind), backward, static_cast<int64_t>(dtype), rows, cols, handle_serial()};
  if (std::optional<Cached> hit = plan_cache().find(key)) return std::move(*hit);
  Cached c;
  try {
    c.plan = build(kind, backward, dtype, rows, cols, c.why);
  } catch (const tensor::Error& e) {
    c.why = e.what();  // a graph the backend API refuses to describe: our kernels run
  }
  if (cudnn::config().verbose) {
    std::fprintf(stderr, "cudnn-nn: %s %s [%lld x %lld] %s: %s\n", kind == Mode::Rms ? "RMS norm" : "layer norm",
                 backward ? "backward" : "forward", static_cast<long long>(rows), static_cast<long long>(cols),
                 tensor::name(dtype),
                 c.plan ? ("cudnn engine " + std::to_string(c.plan->info.engine)).c_str() : c.why.c_str());
  }
  plan_cache().put(key, c);
  return c;
}

bool run(Mode kind, bool backward, const Tensor& x, int64_t rows, int64_t cols,
         std::vector<std::pair<int64_t, void*>> ptrs, std::vector<graph::VariantPackCache::Scalar> scalars,
         std::string& why) {
  tensor::cuda::DeviceGuard guard(x.device().index);  // the handle and the plan are the device's
  const Cached c = plan_for(kind, backward, x.dtype(), rows, cols);
  if (!c.plan) {
    why = c.why;
    return false;
  }
  if (c.plan->info.workspace > cudnn::config().workspace_limit && !cudnn::config().fastest) {
    why = "its workspace (" + std::to_string(c.plan->info.workspace) + " bytes) exceeds workspace_limit";
    return false;
  }
  Workspace lease;  // Note [Workspaces]: given back once the plan is enqueued
  void* ws = nullptr;
  try {
    lease = Workspace(std::max<size_t>(c.plan->info.workspace, 16));  // never null (attention.cpp)
    ws = lease.data();
  } catch (const tensor::Error& e) {
    why = std::string("no workspace: ") + e.what();
    return false;
  }
  std::lock_guard<std::mutex> lock(c.plan->mutex);
  const cudnnStatus_t st =
      graph::execute(handle(), c.plan->keep.back().get(), c.plan->used, ptrs, scalars, ws, c.plan->packs);
  if (st != CUDNN_STATUS_SUCCESS) {
    why = std::string("execution refused (") + cudnnGetErrorString(st) + ")";
    return false;
  }
  why = "cudnn engine " + std::to_string(c.plan->info.engine);
  return true;
}

}  // namespace

std::string layer_norm_graph_refusal(const Tensor& x, bool affine) {
  if (x.dtype() == DType::Float64) return "cuDNN's layer norm takes no float64";
  if (!affine) return "cuDNN's layer norm needs weight and bias (elementwise_affine)";
  if (x.numel() == 0) return "an empty input";
  return "";
}

bool layer_norm_forward_graph(const Tensor& x, int64_t rows, int64_t cols, const Tensor& weight, const Tensor& bias,
                              double eps, const Tensor& y, const Tensor& mean, const Tensor& rstd, std::string& why) {
  why = layer_norm_graph_refusal(x, weight.defined() && bias.defined());
  if (!why.empty()) return false;
  return run(Mode::Layer, false, x, rows, cols,
             {{kX, x.raw_data()},
              {kScale, weight.raw_data()},
              {kBias, bias.raw_data()},
              {kY, y.raw_data()},
              {kMean, mean.raw_data()},
              {kRstd, rstd.raw_data()}},
             {{kEps, static_cast<float>(eps)}}, why);
}

bool layer_norm_backward_graph(const Tensor& x, const Tensor& dy, int64_t rows, int64_t cols, const Tensor& weight,
                               const Tensor& mean, const Tensor& rstd, const Tensor& dx, const Tensor& dweight,
                               const Tensor& dbias, std::string& why) {
  why = layer_norm_graph_refusal(x, weight.defined());
  if (!why.empty()) return false;
  return run(Mode::Layer, true, x, rows, cols,
             {{kX, x.raw_data()},
              {kDY, dy.raw_data()},
              {kScale, weight.raw_data()},
              {kMean, mean.raw_data()},
              {kRstd, rstd.raw_data()},
              {kDX, dx.raw_data()},
              {kDScale, dweight.raw_data()},
              {kDBias, dbias.raw_data()}},
             {}, why);
}

const std::string& layer_norm_last_path(bool backward) { return backward ? last_backward : last_forward; }
void set_layer_norm_last_path(bool backward, std::string path) {
  (backward ? last_backward : last_forward) = std::move(path);
}

std::string rms_norm_graph_refusal(const Tensor& x, bool affine) {
  if (x.dtype() == DType::Float64) return "cuDNN's RMS norm takes no float64";
  if (!affine) return "cuDNN's RMS norm needs a weight (elementwise_affine)";
  if (x.numel() == 0) return "an empty input";
  return "";
}

bool rms_norm_forward_graph(const Tensor& x, int64_t rows, int64_t cols, const Tensor& weight, double eps,
                            const Tensor& y, const Tensor& rstd, std::string& why) {
  why = rms_norm_graph_refusal(x, weight.defined());
  if (!why.empty()) return false;
  return run(Mode::Rms, false, x, rows, cols,
             {{kX, x.raw_data()}, {kScale, weight.raw_data()}, {kY, y.raw_data()}, {kRstd, rstd.raw_data()}},
             {{kEps, static_cast<float>(eps)}}, why);
}

bool rms_norm_backward_graph(const Tensor& x, const Tensor& dy, int64_t rows, int64_t cols, const Tensor& weight,
                             const Tensor& rstd, const Tensor& dx, const Tensor& dweight, std::string& why) {
  why = rms_norm_graph_refusal(x, weight.defined());
  if (!why.empty()) return false;
  return run(Mode::Rms, true, x, rows, cols,
             {{kX, x.raw_data()},
              {kDY, dy.raw_data()},
              {kScale, weight.raw_data()},
              {kRstd, rstd.raw_data()},
              {kDX, dx.raw_data()},
              {kDScale, dweight.raw_data()}},
             {}, why);
}

const std::string& rms_norm_last_path(bool backward) { return backward ? last_rms_backward : last_rms_forward; }
void set_rms_norm_last_path(bool backward, std::string path) {
  (backward ? last_rms_backward : last_rms_forward) = std::move(path);
}

}  // namespace cudnn

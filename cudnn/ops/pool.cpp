// pool.cpp
#include "cudnn/ops/pool.h"

#include "cudnn/core/Config.h"
#include "cudnn/core/Handle.h"
#include "tensor/Cuda.h"

namespace cudnn {

namespace {

struct Resolved {
  int nd;
  int ws[3], stride[3], pad[3];
};

Resolved resolve(const PoolParams& p, const std::string& where) {
  Resolved r{};
  r.nd = static_cast<int>(p.ws.size());
  if (r.nd != 2 && r.nd != 3)
    throw tensor::Error(where + "expected a 2-d or 3-d window, got " + std::to_string(r.nd) + " sizes");
  if ((!p.stride.empty() && static_cast<int>(p.stride.size()) != r.nd) ||
      (!p.pad.empty() && static_cast<int>(p.pad.size()) != r.nd)) {
    throw tensor::Error(where + "stride and pad need one value per window dimension");
  }
  for (int i = 0; i < r.nd; ++i) {
    r.ws[i] = p.ws[i];
    r.stride[i] = p.stride.empty() ? p.ws[i] : p.stride[i];
    r.pad[i] = p.pad.empty() ? 0 : p.pad[i];
    if (r.ws[i] < 1 || r.stride[i] < 1 || r.pad[i] < 0)
      throw tensor::Error(where + "window and stride must be >= 1, pad >= 0");
    if (r.pad[i] * 2 > r.ws[i]) {
      throw tensor::Error(where + "pad " + std::to_string(r.pad[i]) + " must be at most half the window " +
                          std::to_string(r.ws[i]));
    }
  }
  return r;
}

int64_t pooled_size(int64_t in, int k, int s, int pad, bool ceil_mode) {
  const int64_t span = in + 2 * pad - k;
  int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  // Torch: in ceil mode the last window must start inside the input or its left padding
  if (ceil_mode && (out - 1) * s >= in + pad) --out;
  return out;
}

cudnnPoolingMode_t cudnn_mode(PoolMode m) {
  switch (m) {
    case PoolMode::Max:
      return config().deterministic ? CUDNN_POOLING_MAX_DETERMINISTIC : CUDNN_POOLING_MAX;
    case PoolMode::MaxDeterministic:
      return CUDNN_POOLING_MAX_DETERMINISTIC;
    case PoolMode::AverageIncPad:
    case PoolMode::Sum:
      return CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING;
    case PoolMode::AverageExcPad:
      return CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
  }
  return CUDNN_POOLING_MAX;
}

// Whether ceil mode gave more windows than cuDNN's floor sizing.
bool needs_own_kernel(const Tensor& x, const Tensor& y, const Resolved& r) {
  for (int i = 0; i < r.nd; ++i) {
    if (pooled_size(x.size(2 + i), r.ws[i], r.stride[i], r.pad[i], false) != y.size(2 + i)) return true;
  }
  return false;
}

double sum_scale(const PoolParams& p, const Resolved& r) {
  if (p.mode != PoolMode::Sum) return 1.0;
  double s = 1;
  for (int i = 0; i < r.nd; ++i) s *= r.ws[i];
  return s;
}

bool is_max(const PoolParams& p) { return p.mode == PoolMode::Max || p.mode == PoolMode::MaxDeterministic; }

// Whether the max gradient runs on our kernel (flag pool.backward), channels-last or row-major.
bool own_max_backward(const Tensor& x, const Tensor& dy, const Tensor& dx, const PoolParams& p) {
  switch (config().pool_backward) {
    case PoolBackward::Cudnn:
      return false;
    case PoolBackward::Auto:  // overlapping windows too since 32-bit indices (docs/performance.md)
      return kernels::channels_last_max_backward_applies(x, dy, dx, p);
    case PoolBackward::Ours:
      return kernels::channels_last_max_backward_applies(x, dy, dx, p) ||
             (is_max(p) && x.is_contiguous() && dy.is_contiguous() && dx.is_contiguous());
  }
  return false;
}

// A row-major [N x C x spatial] tensor as [N*C x 1 x spatial], which is channels-last too.
Tensor as_planes(const Tensor& t) {
  Shape s = t.sizes();
  s[0] *= s[1];
  s[1] = 1;
  return t.view(s);
}

}  // namespace

Shape pool_output_shape(const Shape& img, const PoolParams& p, const std::string& where) {
  const Resolved r = resolve(p, where);
  if (static_cast<int>(img.size()) != r.nd + 2) {
    throw tensor::Error(where + "expected a " + std::to_string(r.nd + 2) + "-d input for a " + std::to_string(r.nd) +
                        "-d window, got " + tensor::shape_str(img));
  }
  Shape out = {img[0], img[1]};
  for (int i = 0; i < r.nd; ++i) {
    const int64_t o = pooled_size(img[2 + i], r.ws[i], r.stride[i], r.pad[i], p.ceil_mode);
    if (img[2 + i] + 2 * r.pad[i] < r.ws[i] || o < 1) {
      throw tensor::Error(where + "input " + tensor::shape_str(img) + " is too small for a window of " +
                          std::to_string(r.ws[i]) + " with padding " + std::to_string(r.pad[i]));
    }
    out.push_back(o);
  }
  return out;
}

void PoolPlan::forward(const Tensor& x, const Tensor& y, const PoolParams& p) {
  const Resolved r = resolve(p, "cudnn::pool: ");
  tensor::cuda::DeviceGuard guard(x.device().index);
  if (needs_own_kernel(x, y, r)) {
    if (x.is_contiguous() && y.is_contiguous()) {
      kernels::pool_ceil_forward(x, y, p);
    } else {  // the ceil-mode kernels take row-major data: a channels-last pass goes through copies
      Tensor packed = tensor::empty(y.sizes(), y.dtype(), y.device());
      kernels::pool_ceil_forward(x.contiguous(), packed, p);
      Tensor(y).copy_(packed);
    }
    return;
  }
  pool_desc_.set(cudnn_mode(p.mode), r.nd, r.ws, r.pad, r.stride);
  CUDNN_CHECK(cudnnPoolingForward(handle(), pool_desc_.get(), Scalar(sum_scale(p, r), x.dtype()).ptr(), x_desc_.set(x),
                                  x.raw_data(), Scalar(0, x.dtype()).ptr(), y_desc_.set(y), y.raw_data()));
}

void PoolPlan::backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx, const PoolParams& p) {
  const Resolved r = resolve(p, "cudnn::pool_grad: ");
  tensor::cuda::DeviceGuard guard(x.device().index);
  if (own_max_backward(x, dy, dx, p)) {  // faster than cuDNN's on NHWC
    if (kernels::channels_last_max_backward_applies(x, dy, dx, p)) {
      kernels::max_pool_backward_channels_last(x, dy, dx, p);
    } else {
      kernels::max_pool_backward_channels_last(as_planes(x), as_planes(dy), as_planes(dx), p);
    }
    return;
  }
  if (needs_own_kernel(x, dy, r)) {
    if (x.is_contiguous() && dy.is_contiguous() && dx.is_contiguous()) {
      kernels::pool_ceil_backward(x, dy, dx, p);
    } else {
      Tensor packed = tensor::empty(dx.sizes(), dx.dtype(), dx.device());
      kernels::pool_ceil_backward(x.contiguous(), dy.contiguous(), packed, p);
      Tensor(dx).copy_(packed);
    }
    return;
  }
  pool_desc_.set(cudnn_mode(p.mode), r.nd, r.ws, r.pad, r.stride);
  CUDNN_CHECK(cudnnPoolingBackward(handle(), pool_desc_.get(), Scalar(sum_scale(p, r), x.dtype()).ptr(), y_desc_.set(y),
                                   y.raw_data(), y_desc_.get(), dy.raw_data(), x_desc_.set(x), x.raw_data(),
                                   Scalar(0, x.dtype()).ptr(), x_desc_.get(), dx.raw_data()));
}

bool PoolPlan::backward_reads_output(const Tensor& x, const PoolParams& p) {
  return !own_max_backward(x, x, x, p);  // dy and dx take x's layout
}

Tensor pool(const Tensor& img, const PoolParams& p) {
  const std::string where = "cudnn::pool: ";
  check_cuda(where, img, "img");
  const Tensor x = img.contiguous();
  Tensor y = tensor::empty(pool_output_shape(x.sizes(), p, where), x.dtype(), x.device());
  PoolPlan().forward(x, y, p);
  return y;
}

Tensor pool_grad(const Tensor& img, const Tensor& out, const Tensor& out_grad, const PoolParams& p) {
  const std::string where = "cudnn::pool_grad: ";
  check_cuda(where, img, "img");
  check_cuda(where, out, "out");
  check_cuda(where, out_grad, "out_grad");
  const Shape expected = pool_output_shape(img.sizes(), p, where);
  if (out.sizes() != expected || out_grad.sizes() != expected) {
    throw tensor::Error(where + "out " + tensor::shape_str(out.sizes()) + " and out_grad " +
                        tensor::shape_str(out_grad.sizes()) + " must be " + tensor::shape_str(expected));
  }
  Tensor dx = tensor::empty(img.sizes(), img.dtype(), img.device());
  PoolPlan().backward(img.contiguous(), out.contiguous(), out_grad.contiguous(), dx, p);
  return dx;
}

}  // namespace cudnn

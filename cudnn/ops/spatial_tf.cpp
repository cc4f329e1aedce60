// spatial_tf.cpp
#include "cudnn/ops/spatial_tf.h"

#include <algorithm>
#include <limits>

#include "cudnn/core/Handle.h"
#include "nn/Buffers.h"
#include "tensor/Cuda.h"

namespace cudnn {

// Note [16-bit spatial transformer]
// Whether cuDNN's grid generator and sampler take float16 and bfloat16 data is not documented
// per dtype. A 16-bit forward that cuDNN answers with a status of the NOT_SUPPORTED or BAD_PARAM
// family (the shapes were checked before, so the dtype is what it refuses) is computed in
// float32 copies of its operands instead, as Note [16-bit LRN] in lrn.cpp does, and the result
// is rounded once into the caller's dtype; the refusal is remembered per plan and dtype. Where
// cuDNN takes 16-bit data the grid itself is 16-bit: a sample's position is then rounded to
// about (W - 1) / 2 * 2^-11 pixels (float16). On the H100 with cuDNN 9.14, float16 runs natively
// and bfloat16 is refused (the test prints which). The 16-bit BACKWARD always runs in float32
// copies: there the native float16 backward gave theta gradients 15% off (relative norm,
// [4 x 5 x 16 x 16] sampled to 12 x 20), where the float32 copies are within rounding of the inputs.
//
// Note [Sampler backward blending]
// cudnnSpatialTfSamplerBackward blends its results into dx (alpha, beta) and into dgrid
// (alphaDgrid, betaDgrid): dst = alpha * result + beta * dst, per NVIDIA's documentation; dgrid
// is a gather (one value per output pixel) but dx a scatter of every output pixel into four
// input pixels, where "beta = 0 overwrites" is not self-evident. Measured on the H100 with cuDNN
// 9.14 (tests/cudnn/test_SpatialTransformer.cpp prints it on every run): beta = 0 overwrites
// both dx and dgrid, beta = 1 adds to both; cudnnSpatialTfGridGeneratorBackward (no blending
// factors) overwrites dtheta. The op still zeroes dx and dgrid and accumulates (beta = betaDgrid
// = 1), which is right under either reading and lets the channel chunks below add their grid
// gradients into one dgrid; dtheta is zeroed before the generator's backward too.
//
// Note [Size-1 output dims]
// nn::spatial_tf puts the samples of a size-1 output dim on the centre line (coordinate 0,
// PyTorch's affine_grid convention), where cuDNN's grid generator would divide by outH - 1 = 0
// (what it does then is not documented).
// Such a dim is generated 3 wide (coordinates -1, 0, 1) and the middle line kept; backward puts
// the grid gradient back on that middle line (zeros on the others) before the generator's backward.
//
// Note [Non-finite theta]
// cuDNN turns a NaN sample position into a partly NaN, partly finite result (seen on the H100,
// cuDNN 9.14: NaN in one theta entry gave NaN outputs, NaN in 20 of the sample's 60 image
// gradient entries and some finite entries in its theta gradient). nn::spatial_tf makes a sample
// with NaN or Inf in its theta NaN throughout (Note [Spatial transformer NaN]); here each sample's
// theta sum s gives s - s, 0 when theta is finite and NaN otherwise, which is added to that
// sample's output and gradients: the same answer, with no host synchronisation.
//
// Note [Sampler channels]
// PyTorch calls cuDNN's sampler only for at most 1024 channels (cond_cudnn_grid_sampler). Wider
// inputs are sampled in chunks of 1024 channels (contiguous copies), on the same grid.

namespace {

constexpr int64_t kMaxChannels = 1024;

#define SPATIAL_TF_TRY(call)                                                                   \
  do {                                                                                         \
    const cudnnStatus_t spatial_tf_status_ = (call);                                           \
    if (spatial_tf_status_ != CUDNN_STATUS_SUCCESS) return Attempt{spatial_tf_status_, #call}; \
  } while (0)

// The middle line of a dim generated 3 wide (Note [Size-1 output dims]), else the whole dim.
int64_t gridSize(int64_t out) { return out == 1 ? 3 : out; }
int64_t gridStart(int64_t out) { return out == 1 ? 1 : 0; }

void check_cuda_arguments(const std::string& where, const Tensor& img, const Shape& outShape) {
  check_cuda(where, img, "img");
  constexpr int64_t limit = std::numeric_limits<int>::max();
  const int64_t gridNumel = outShape[0] * outShape[2] * outShape[3] * 2;
  if (img.numel() > limit || outShape[0] * outShape[1] * outShape[2] * outShape[3] > limit || gridNumel > limit) {
    throw tensor::Error(where +
                        "expected img, output and grid of at most 2^31 - 1 elements (cuDNN's int sizes), got img " +
                        tensor::shape_str(img.sizes()) + ", output " + tensor::shape_str(outShape));
  }
}

// 0 for a sample whose theta is finite, NaN otherwise (Note [Non-finite theta]): [N x 1 x 1 (x 1)]
Tensor theta_poison(const Tensor& theta, int64_t dims) {
  const Tensor s = theta.reshape({theta.size(0), 6}).sum(1);
  Shape shape(static_cast<size_t>(dims), 1);
  shape[0] = theta.size(0);
  return s.sub(s).view(shape);
}

}  // namespace

bool SpatialTfPlan::computes_in_float32(DType dtype) const {
  return (refused_dtypes_ >> static_cast<unsigned>(dtype)) & 1u;
}

void SpatialTfPlan::refuse(const Attempt& a, DType dtype) {
  const bool sixteen_bit = dtype == DType::Float16 || dtype == DType::BFloat16;
  const int category = CUDNN_STATUS_CATEGORY(static_cast<int>(a.status));
  if (!sixteen_bit || (category != CUDNN_STATUS_NOT_SUPPORTED && category != CUDNN_STATUS_BAD_PARAM)) {
    detail::throw_cudnn_error(a.status, a.call, __FILE__, __LINE__);
  }
  refused_dtypes_ |= 1u << static_cast<unsigned>(dtype);
}

SpatialTfPlan::Attempt SpatialTfPlan::make_grid(const Tensor& theta, int64_t C, int64_t outH, int64_t outW,
                                               Tensor& grid) {
  const int64_t N = theta.size(0), gH = gridSize(outH), gW = gridSize(outW);
  SPATIAL_TF_TRY(grid_desc_.try_set(theta.dtype(), {N, std::min(C, kMaxChannels), gH, gW}));
  nn::ensure(grid_full_, {N, gH, gW, 2}, theta);
  SPATIAL_TF_TRY(
      cudnnSpatialTfGridGeneratorForward(handle(), grid_desc_.get(), theta.raw_data(), grid_full_.raw_data()));
  if (gH == outH && gW == outW) {
    grid = grid_full_;
  } else {
    nn::ensure(grid_, {N, outH, outW, 2}, theta)
        .copy_(grid_full_.narrow(1, gridStart(outH), outH).narrow(2, gridStart(outW), outW));
    grid = grid_;
  }
  return {};
}

SpatialTfPlan::Attempt SpatialTfPlan::try_forward(const Tensor& img, const Tensor& theta, const Tensor& out) {
  const int64_t N = img.size(0), C = img.size(1), H = img.size(2), W = img.size(3);
  const int64_t outH = out.size(2), outW = out.size(3);
  const DType t = img.dtype();
  Tensor grid;
  if (const Attempt a = make_grid(theta, C, outH, outW, grid); a.status != CUDNN_STATUS_SUCCESS) return a;
  const Scalar one(1, t), zero(0, t);
  // See Note [Sampler channels]
  for (int64_t c0 = 0; c0 < C; c0 += kMaxChannels) {
    const int64_t cc = std::min(kMaxChannels, C - c0);
    const bool whole = cc == C;
    Tensor x = img, y = out;
    if (!whole) {
      x = nn::ensure(chunk_x_, {N, cc, H, W}, img).copy_(img.narrow(1, c0, cc));
      y = nn::ensure(chunk_y_, {N, cc, outH, outW}, img);
    }
    SPATIAL_TF_TRY(sampler_desc_.try_set(t, {N, cc, outH, outW}));
    SPATIAL_TF_TRY(cudnnSpatialTfSamplerForward(handle(), sampler_desc_.get(), one.ptr(), x_desc_.set(x), x.raw_data(),
                                                grid.raw_data(), zero.ptr(), y_desc_.set(y), y.raw_data()));
    if (!whole) out.narrow(1, c0, cc).copy_(y);
  }
  return {};
}

SpatialTfPlan::Attempt SpatialTfPlan::try_backward(const Tensor& img, const Tensor& theta, const Tensor& gradOutput,
                                                  const Tensor& gradImage, const Tensor& gradTheta) {
  const int64_t N = img.size(0), C = img.size(1), H = img.size(2), W = img.size(3);
  const int64_t outH = gradOutput.size(2), outW = gradOutput.size(3);
  const DType t = img.dtype();
  Tensor grid;
  if (const Attempt a = make_grid(theta, C, outH, outW, grid); a.status != CUDNN_STATUS_SUCCESS) return a;
  nn::ensure(dgrid_, {N, outH, outW, 2}, img).zero_();
  Tensor(gradImage).zero_();
  const Scalar one(1, t);
  for (int64_t c0 = 0; c0 < C; c0 += kMaxChannels) {
    const int64_t cc = std::min(kMaxChannels, C - c0);
    const bool whole = cc == C;
    Tensor x = img, dy = gradOutput, dx = gradImage;
    if (!whole) {
      x = nn::ensure(chunk_x_, {N, cc, H, W}, img).copy_(img.narrow(1, c0, cc));
      dy = nn::ensure(chunk_y_, {N, cc, outH, outW}, img).copy_(gradOutput.narrow(1, c0, cc));
      dx = nn::ensure(chunk_dx_, {N, cc, H, W}, img).zero_();
    }
    SPATIAL_TF_TRY(sampler_desc_.try_set(t, {N, cc, outH, outW}));
    // accumulate into the zeroed buffers: see Note [Sampler backward blending]
    cudnnTensorDescriptor_t xd = x_desc_.set(x);
    SPATIAL_TF_TRY(cudnnSpatialTfSamplerBackward(handle(), sampler_desc_.get(), one.ptr(), xd, x.raw_data(), one.ptr(),
                                                 xd, dx.raw_data(), one.ptr(), y_desc_.set(dy), dy.raw_data(),
                                                 grid.raw_data(), one.ptr(), dgrid_.raw_data()));
    if (!whole) gradImage.narrow(1, c0, cc).copy_(dx);
  }
  Tensor dgrid = dgrid_;
  if (gridSize(outH) != outH || gridSize(outW) != outW) {
    nn::ensure(dgrid_full_, {N, gridSize(outH), gridSize(outW), 2}, img).zero_();
    dgrid_full_.narrow(1, gridStart(outH), outH).narrow(2, gridStart(outW), outW).copy_(dgrid_);
    dgrid = dgrid_full_;
  }
  Tensor(gradTheta).zero_();
  SPATIAL_TF_TRY(
      cudnnSpatialTfGridGeneratorBackward(handle(), grid_desc_.get(), dgrid.raw_data(), gradTheta.raw_data()));
  return {};
}

void SpatialTfPlan::forward(const Tensor& img, const Tensor& theta, const Tensor& out) {
  tensor::cuda::DeviceGuard guard(img.device().index);
  const DType t = img.dtype();
  if (!computes_in_float32(t)) {
    const Attempt a = try_forward(img, theta, out);
    if (a.status == CUDNN_STATUS_SUCCESS) return;
    refuse(a, t);
  }
  Tensor y32 = tensor::empty(out.sizes(), DType::Float32, out.device());
  forward(img.to(DType::Float32), theta.to(DType::Float32), y32);
  Tensor(out).copy_(y32);  // a handle on the caller's storage
}

void SpatialTfPlan::backward(const Tensor& img, const Tensor& theta, const Tensor& gradOutput, const Tensor& gradImage,
                             const Tensor& gradTheta) {
  tensor::cuda::DeviceGuard guard(img.device().index);
  const DType t = img.dtype();
  if (t != DType::Float16 && t != DType::BFloat16) {  // Note [16-bit spatial transformer]
    const Attempt a = try_backward(img, theta, gradOutput, gradImage, gradTheta);
    if (a.status != CUDNN_STATUS_SUCCESS) detail::throw_cudnn_error(a.status, a.call, __FILE__, __LINE__);
    return;
  }
  Tensor gi32 = tensor::empty(gradImage.sizes(), DType::Float32, gradImage.device());
  Tensor gt32 = tensor::empty(gradTheta.sizes(), DType::Float32, gradTheta.device());
  backward(img.to(DType::Float32), theta.to(DType::Float32), gradOutput.to(DType::Float32), gi32, gt32);
  Tensor(gradImage).copy_(gi32);
  Tensor(gradTheta).copy_(gt32);
}

void spatial_tf_forward(SpatialTfPlan& plan, const Tensor& img, const Tensor& theta, int64_t outH, int64_t outW,
                        Tensor& output) {
  const std::string where = "cudnn::spatial_tf: ";
  nn::check_spatial_tf_arguments(where, img, theta, outH, outW);
  const Shape outShape{img.size(0), img.size(1), outH, outW};
  check_cuda_arguments(where, img, outShape);
  const Tensor x = img.contiguous(), th = theta.contiguous();
  nn::ensure(output, outShape, x);
  if (x.size(0) == 0) return;
  plan.forward(x, th, output);
  output.add_(theta_poison(th, 4));
}

void spatial_tf_backward(SpatialTfPlan& plan, const Tensor& img, const Tensor& theta, const Tensor& gradOutput,
                         Tensor& gradImage, Tensor& gradTheta) {
  const std::string where = "cudnn::spatial_tf_backward: ";
  nn::check_spatial_tf_gradient(where, img, theta, gradOutput);
  check_cuda_arguments(where, img, gradOutput.sizes());
  const Tensor x = img.contiguous(), th = theta.contiguous(), dy = gradOutput.contiguous();
  nn::ensure(gradImage, x.sizes(), x);
  nn::ensure(gradTheta, {x.size(0), 2, 3}, x);
  if (x.size(0) == 0) return;
  plan.backward(x, th, dy, gradImage, gradTheta);
  const Tensor poison = theta_poison(th, 4);
  gradImage.add_(poison);
  gradTheta.add_(poison.view({x.size(0), 1, 1}));
}

Tensor spatial_tf(const Tensor& img, const Tensor& theta, int64_t outH, int64_t outW) {
  SpatialTfPlan plan;
  Tensor out;
  spatial_tf_forward(plan, img, theta, outH, outW, out);
  return out;
}

nn::SpatialTfGrads spatial_tf_backward(const Tensor& img, const Tensor& theta, const Tensor& gradOutput) {
  SpatialTfPlan plan;
  nn::SpatialTfGrads g;
  spatial_tf_backward(plan, img, theta, gradOutput, g.gradImage, g.gradTheta);
  return g;
}

#undef SPATIAL_TF_TRY

}  // namespace cudnn

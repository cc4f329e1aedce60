// Functional.h: the cudnn backend's functional ops, as torch.nn.functional is PyTorch's and
// Theano's dnn_* ops were Theano's: what the twins are built on, for a user's own modules and
// programs, on CUDA tensors. Installed and sealed (Note [Sealed headers] in
// docs/architecture.md): only tensor and nn types, no CUDA or cuDNN header. Each op's
// semantics are its internal header's (cudnn/ops/<op>.h, which includes this one), summed up
// here:
//   sdpa, sdpa_backward            scaled dot-product attention, nn::sdpa's arguments (masks,
//                                  grouped-query k and v; fused flash attention for 16-bit
//                                  data where cuDNN takes it)
//   rotary_embedding_              rotary position embeddings in place, nn::rotary_embedding_'s
//                                  arguments (offsets read on the device)
//   spatial_tf, spatial_tf_backward  the spatial transformer's affine grid and bilinear sampler
//   conv, conv_grad_input, conv_grad_weight  Theano's dnn_conv / dnn_gradinput / dnn_gradweight
//   pool, pool_grad                2-D and 3-D pooling, Theano's dnn_pool (Torch's ceil mode)
//   softmax, softmax_grad          Theano's GpuDnnSoftmax (fast, accurate, log; instance or channel)
//   batch_norm_train, batch_norm_test, batch_norm_grad  Theano's dnn_batch_normalization_*
// Errors name the op and the shapes, dtypes or devices, as the modules' do.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cudnn/Config.h"
#include "nn/Attention.h"
#include "nn/Rotary.h"
#include "nn/kernels/SpatialTransformer.h"
#include "tensor/Tensor.h"

namespace cudnn {

using tensor::DType;
using tensor::Shape;
using tensor::Tensor;

// ---- attention (cudnn/ops/attention.h)

// `out`, when defined, is where the result goes: a [B x H x Sq x Dv] tensor of q's dtype and
// device, of any strides (a head view of a module's token rows); the fused engines write it in
// place when its strides suit them, so no second copy of the output exists. Returns it.
tensor::Tensor sdpa(const tensor::Tensor& q, const tensor::Tensor& k, const tensor::Tensor& v,
                    const nn::SdpaOptions& options = {}, nn::SdpaSaved* saved = nullptr,
                    const tensor::Tensor& out = tensor::Tensor());
// `into`, when given, holds where the gradients go (q's, k's and v's shapes, any strides), as
// `out` above; returned then.
nn::SdpaGrads sdpa_backward(const tensor::Tensor& q, const tensor::Tensor& k, const tensor::Tensor& v,
                            const tensor::Tensor& out, const tensor::Tensor& gradOut, const nn::SdpaOptions& options,
                            const nn::SdpaSaved& saved, const nn::SdpaGrads* into = nullptr);
// The path the last sdpa (or sdpa_backward) on this thread took: "fused attention engine N",
// or "fallback: <why>". For tests and benchmarks.
const std::string& sdpa_last_path(bool backward = false);

// ---- rotary position embeddings (cudnn/ops/rotary.h)

// nn::rotary_embedding_ on a CUDA tensor x [B x H x S x D] (float32, float64, float16, bfloat16;
// any strides), in place; offsets undefined or int64 [B] on x's device, read by the kernel (a CPU
// tensor is checked and copied there). See Note [Rotary offsets on the device] in cudnn/kernels/Rotary.h.
void rotary_embedding_(tensor::Tensor& x, const tensor::Tensor& offsets, const nn::RotaryOptions& options,
                       bool inverse = false);

// ---- spatial transformer (cudnn/ops/spatial_tf.h)

// img [N x C x H x W], theta [N x 2 x 3] -> [N x C x outH x outW]; the gradients of both.
Tensor spatial_tf(const Tensor& img, const Tensor& theta, int64_t outH, int64_t outW);
nn::SpatialTfGrads spatial_tf_backward(const Tensor& img, const Tensor& theta, const Tensor& gradOutput);

// ---- convolutions (cudnn/ops/conv.h)

struct BorderMode {
  enum class Kind { Valid, Full, Half, Explicit };
  Kind kind = Kind::Valid;
  std::vector<int> pad;  // for Explicit: one per spatial dim
  static BorderMode valid() { return {}; }
  static BorderMode full() { return {Kind::Full, {}}; }
  static BorderMode half() { return {Kind::Half, {}}; }
  static BorderMode explicit_pad(std::vector<int> pads) { return {Kind::Explicit, std::move(pads)}; }
};

struct ConvParams {
  BorderMode border_mode;
  std::vector<int> subsample;  // empty: all 1
  std::vector<int> dilation;   // empty: all 1
  int groups = 1;
  enum class Mode { Conv, Cross } conv_mode = Mode::Conv;
  std::string algo;                    // empty: the conv.algo_* flag of the pass
  std::optional<Precision> precision;  // empty: the conv.precision flag
};

// img [N x C x (D) x H x W], kerns [K x C/groups x (kD) x kH x kW]: y = img (*) kerns, and the
// gradients of y with respect to img and kerns (of the shapes given).
Tensor conv(const Tensor& img, const Tensor& kerns, const ConvParams& p = {});
Tensor conv_grad_input(const Tensor& kerns, const Tensor& topgrad, const Shape& img_shape, const ConvParams& p = {});
Tensor conv_grad_weight(const Tensor& img, const Tensor& topgrad, const Shape& kerns_shape, const ConvParams& p = {});

// ---- pooling (cudnn/ops/pool.h)

enum class PoolMode { Max, MaxDeterministic, AverageIncPad, AverageExcPad, Sum };

struct PoolParams {
  std::vector<int> ws;      // window, one per spatial dim
  std::vector<int> stride;  // empty: = ws
  std::vector<int> pad;     // empty: 0
  PoolMode mode = PoolMode::Max;
  bool ceil_mode = false;
};

Tensor pool(const Tensor& img, const PoolParams& p);
Tensor pool_grad(const Tensor& img, const Tensor& out, const Tensor& out_grad, const PoolParams& p);

// ---- softmax (cudnn/ops/softmax.h)

enum class SoftmaxAlgo { Fast, Accurate, Log };
enum class SoftmaxMode { Instance, Channel };

Tensor softmax(const Tensor& x, SoftmaxAlgo algo = SoftmaxAlgo::Accurate, SoftmaxMode mode = SoftmaxMode::Channel);
Tensor softmax_grad(const Tensor& y, const Tensor& dy, SoftmaxAlgo algo = SoftmaxAlgo::Accurate,
                    SoftmaxMode mode = SoftmaxMode::Channel);

// ---- batch normalization (cudnn/ops/batch_norm.h)

enum class BatchNormMode { PerActivation, Spatial };

struct BatchNormTrainResult {
  Tensor out, mean, invstd;
};
struct BatchNormGrad {
  Tensor dx, dgamma, dbeta;
};

// The dtype gamma/beta/statistics must have for data of `dtype`.
DType batch_norm_param_dtype(DType dtype);

BatchNormTrainResult batch_norm_train(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                      BatchNormMode mode = BatchNormMode::PerActivation, double epsilon = 1e-4,
                                      double running_average_factor = 0.1, Tensor running_mean = Tensor(),
                                      Tensor running_var = Tensor());
Tensor batch_norm_test(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& mean, const Tensor& var,
                       BatchNormMode mode = BatchNormMode::PerActivation, double epsilon = 1e-4);
BatchNormGrad batch_norm_grad(const Tensor& x, const Tensor& dy, const Tensor& gamma, const Tensor& mean,
                              const Tensor& invstd, BatchNormMode mode = BatchNormMode::PerActivation,
                              double epsilon = 1e-4);

}  // namespace cudnn

// BatchNormalization.h: the cuDNN twin of nn::BatchNormalization, and cudnn::BatchNormBase,
// the base it shares with cudnn::SpatialBatchNormalization and VolumetricBatchNormalization.
// The input is viewed as [N x C x S] (nn's layout(); [C ...] single samples in evaluation as
// N = 1; channels-last data is handed over 4-d / 5-d with its NHWC strides and trains in
// SPATIAL_PERSISTENT mode, Note [Channels-last twins] in cudnn/core/Layout.h); mode
// PER_ACTIVATION for [N x C], SPATIAL for the others, through one BatchNormPlan:
//   training     cudnnBatchNormalizationForwardTraining: batch statistics (biased variance),
//                running = (1 - momentum) * running + momentum * stat (unbiased variance),
//                in place; save_mean / save_invstd kept for backward;
//                backward: cudnnBatchNormalizationBackward, the parameter gradients blended
//                into gradWeight/gradBias with alpha = scale, beta = 1 (one call for
//                backward(); updateGradInput or accGradParameters alone send the other
//                result to scratch buffers);
//   evaluation   cudnnBatchNormalizationForwardInference with the running statistics;
//                backward (which cuDNN lacks) by kernels::batch_norm_eval_backward.
// Data may be float32, float64, float16 or bfloat16. cuDNN wants weight, bias and the
// statistics in float32 for 16-bit data (float64 for float64), so to(float16/bfloat16)
// keeps them float32: a float32 module takes float32, float16 and bfloat16 input, a
// float64 module float64 input. affine = false uses constant ones/zeros (not state).
#pragma once

#include <concepts>
#include <memory>
#include <type_traits>

#include "cudnn/Twin.h"
#include "nn/BatchNormalization.h"

namespace cudnn {

class BatchNormPlan;  // cudnn/ops/batch_norm.h (not installed)

namespace detail {
// What cudnn::FusedBatchNormalization asks of its batch norm (Note [Batch norm epilogues] in
// cudnn/ops/batch_norm.cpp): out = relu(bn(input) + addend), the addend undefined for none,
// in one pass where cuDNN's channels-last kernels run it. The batch norm's own output is left
// empty. The backward takes that out as y, and writes the addend's gradient to dAddend when
// one is given.
class FusableBatchNorm {
 public:
  virtual ~FusableBatchNorm() = default;
  virtual void forwardReLU(const Tensor& input, const Tensor& addend, Tensor& out) = 0;
  virtual void backwardReLU(const Tensor& input, const Tensor& y, const Tensor& gradOutput, Tensor* dAddend,
                            bool wantGradInput, bool wantParams, double scale, const char* method) = 0;
};

// The tail of a fused forward / backward (FusableBatchNorm); nullptr out: the plain module.
struct BatchNormTail {
  Tensor* out = nullptr;
  Tensor addend;
};
struct BatchNormTailGrad {
  Tensor y;                   // undefined: the plain module
  Tensor* dAddend = nullptr;  // the addend's gradient, allocated like gradInput
};

// The compute of the three batch-normalisation twins over nn::BatchNormalization's fields.
class BatchNormCompute {
 public:
  BatchNormCompute();
  ~BatchNormCompute();
  // The input's dtype against the statistics' (float32 for 16-bit data), and eps for cuDNN.
  void check(const nn::BatchNormalization& m, const Tensor& input, const char* method) const;
  void forward(nn::BatchNormalization& m, const nn::BatchNormalization::Layout& l, const Tensor& input,
               const BatchNormTail& tail = {});
  void backward(nn::BatchNormalization& m, const nn::BatchNormalization::Layout& l, const Tensor& input,
                const Tensor& gradOutput, bool wantGradInput, bool wantParams, double scale, const char* method,
                const BatchNormTailGrad& tail = {});

 private:
  // weight and bias, or the constant ones and zeros without affine
  const Tensor& gamma(nn::BatchNormalization& m);
  const Tensor& beta(nn::BatchNormalization& m);

  std::unique_ptr<BatchNormPlan> plan_;
  Tensor ones_, zeros_;                               // affine = false
  Tensor scratchData_, scratchWeight_, scratchBias_;  // results a caller did not ask for
};
}  // namespace detail

template <std::derived_from<nn::BatchNormalization> Base>
class BatchNormBase : public Twin<Base>, public detail::FusableBatchNorm {
 public:
  using Twin<Base>::Twin;

  const Tensor& updateOutput(const Tensor& input) override {
    compute_.forward(*this, checked(input, "updateOutput"), input);
    return this->output;
  }
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override {
    compute_.backward(*this, checked(input, "updateGradInput"), input, gradOutput, true, false, 1.0, "updateGradInput");
    return this->gradInput;
  }
  void accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale = 1.0) override {
    compute_.backward(*this, checked(input, "accGradParameters"), input, gradOutput, false, true, scale,
                      "accGradParameters");
  }
  void forwardReLU(const Tensor& input, const Tensor& addend, Tensor& out) override {
    compute_.forward(*this, checked(input, "updateOutput"), input, {&out, addend});
    this->output = Tensor();
  }
  void backwardReLU(const Tensor& input, const Tensor& y, const Tensor& gradOutput, Tensor* dAddend, bool wantGradInput,
                    bool wantParams, double scale, const char* method) override {
    compute_.backward(*this, checked(input, method), input, gradOutput, wantGradInput, wantParams, scale, method,
                      {y, dAddend});
  }
  using Base::to;
  // float16/bfloat16 data: the parameters and statistics stay float32 (see above).
  nn::Module& to(DType dtype) override {
    return Base::to(dtype == DType::Float16 || dtype == DType::BFloat16 ? DType::Float32 : dtype);
  }

 protected:
  void backwardImpl(const Tensor& input, const Tensor& gradOutput, double scale) override {
    compute_.backward(*this, checked(input, "backward"), input, gradOutput, true, true, scale, "backward");
  }

 private:
  nn::BatchNormalization::Layout checked(const Tensor& input, const char* method) {
    check_on_device(this->where(method), input, this->running_mean);
    check_cuda(this->where(method), input, "input");
    const nn::BatchNormalization::Layout l = this->shapeLayout(input, method);
    compute_.check(*this, input, method);
    return l;
  }

  detail::BatchNormCompute compute_;
};

using BatchNormalization = BatchNormBase<nn::BatchNormalization>;

}  // namespace cudnn

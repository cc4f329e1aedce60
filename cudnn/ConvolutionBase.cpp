// ConvolutionBase.cpp: the passes of the convolution twins on one ConvPlan.
//
// Note [Convolution twins]
// cuDNN sees every nn::ConvolutionBase as a cross-correlation of an "image" with a filter
// [K x C/groups x k...], the image being the large side (Note [Transposed convolution as the
// adjoint] in nn/ConvolutionBase.cpp):
//   plain       image = input, filter = weight [nOutputPlane x nInputPlane/groups x k...]
//               forward    = plan.forward(input) + bias
//               gradInput  = plan.backward_data(gradOutput)
//               gradWeight += scale * plan.backward_filter(input, gradOutput)
//   transposed  image = output, filter = weight [nInputPlane x nOutputPlane/groups x k...]
//               forward    = plan.backward_data(input) + bias
//               gradInput  = plan.forward(gradOutput)
//               gradWeight += scale * plan.backward_filter(gradOutput, input)
// and gradBias += scale * (gradOutput summed over all but the planes) in both. adj only makes
// the transposed output larger: a convolution of (in - 1) * stride - 2 * pad + extent + adj
// positions, adj < stride, has `in` positions again, so backward_data takes it as it is.
// Weight and bias gradients accumulate inside cuDNN (alpha = scale, beta = 1). A non-batched
// input runs as a batch of one (views, no copies). The module's algo names cuDNN's passes,
// so a transposed module's forward runs under algo.bwdData. Each pass reads spec() once and
// builds its error prefix ("cudnn.SpatialConvolution::updateOutput: ") only when throwing.
// Activations keep a channels-last input's layout (Note [Channels-last twins] in
// cudnn/core/Layout.h): x, y, dx and dy are handed to the plan with their NHWC strides, and so
// are a copy of the weight and the filter gradient before it is added (weight_in); the
// parameters themselves stay row-major.
#include "cudnn/ConvolutionBase.h"

#include <limits>
#include <utility>

#include "cudnn/core/Config.h"
#include "cudnn/core/Layout.h"
#include "cudnn/core/Opaque.h"
#include "cudnn/kernels/Bias.h"
#include "cudnn/ops/activation.h"
#include "cudnn/ops/blas.h"
#include "cudnn/ops/conv.h"
#include "nn/Buffers.h"
#include "tensor/Cuda.h"

namespace cudnn::detail {

struct ConvolutionCompute::State {
  ModulePlan plan;
  ActivationPlan activation;  // a fused forward's activation when no fused engine runs
  Tensor weightInFormat;      // channels-last copy of the weight (channels-last activations)
  Tensor gradWeightInFormat;  // the filter gradient in that layout, before it is added to gradWeight
  Tensor gradInputAddend;     // setGradInputAddend's, for the next backwardData
  Tensor biasSums;            // [K]: the filter-gradient product's bias sums
};

template class Opaque<ConvPlan>;
template class Opaque<ConvolutionCompute::State>;

namespace {

// A batch-of-one view of a non-batched tensor.
Tensor as_batch(const Tensor& t, int nd) { return t.dim() == nd + 2 ? t : t.unsqueeze(0); }

bool cudnn_float(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::Float16 || d == DType::BFloat16;
}

// The epilogue of a fusable activation (fusable_activation): the one place the fused
// convolution maps nn's activations to the cuDNN ops' enum.
std::optional<Activation> epilogue_of(const nn::PointwiseBase& act) {
  switch (act.activation()) {
    case nn::PointwiseBase::Activation::ReLU:
      return Activation::ReLU;
    case nn::PointwiseBase::Activation::Tanh:
      return Activation::Tanh;
    case nn::PointwiseBase::Activation::Sigmoid:
      return Activation::Sigmoid;
    default:
      return std::nullopt;
  }
}

// The layout the filter (and its gradient) should have for activations in `format`.
tensor::MemoryFormat filter_format(const Tensor& filter, tensor::MemoryFormat format) {
  return filter.dim() >= 4 ? format : tensor::MemoryFormat::Contiguous;
}

// The weight in the activations' layout: m.weight itself when already so (a channels-last
// network's filters after Module::to(MemoryFormat::ChannelsLast)), else a copy in `copy`
// (Note [Channels-last filters] in cudnn/ops/conv_search.cpp).
Tensor weight_in(const nn::ConvolutionBase& m, tensor::MemoryFormat format, Tensor& copy) {
  const tensor::MemoryFormat f = filter_format(m.weight, format);
  if (m.weight.is_contiguous(f)) return m.weight;
  nn::ensure(copy, m.weight.sizes(), m.weight, f).copy_(m.weight);
  return copy;
}

// What check_conv_input and check_conv_grad accept, tested without building a message.
bool conv_operand_ok(const Tensor& t, const Tensor& weight) {
  return t.defined() && t.is_cuda() && cudnn_float(t.dtype()) && weight.defined() && t.dtype() == weight.dtype() &&
         t.device() == weight.device();
}

// A plain 1x1 convolution with stride 1 and no padding over dense channels-last activations:
// each of its passes is one matrix product over the [NHW x C] rows, which cuBLAS computes as the
// convolution would under the default conv.precision (float32 for 16-bit data, TF32 for float32
// when allow_tf32). So other precisions, and a `pass` whose algorithm the user pinned (setMode,
// conv.algo_*), stay cuDNN's.
bool pointwise_product(const nn::ConvolutionBase& m, const Tensor& input, ConvPass pass) {
  if (m.transposed() || input.dim() != 4 || config().precision != Precision::AsInputF32) return false;
  const std::string& pinned = pass == ConvPass::BackwardData ? m.algo.bwdData : m.algo.bwdFilter;
  if (!pinned.empty() || config().algo(pass).policy == AlgoSetting::Policy::Fixed) return false;
  const ConvSpec s = m.spec();
  for (int d = s.first(); d < 3; ++d) {
    if (s.k[d] != 1 || s.stride[d] != 1 || s.pad[d] != 0 || s.dilation[d] != 1) return false;
  }
  return s.nd == 2 && s.groups == 1 && conv_operand_ok(input, m.weight) &&
         input.is_contiguous(tensor::MemoryFormat::ChannelsLast) &&
         input.numel() / input.size(1) <= std::numeric_limits<int>::max() && input.numel() > 0;
}

// Note [An input gradient onto an addend]
// ResNet's unit sums its block's input gradient and its shortcut's: the block's first
// convolution writes gb, then an add reads gb and gs and writes their sum, three passes over a
// tensor of the unit's input size that cuDNN's engines cannot fold in (they take no beta, and a
// graph with the add fused ran slower: docs/performance.md). Where that convolution is a
// pointwise_product, its input gradient is one matrix product, dx [NHW x C] = dy [NHW x K] *
// w [K x C], and cuBLAS's beta = 1 adds gs in the product's epilogue: gs's storage receives
// gb + gs, and neither gb nor the add's pass exists. The sum is rounded once, from float32,
// where the add rounded gb first.
bool onto_addend_applies(const nn::ConvolutionBase& m, const Tensor& input, const Tensor& addend) {
  return pointwise_product(m, input, ConvPass::BackwardData) && conv_operand_ok(addend, m.weight) &&
         addend.sizes() == input.sizes() && addend.is_contiguous(tensor::MemoryFormat::ChannelsLast);
}

// Note [Filter gradients as one product]
// A pointwise_product's filter gradient is dw [K x C] = dy^T [K x NHW] * x [NHW x C], and cuBLAS
// accumulates it into dw (beta 1) as the twins accumulate. For ResNet-50's 33 such convolutions
// in float16 at batch 64 (.data/wgrad1x1.cpp, H100) cuBLAS took 0.967 ms a step where the
// benchmark-mode search's best took 1.069, and every shape was faster; the engines that search
// picks accumulate through a scratch buffer and an add (engines built with beta 1 were slower:
// docs/performance.md). Measured for 16-bit data; float32 and float64 stay cuDNN's.
//
// Note [A bias gradient in the filter-gradient product]
// That product reads all of dy already, and the bias gradient is dy's sum over the same NHW
// rows: cuBLASLt's bias-gradient epilogue (BGRADB) sums them in the product, so the separate read
// of dy (a side-stream pass that cost 0.9 ms of ResNet-50's float16 step at batch 64 on the H100
// for its 53 convolutions: docs/performance.md) is left to the convolutions that are not such
// products. The epilogue computes in the product's float32 compute type but stores the sums in
// float16 (cuBLASLt 13 refuses float32 sums for float16 products). One small kernel then makes
// gradBias = scale * sums + gradBias in float32, so the bias gradient is rounded twice where the
// side-stream pass rounded it once. A sum that came out non-finite in float16 is summed again
// from dy in float32 first, so a sum beyond float16's range still gives nn's answer after the
// scale. The product's split-K parts are summed in float32 only: kept in float16 (cuBLASLt's
// default choice for some of these shapes), they overflowed where the whole did not and gave NaN
// (the big-values test). float16 only: ResNet-50's bfloat16 step measured 0.04-0.05 ms slower
// with it (.data/gpu_y.sh), float16's 0.37 ms faster. Where cuBLASLt offers no algorithm for the
// shapes and pointers, the product and the bias pass run apart, as before.
bool filter_product_applies(const nn::ConvolutionBase& m, const Tensor& input, const Tensor& gradOutput) {
  const tensor::DType t = input.dtype();
  return (t == tensor::DType::Float16 || t == tensor::DType::BFloat16) &&
         pointwise_product(m, input, ConvPass::BackwardFilter) &&
         gradOutput.is_contiguous(tensor::MemoryFormat::ChannelsLast) && m.gradWeight.is_contiguous() &&
         m.gradWeight.dtype() == t && m.gradWeight.device() == input.device();
}

// [N x C x H x W] channels-last as the [NHW x C] matrix it is in memory.
Tensor rows_of(const Tensor& t) { return t.permute({0, 2, 3, 1}).view({-1, t.size(1)}); }

}  // namespace

bool fusable_activation(const nn::Module& act) {
  const auto* p = dynamic_cast<const nn::PointwiseBase*>(&act);
  return p && act.backendKind() == nn::Backend::cudnn && epilogue_of(*p).has_value();
}

const ConvPlan& ConvolutionCompute::plan() const { return state_->plan.get(); }

void ModulePlan::sync(const nn::Module& m, const nn::ConvAlgorithms& algo, const char* method) {
  if (algo == applied_) return;
  ConvChoices choices;
  try {
    choices = ConvChoices::parse(algo.fwd, algo.bwdFilter, algo.bwdData, algo.fastest);
  } catch (const tensor::Error& e) {
    throw tensor::Error(m.where(method) + "algo (setMode): " + e.what());
  }
  plan_->setChoices(choices);
  applied_ = algo;
}

void check_conv_input(const nn::Module& m, const char* method, const Tensor& input, const Tensor& weight) {
  if (conv_operand_ok(input, weight)) return;
  const std::string where = m.where(method);
  check_on_device(where, input, weight);
  check_cuda(where, input, "input");
  nn::check_matches(where, input, weight);
}

void check_conv_grad(const nn::Module& m, const char* method, const Tensor& gradOutput, const Tensor& weight) {
  if (conv_operand_ok(gradOutput, weight)) return;
  const std::string where = m.where(method);
  check_cuda(where, gradOutput, "gradOutput");
  nn::check_matches(where, gradOutput, weight, "gradOutput");
}

void ConvolutionCompute::forward(nn::ConvolutionBase& m, const Tensor& input, const nn::PointwiseBase* activation,
                                 Tensor& out) {
  const std::optional<Activation> act = activation ? epilogue_of(*activation) : std::nullopt;
  const char* method = "updateOutput";
  check_conv_input(m, method, input, m.weight);
  const ConvSpec s = m.spec();
  const Shape outShape = m.outputSizes(s, input.sizes(), method);
  const tensor::MemoryFormat format = activation_format(input);
  const Tensor x = as_batch(as_format(input, format), s.nd);
  nn::ensure(out, outShape, x, format);
  const Tensor y = as_batch(out, s.nd);
  if (y.numel() == 0) return;  // an empty batch
  const Tensor w = weight_in(m, format, state_->weightInFormat);
  ModulePlan& plan = state_->plan;
  plan.sync(m, m.algo, method);
  with_where(m, method, [&] {
    if ((act || (fused_bias && m.bias.defined())) && !m.transposed() && plan->forward_fused(x, w, m.bias, y, s, act)) {
      return;
    }
    if (m.transposed()) {
      plan->backward_data(w, x, y, s);
    } else {
      plan->forward(x, w, y, s);
    }
    if (m.bias.defined()) plan->add_bias(y, m.bias);
    if (act) state_->activation.forward(*act, 0, y, y);
  });
}

bool ConvolutionCompute::setGradInputAddend(const nn::ConvolutionBase& m, const Tensor& input, const Tensor& addend) {
  const bool applies = onto_addend_applies(m, input, addend);
  state_->gradInputAddend = applies ? addend : Tensor();
  return applies;
}

void ConvolutionCompute::backwardData(nn::ConvolutionBase& m, const Tensor& input, const Tensor& gradOutput) {
  const char* method = "updateGradInput";
  const Tensor addend = std::exchange(state_->gradInputAddend, Tensor());  // for this call only
  check_conv_input(m, method, input, m.weight);
  check_conv_grad(m, method, gradOutput, m.weight);
  const ConvSpec s = m.spec();
  m.checkGradOutputSizes(s, input.sizes(), gradOutput.sizes(), method);
  const tensor::MemoryFormat format = activation_format(input);
  if (addend.defined() && onto_addend_applies(m, input, addend) &&
      gradOutput.is_contiguous(tensor::MemoryFormat::ChannelsLast)) {
    // Note [An input gradient onto an addend]; w [K x C x 1 x 1] is [K x C] in either layout
    const Tensor w = m.weight.reshape({m.weight.size(0), m.weight.size(1)});
    with_where(m, method, [&] { gemm(false, false, rows_of(gradOutput), w, rows_of(addend), 1, 1); });
    m.gradInput = addend;
    return;
  }
  const Tensor dy = as_batch(as_format(gradOutput, format), s.nd);
  nn::ensure(m.gradInput, input.sizes(), dy, format);
  const Tensor dx = as_batch(m.gradInput, s.nd);
  if (dx.numel() == 0) return;
  const Tensor w = weight_in(m, format, state_->weightInFormat);
  ModulePlan& plan = state_->plan;
  plan.sync(m, m.algo, method);
  with_where(m, method, [&] {
    if (m.transposed()) {
      plan->forward(dy, w, dx, s);
    } else {
      plan->backward_data(w, dy, dx, s);
    }
  });
  if (addend.defined()) {  // set for an input it did not apply to after all: the sum as its own pass
    Tensor sum = addend;
    tensor::add_out(sum, addend, m.gradInput);
    m.gradInput = sum;
  }
}

void ConvolutionCompute::backwardParameters(nn::ConvolutionBase& m, const Tensor& input, const Tensor& gradOutput,
                                            double scale) {
  const char* method = "accGradParameters";
  check_conv_input(m, method, input, m.weight);
  check_conv_grad(m, method, gradOutput, m.weight);
  const ConvSpec s = m.spec();
  m.checkGradOutputSizes(s, input.sizes(), gradOutput.sizes(), method);
  m.checkGradients(s, method);
  const tensor::MemoryFormat format = activation_format(input);
  const Tensor x = as_batch(as_format(input, format), s.nd);
  const Tensor dy = as_batch(as_format(gradOutput, format), s.nd);
  if (dy.numel() == 0) return;
  // The filter gradient is taken in the activations' layout: accumulated in place when gradWeight
  // has it, else taken into a buffer and blended in.
  const tensor::MemoryFormat gwFormat = filter_format(m.gradWeight, format);
  const bool blend = !m.gradWeight.is_contiguous(gwFormat);
  Tensor gw =
      blend ? nn::ensure(state_->gradWeightInFormat, m.gradWeight.sizes(), m.gradWeight, gwFormat) : m.gradWeight;
  const double gwAlpha = blend ? 1 : scale, gwBeta = blend ? 0 : 1;
  Tensor gb = m.gradBias.defined() ? m.gradBias.contiguous() : Tensor();
  ModulePlan& plan = state_->plan;
  plan.sync(m, m.algo, method);
  const bool product = !blend && filter_product_applies(m, input, gradOutput);
  with_where(m, method, [&] {
    const auto filter = [&] {
      if (product) {  // Note [Filter gradients as one product]; [K x C x 1 x 1] is [K x C]
        gemm(true, false, rows_of(gradOutput), rows_of(input), m.gradWeight.view({m.weight.size(0), -1}), scale, 1);
      } else if (m.transposed()) {
        plan->backward_filter(dy, x, gw, s, gwAlpha, gwBeta);
      } else {
        plan->backward_filter(x, dy, gw, s, gwAlpha, gwBeta);
      }
    };
    if (!gb.defined()) return filter();
    if (product && input.dtype() == DType::Float16) {  // Note [A bias gradient in the filter-gradient product]
      Tensor& sums = state_->biasSums;
      if (gemm_with_row_sums(true, false, rows_of(gradOutput), rows_of(input),
                             m.gradWeight.view({m.weight.size(0), -1}), scale, 1, sums)) {
        if (!kernels::bias_grad_from_sums(sums, gradOutput, gb, scale, 1)) plan->backward_bias(dy, gb, scale, 1);
        return;
      }
    }
    // The bias gradient, a read of dy, runs on the side stream beside the filter gradient's
    // compute-bound kernels, joined before anything it used is released (Note [The device's side
    // stream] in tensor/Cuda.h).
    const int device = dy.device().index;
    void* side = tensor::cuda::fork_side(device);
    Tensor keep;
    bool aside = false;
    try {
      aside = plan->backward_bias_on(side, dy, gb, scale, 1, keep);
      filter();
    } catch (...) {
      tensor::cuda::join_side(device);
      throw;
    }
    tensor::cuda::join_side(device);
    if (!aside) plan->backward_bias(dy, gb, scale, 1);
  });
  if (blend) m.gradWeight.add_(gw, scale);
  if (gb.defined() && !gb.is_same_view(m.gradBias)) m.gradBias.copy_(gb);
}

}  // namespace cudnn::detail

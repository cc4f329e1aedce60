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
// so a transposed module's forward runs under algo.bwdData.
#include "cudnn/ConvolutionBase.h"

#include "nn/Buffers.h"

namespace cudnn::detail {

namespace {

ConvGeometry geometry_of(const nn::ConvSpec& s) {
  ConvGeometry g;
  g.nd = s.nd;
  for (int i = 0; i < s.nd; ++i) {
    g.pad[i] = static_cast<int>(s.pad[i]);
    g.stride[i] = static_cast<int>(s.stride[i]);
    g.dilation[i] = static_cast<int>(s.dilation[i]);
  }
  g.groups = static_cast<int>(s.groups);
  g.cross_correlation = true;
  return g;
}

// A batch-of-one view of a non-batched tensor.
Tensor as_batch(const Tensor& t, int nd) { return t.dim() == nd + 2 ? t : t.unsqueeze(0); }

}  // namespace

void apply_algorithms(ConvPlan& plan, const nn::ConvAlgorithms& algo, const std::string& where) {
  try {
    plan.setMode(algo.fwd, algo.bwdFilter, algo.bwdData);
  } catch (const tensor::Error& e) {
    throw tensor::Error(where + "algo (setMode): " + e.what());
  }
  plan.setFastest(algo.fastest ? std::optional<bool>(true) : std::nullopt);  // off: the global flag decides
}

void check_conv_input(const std::string& where, const Tensor& input, const Tensor& weight) {
  check_on_device(where, input, weight);
  check_cuda(where, input, "input");
  nn::check_matches(where, input, weight);
}

void check_conv_grad(const std::string& where, const Tensor& gradOutput, const Tensor& weight) {
  check_cuda(where, gradOutput, "gradOutput");
  nn::check_matches(where, gradOutput, weight, "gradOutput");
}

void ConvolutionCompute::forward(nn::ConvolutionBase& m, const Tensor& input, const std::string& where) {
  const Shape outShape = m.outputSizes(input.sizes(), "updateOutput");
  const nn::ConvSpec s = m.spec();
  const Tensor x = as_batch(input.contiguous(), s.nd);
  nn::ensure(m.output, outShape, x);
  const Tensor y = as_batch(m.output, s.nd);
  if (y.numel() == 0) return;  // an empty batch
  const Tensor w = m.weight.contiguous();
  apply_algorithms(plan_, m.algo, where);
  const ConvGeometry g = geometry_of(s);
  with_where(where, [&] {
    if (m.transposed()) {
      plan_.backward_data(w, x, y, g);
    } else {
      plan_.forward(x, w, y, g);
    }
    if (m.bias.defined()) plan_.add_bias(y, m.bias);
  });
}

void ConvolutionCompute::backwardData(nn::ConvolutionBase& m, const Tensor& input, const Tensor& gradOutput,
                                      const std::string& where) {
  m.checkGradOutputSizes(input.sizes(), gradOutput.sizes(), "updateGradInput");
  const nn::ConvSpec s = m.spec();
  const Tensor dy = as_batch(gradOutput.contiguous(), s.nd);
  nn::ensure(m.gradInput, input.sizes(), dy);
  const Tensor dx = as_batch(m.gradInput, s.nd);
  if (dx.numel() == 0) return;
  const Tensor w = m.weight.contiguous();
  apply_algorithms(plan_, m.algo, where);
  const ConvGeometry g = geometry_of(s);
  with_where(where, [&] {
    if (m.transposed()) {
      plan_.forward(dy, w, dx, g);
    } else {
      plan_.backward_data(w, dy, dx, g);
    }
  });
}

void ConvolutionCompute::backwardParameters(nn::ConvolutionBase& m, const Tensor& input, const Tensor& gradOutput,
                                            double scale, const std::string& where) {
  m.checkGradOutputSizes(input.sizes(), gradOutput.sizes(), "accGradParameters");
  const nn::ConvSpec s = m.spec();
  const Tensor x = as_batch(input.contiguous(), s.nd);
  const Tensor dy = as_batch(gradOutput.contiguous(), s.nd);
  if (dy.numel() == 0) return;
  Tensor gw = m.gradWeight.contiguous();
  Tensor gb = m.gradBias.defined() ? m.gradBias.contiguous() : Tensor();
  apply_algorithms(plan_, m.algo, where);
  const ConvGeometry g = geometry_of(s);
  with_where(where, [&] {
    if (m.transposed()) {
      plan_.backward_filter(dy, x, gw, g, scale, 1);
    } else {
      plan_.backward_filter(x, dy, gw, g, scale, 1);
    }
    if (gb.defined()) plan_.backward_bias(dy, gb, scale, 1);
  });
  if (!gw.is_same_view(m.gradWeight)) m.gradWeight.copy_(gw);
  if (gb.defined() && !gb.is_same_view(m.gradBias)) m.gradBias.copy_(gb);
}

}  // namespace cudnn::detail

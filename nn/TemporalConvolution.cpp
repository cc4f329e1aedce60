// TemporalConvolution.cpp: frames are stored contiguously, so the kW frames of output t are
// one contiguous run of kW * inputFrameSize values starting at t * dW * inputFrameSize: the
// unfolded input is the input itself read with row stride dW * inputFrameSize, and each pass
// is one gemm per sample with no copy (only gradInput folds overlapping windows back).
#include "nn/TemporalConvolution.h"

#include <cmath>

#include "nn/Buffers.h"
#include "nn/ModuleConfig.h"
#include "nn/kernels/Convolution.h"
#include "nn/kernels/Parallel.h"
#include "tensor/Blas.h"

namespace nn {

using tensor::blas::gemm;

TemporalConvolution::TemporalConvolution(int64_t inputFrameSize_, int64_t outputFrameSize_, int64_t kW_, int64_t dW_)
    : inputFrameSize(inputFrameSize_), outputFrameSize(outputFrameSize_), kW(kW_), dW(dW_) {
  if (inputFrameSize <= 0 || outputFrameSize <= 0 || kW <= 0 || dW <= 0) {
    throw Error("nn.TemporalConvolution: expected positive frame sizes, kW and dW, got inputFrameSize " +
                std::to_string(inputFrameSize) + ", outputFrameSize " + std::to_string(outputFrameSize) + ", kW " +
                std::to_string(kW) + ", dW " + std::to_string(dW));
  }
  const int64_t K = tensor::shape_numel({kW, inputFrameSize}, "nn.TemporalConvolution");  // no signed overflow
  weight = tensor::empty({outputFrameSize, K});
  gradWeight = tensor::zeros({outputFrameSize, K});
  bias = tensor::empty({outputFrameSize});
  gradBias = tensor::zeros({outputFrameSize});
  reset();
}

void TemporalConvolution::reset(double stdv) {
  if (stdv < 0) stdv = 1.0 / std::sqrt(static_cast<double>(kW * inputFrameSize));
  weight.uniform_(-stdv, stdv);
  bias.uniform_(-stdv, stdv);
}

void TemporalConvolution::visitState(StateVisitor& v) {
  v.parameter("weight", weight, gradWeight);
  v.parameter("bias", bias, gradBias);
}

ConvSpec TemporalConvolution::spec() const {
  ConvSpec s;
  s.nd = 2;
  s.k = {1, kW, inputFrameSize};
  s.stride = {1, dW, 1};
  return s;
}

void TemporalConvolution::checkInput(const Tensor& t, const char* what, const char* method) const {
  check_conv_input(*this, t, weight, what, method);
}

Shape TemporalConvolution::outputShape(const Tensor& input, const char* method) const {
  checkInput(input, "input", method);
  return outputSizes(input.sizes(), method);
}

Shape TemporalConvolution::outputSizes(const Shape& input, const char* method) const {
  auto at = [&] { return where(method); };
  if (inputFrameSize <= 0 || outputFrameSize <= 0 || kW <= 0 || dW <= 0) {
    throw Error(at() + "expected positive sizes, got inputFrameSize " + std::to_string(inputFrameSize) +
                ", outputFrameSize " + std::to_string(outputFrameSize) + ", kW " + std::to_string(kW) + ", dW " +
                std::to_string(dW));
  }
  // Note [Parameters are checked where they are used]; kW * inputFrameSize in checked arithmetic
  check_parameter(*this, method, "weight", weight,
                  {outputFrameSize, tensor::shape_numel({kW, inputFrameSize}, "nn.TemporalConvolution")});
  check_parameter(*this, method, "bias", bias, {outputFrameSize});
  if ((input.size() != 2 && input.size() != 3) || input.back() != inputFrameSize) {
    const std::string f = std::to_string(inputFrameSize);
    throw Error(at() + "expected input of [nInputFrame x " + f + "] or [batch x nInputFrame x " + f + "], got " +
                tensor::shape_str(input));
  }
  const int64_t frames = input[input.size() - 2], span = frames - kW;
  const int64_t outFrames = (span >= 0 ? span / dW : -((-span + dW - 1) / dW)) + 1;
  if (outFrames < 1) {
    throw Error(at() + "expected input of at least " + std::to_string(kW) + " frames for kernel width " +
                std::to_string(kW) + ", got " + tensor::shape_str(input) + ": calculated output size " +
                std::to_string(outFrames) + " frames, too small");
  }
  Shape out(input);
  out[out.size() - 2] = outFrames;
  out[out.size() - 1] = outputFrameSize;
  return out;
}

void TemporalConvolution::checkGradOutput(const Tensor& input, const Tensor& gradOutput, const char* method) const {
  checkInput(input, "input", method);
  checkInput(gradOutput, "gradOutput", method);
  checkGradOutputSizes(input.sizes(), gradOutput.sizes(), method);
}

void TemporalConvolution::checkGradOutputSizes(const Shape& input, const Shape& gradOutput, const char* method) const {
  const Shape expected = outputSizes(input, method);
  if (gradOutput != expected) {
    throw Error(where(method) + "expected gradOutput of " + tensor::shape_str(expected) + " (for input " +
                tensor::shape_str(input) + "), got " + tensor::shape_str(gradOutput));
  }
}

namespace {
struct Frames {
  int64_t batch, inFrames, outFrames;
};
Frames frames_of(const Shape& in, const Shape& out) {
  const bool batched = in.size() == 3;
  return {batched ? in[0] : 1, in[in.size() - 2], out[out.size() - 2]};
}
}  // namespace

const Tensor& TemporalConvolution::updateOutput(const Tensor& input) {
  const Shape outShape = outputShape(input, "updateOutput");
  const Tensor x = input.contiguous();
  const Tensor w = weight.contiguous();
  const Tensor b = bias.contiguous();
  ensure(output, outShape, x);
  const Frames f = frames_of(x.sizes(), outShape);
  const int64_t F = inputFrameSize, O = outputFrameSize, K = kW * F;
  tensor::dispatch_f32_f64(x.dtype(), "nn.TemporalConvolution", [&](auto tag) {
    using T = decltype(tag);
    const T* xp = x.data<T>();
    const T* bp = b.data<T>();
    T* yp = output.data<T>();
    kernels::parallel_batch(f.batch, kernels::batch_threads(f.batch, f.outFrames * O * K), [&](int64_t n, int) {
      T* y = yp + n * f.outFrames * O;
      for (int64_t t = 0; t < f.outFrames; ++t) std::copy(bp, bp + O, y + t * O);
      // overlapping windows: row t of the unfolded input starts at frame t * dW
      gemm<T>(false, true, f.outFrames, O, K, T(1), xp + n * f.inFrames * F, dW * F, w.data<T>(), K, T(1), y, O);
    });
  });
  return output;
}

const Tensor& TemporalConvolution::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  checkGradOutput(input, gradOutput, "updateGradInput");
  const Tensor gy = gradOutput.contiguous();
  const Tensor w = weight.contiguous();
  ensure(gradInput, input.sizes(), input);
  const Frames f = frames_of(input.sizes(), gy.sizes());
  const int64_t F = inputFrameSize, O = outputFrameSize, K = kW * F;
  const int threads = kernels::batch_threads(f.batch, f.outFrames * O * K);
  const bool overlapping = dW < kW;
  ensure(columns_, {overlapping ? threads * f.outFrames * K : 1}, input);
  tensor::dispatch_f32_f64(input.dtype(), "nn.TemporalConvolution", [&](auto tag) {
    using T = decltype(tag);
    T* gxp = gradInput.data<T>();
    kernels::parallel_batch(f.batch, threads, [&](int64_t n, int tid) {
      T* gx = gxp + n * f.inFrames * F;
      const T* g = gy.data<T>() + n * f.outFrames * O;
      std::fill(gx, gx + f.inFrames * F, T(0));
      if (!overlapping) {
        // disjoint windows: write them in place (frames between windows stay 0)
        gemm<T>(false, false, f.outFrames, K, O, T(1), g, O, w.data<T>(), K, T(0), gx, dW * F);
        return;
      }
      T* cols = columns_.data<T>() + tid * f.outFrames * K;
      gemm<T>(false, false, f.outFrames, K, O, T(1), g, O, w.data<T>(), K, T(0), cols, K);
      for (int64_t t = 0; t < f.outFrames; ++t) {
        T* dst = gx + t * dW * F;
        const T* src = cols + t * K;
        for (int64_t j = 0; j < K; ++j) dst[j] += src[j];
      }
    });
  });
  return gradInput;
}

void TemporalConvolution::checkGradients(const char* method) const {
  check_parameter(*this, method, "weight", weight, {outputFrameSize, kW * inputFrameSize}, &gradWeight);
  check_parameter(*this, method, "bias", bias, {outputFrameSize}, &gradBias);
}

void TemporalConvolution::accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale) {
  checkGradOutput(input, gradOutput, "accGradParameters");
  checkGradients("accGradParameters");
  const Tensor x = input.contiguous();
  const Tensor gy = gradOutput.contiguous();
  const Frames f = frames_of(x.sizes(), gy.sizes());
  const int64_t F = inputFrameSize, O = outputFrameSize, K = kW * F;
  // per-thread partial gradients only while one is no larger than the input it comes from
  const int threads = O <= f.outFrames ? kernels::batch_threads(f.batch, f.outFrames * O * K) : 1;
  ensure(columns_, {threads > 1 ? threads * O * K : 1}, x);
  Tensor gw = gradWeight.contiguous();
  Tensor gb = gradBias.contiguous();
  tensor::dispatch_f32_f64(x.dtype(), "nn.TemporalConvolution", [&](auto tag) {
    using T = decltype(tag);
    T* partials = columns_.data<T>();
    if (threads > 1) std::fill(partials, partials + threads * O * K, T(0));
    kernels::parallel_batch(f.batch, threads, [&](int64_t n, int tid) {
      // gW += gy_n^T [O x outFrames] * unfolded x_n [outFrames x K]
      gemm<T>(true, false, O, K, f.outFrames, threads > 1 ? T(1) : static_cast<T>(scale),
              gy.data<T>() + n * f.outFrames * O, O, x.data<T>() + n * f.inFrames * F, dW * F, T(1),
              threads > 1 ? partials + tid * O * K : gw.data<T>(), K);
    });
    if (threads > 1) kernels::reduce_partials(gw.data<T>(), partials, threads, O * K, static_cast<T>(scale));
    // frames are the rows of gy: a [batch * outFrames x O] bias gradient
    kernels::bias_backward<T>(gy.data<T>(), f.batch * f.outFrames, O, 1, static_cast<T>(scale), gb.data<T>());
  });
  if (!gw.is_same_view(gradWeight)) gradWeight.copy_(gw);
  if (!gb.is_same_view(gradBias)) gradBias.copy_(gb);
}

tensor::Json TemporalConvolution::config() const {
  return tensor::Json::Object{{"inputFrameSize", inputFrameSize},
                              {"outputFrameSize", outputFrameSize},
                              {"kW", kW},
                              {"dW", dW},
                              {"algo", algo.config()}};
}

ModulePtr TemporalConvolution::fromConfig(const tensor::Json& config) {
  ConfigReader c(config, "nn.TemporalConvolution");
  const int64_t in = c.integer("inputFrameSize"), out = c.integer("outputFrameSize");
  const int64_t kW = c.integer("kW"), dW = c.integer("dW", 1);
  const ConvAlgorithms algo = ConvAlgorithms::fromConfig(c);
  c.finish();  // every key read and checked before anything is allocated
  auto m = std::make_shared<TemporalConvolution>(in, out, kW, dW);
  m->algo = algo;
  return m;
}

}  // namespace nn

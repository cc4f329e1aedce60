// BatchNormalization.h: y = (x - mean) / sqrt(var + eps) * weight + bias per feature of an
// [N x C] input ([C] accepted in evaluation only, as Torch). Training normalises with the
// batch statistics (biased variance) and updates running_mean / running_var with momentum
// and the UNBIASED variance (running = (1 - momentum) * running + momentum * stat, as cuDNN
// and Theano); evaluation uses the running statistics, and backward works in both modes.
// Training needs more than one value per channel and throws otherwise (the unbiased
// variance is undefined; Torch would store NaN). weight starts at 1 and bias at 0 (as
// PyTorch; Torch drew weight from U(0, 1)). The subclasses Spatial/VolumetricBatchNormalization
// share all of this and differ only in nDim. Twin: cudnn::BatchNormalization
// (cudnnBatchNormalizationForwardTraining/Inference, which also yield save_mean/save_invstd).
// Note [num_batches_tracked]: as PyTorch's, the buffer num_batches_tracked (an int64 scalar)
// counts training forwards, so a PyTorch state_dict of a network with batch norm loads and a
// saved one loads in PyTorch. Both backends count through countBatch(), which also gives the
// running statistics' factor: momentum, or with cumulativeAverage (PyTorch's momentum=None)
// 1 / num_batches_tracked, a cumulative moving average. A state without the buffer (PyTorch's
// version-1 checkpoints, older model files) loads and leaves the count as it was, as PyTorch does.
#pragma once

#include "nn/Module.h"
#include "nn/ModuleConfig.h"

namespace nn {

class BatchNormalization : public Module {
 public:
  explicit BatchNormalization(int64_t nOutput, double eps = 1e-5, double momentum = 0.1, bool affine = true);

  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  void accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale = 1.0) override;
  // weight = 1, bias = 0, running_mean = 0, running_var = 1
  void reset();
  static constexpr std::string_view kTypeName = "nn.BatchNormalization";
  std::string type_name() const override { return std::string(kTypeName); }
  tensor::Json config() const override;
  static ModulePtr fromConfig(const tensor::Json& config);
  std::string str() const override;  // Torch: "nn.BatchNormalization (2D) (64)"

  int64_t nOutput;
  int64_t nDim;  // the batched input rank: 2 here, 4 Spatial, 5 Volumetric
  double eps, momentum;
  bool affine;
  Tensor weight, bias, gradWeight, gradBias;  // undefined without affine
  Tensor running_mean, running_var;           // buffers
  Tensor num_batches_tracked;                 // int64 scalar buffer, Note [num_batches_tracked]
  bool cumulativeAverage = false;             // PyTorch's momentum=None: 1 / num_batches_tracked
  // Statistics the last forward normalised with (batch statistics in training, running
  // ones in evaluation); invstd = 1 / sqrt(var + eps). Read by backward.
  Tensor save_mean, save_invstd;

  // The input as [N x C x S] sizes, after checking dtype, rank, channel count and (in
  // training) more than one value per channel.
  struct Layout {
    int64_t N, C, S;
  };
  Layout layout(const Tensor& input, const char* method) const;
  // The same without the dtype checks (the cudnn twins take 16-bit data with float32
  // statistics): rank, channel count and, in training, more than one value per channel; and
  // the parameters' and statistics' shapes (Note [Parameters are checked where they are used]).
  Layout shapeLayout(const Tensor& input, const char* method) const;
  // gradWeight and gradBias of [nOutput], before a pass accumulates into them (affine only).
  void checkGradients(const char* method) const;
  // Counts one training forward in num_batches_tracked and returns the running statistics'
  // factor (Note [num_batches_tracked]); both backends call it once per training forward.
  double countBatch();
  // gradOutput has the input's shape and dtype.
  void checkGradOutput(const Tensor& input, const Tensor& gradOutput, const char* method) const;

 protected:
  BatchNormalization(int64_t nOutput, double eps, double momentum, bool affine, int64_t nDim);
  // Every batch norm's fromConfig: the constructor's arguments and cumulativeAverage.
  template <class M>
  static ModulePtr fromConfigAs(const tensor::Json& config);
  void visitState(StateVisitor& v) override;
  // one pass computes gradInput and the parameter gradients together
  void backwardImpl(const Tensor& input, const Tensor& gradOutput, double scale) override;
  // gradInput and/or the parameter gradients (times scale), in one pass over the data.
  void backwardPass(const Tensor& input, const Tensor& gradOutput, bool wantGradInput, bool wantParams, double scale,
                    const char* method);
  // "[N x C x H x W]" for nDim, or the single-sample form without N
  std::string shapeContract(bool batched) const;
  // Fills save_mean / save_invstd from the running statistics (evaluation).
  void useRunningStatistics(const Tensor& like);
};

template <class M>
ModulePtr BatchNormalization::fromConfigAs(const tensor::Json& config) {
  ConfigReader c(config, M::kTypeName);
  const int64_t nOutput = c.integer("nOutput");
  const double eps = c.number("eps", 1e-5), momentum = c.number("momentum", 0.1);
  const bool affine = c.flag("affine", true), cumulative = c.flag("cumulativeAverage", false);
  c.finish();
  auto m = std::make_shared<M>(nOutput, eps, momentum, affine);
  m->cumulativeAverage = cumulative;
  return m;
}

// What Spatial/VolumetricBatchNormalization add to BatchNormalization: the batched input rank
// NDim, and their type name and fromConfig from Self::kTypeName. A module is `class
// SpatialBatchNormalization : public BatchNormalizationModule<SpatialBatchNormalization, 4>`
// with `using BatchNormalizationModule::BatchNormalizationModule;` and its kTypeName.
template <class Self, int64_t NDim>
class BatchNormalizationModule : public BatchNormalization {
 public:
  explicit BatchNormalizationModule(int64_t nOutput, double eps = 1e-5, double momentum = 0.1, bool affine = true)
      : BatchNormalization(nOutput, eps, momentum, affine, NDim) {}
  std::string type_name() const override { return std::string(Self::kTypeName); }
  static ModulePtr fromConfig(const tensor::Json& config) { return fromConfigAs<Self>(config); }
};

}  // namespace nn

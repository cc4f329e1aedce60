// SpatialCrossMapLRN.h: local response normalisation across channels, as Torch and cuDNN
// (CUDNN_LRN_CROSS_CHANNEL_DIM1) define it: scale = k + alpha / size * (sum of x^2 over the
// channels [c - (size - 1) / 2, c + size / 2], clipped to the input's), y = x * scale^-beta.
// For even sizes the window reaches one channel further forward than back (Torch's CUDA code
// and cuDNN; PyTorch's local_response_norm centres it the other way).
// Input [C x H x W] or [N x C x H x W], output the same. Twin: cudnn::SpatialCrossMapLRN.
#pragma once

#include "nn/Module.h"

namespace nn {

class SpatialCrossMapLRN : public Module {
 public:
  explicit SpatialCrossMapLRN(int64_t size = 5, double alpha = 1e-4, double beta = 0.75, double k = 1);

  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  static constexpr std::string_view kTypeName = "nn.SpatialCrossMapLRN";
  std::string type_name() const override { return std::string(kTypeName); }
  tensor::Json config() const override;
  static ModulePtr fromConfig(const tensor::Json& config);
  // Throws unless input is a float32/float64 tensor of 3 or 4 dims.
  void checkInput(const Tensor& input, const char* method) const;
  // The same without the dtype (the cudnn twin takes 16-bit data too).
  void checkShape(const Tensor& input, const char* method) const;
  // Throws unless gradOutput has input's shape, dtype and device.
  void checkGradOutput(const Tensor& input, const Tensor& gradOutput, const char* method) const;

  int64_t size;
  double alpha, beta, k;
  Tensor scale;  // k + alpha / size * window sum, from the last updateOutput (Torch's self.scale)

 private:
  Tensor ratio_;  // backward scratch: gradOutput * x * scale^(-beta - 1)
};

}  // namespace nn

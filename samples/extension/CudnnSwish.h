// CudnnSwish.h: the CUDA twin of ext::Swish, as the library's twins are made: it derives from
// the nn module (same constructor, beta, printing and config), is built by moving one in, and
// computes on CUDA devices with a fused kernel (swish_kernels.cu) in float32 and float64.
// Its output and gradInput buffers are reused (nn::ensure), so it allocates nothing in steady
// state; the gradient of beta is a sum over the elements.
#pragma once

#include "Swish.h"

namespace ext {

class CudnnSwish : public Swish {
 public:
  using Swish::Swish;
  explicit CudnnSwish(Swish&& m) : Swish(std::move(m)) {}

  static constexpr std::string_view kTypeName = "ext.CudnnSwish";
  std::string type_name() const override { return std::string(kTypeName); }
  bool computesOn(tensor::Device d) const override { return d.is_cuda(); }
  nn::Backend backendKind() const override { return nn::Backend::cudnn; }
  static nn::ModulePtr fromConfig(const tensor::Json& config);

  const tensor::Tensor& updateOutput(const tensor::Tensor& input) override;
  const tensor::Tensor& updateGradInput(const tensor::Tensor& input, const tensor::Tensor& gradOutput) override;
  void accGradParameters(const tensor::Tensor& input, const tensor::Tensor& gradOutput, double scale = 1.0) override;

 private:
  void checkDevice(const char* method, const tensor::Tensor& input) const;
  tensor::Tensor contrib_;  // per-element terms of beta's gradient, reused
};

}  // namespace ext

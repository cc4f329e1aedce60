// Normalize.h: y = x / ||x||_p over the last dimension of a [N x D] or [D] input (Torch's
// nn.Normalize(p, eps)), Torch's norm: (sum |x|^p + eps)^(1/p) for a finite p > 0 (p = 2 by
// default), max |x| + eps for p = inf. gradInput as Torch's: (normp dy - x |x|^(p-2) (x . dy))
// / (normp norm), normp = sum |x|^p + eps (with eps added to |x| in |x|^(p-2) for an odd
// p < 2); for p = inf (norm dy - [j = argmax] x_j / norm (x . dy)) / norm^2, the argmax the
// first (or the first NaN). Rows are summed in double on the CPU. Prints as Torch:
// "nn.Normalize(2)", "nn.Normalize(1.500000)", "nn.Normalize(inf)". Twin: cudnn::Normalize
// (our kernels, cudnn/kernels/Reduce.h).
#pragma once

#include "nn/Module.h"

namespace nn {

class Normalize : public Module {
 public:
  explicit Normalize(double p = 2, double eps = 1e-10);

  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  static constexpr std::string_view kTypeName = "nn.Normalize";
  std::string type_name() const override { return std::string(kTypeName); }
  std::string str() const override;
  // {"p": 2, "eps": 1e-10}; p = inf is written "inf" (JSON has no infinity)
  tensor::Json config() const override;
  static ModulePtr fromConfig(const tensor::Json& config);

  double p, eps;

 protected:
  // [N x D] or [D] (`dtypes`: float32 or float64, the nn module's), p > 0 and eps finite;
  // returns {rows, D}.
  std::pair<int64_t, int64_t> checkInput(const Tensor& input, const char* method, bool dtypes = true) const;
  void checkGradOutput(const Tensor& input, const Tensor& gradOutput, const char* method) const;
};

}  // namespace nn

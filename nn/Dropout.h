// Dropout.h: at training, zeroes each element with probability p and scales the kept ones
// by 1/(1-p) (Torch's default "v2" dropout), so evaluation is the identity; v1 = true keeps
// Torch's old variant (no scaling at training, output * (1-p) at evaluation). The mask is
// drawn with bernoulli_ from tensor::default_generator(), so tensor::manual_seed repeats it;
// `noise` holds the last mask (already scaled). inplace = true overwrites the input (and
// gradOutput in backward). With p == 0, or in evaluation under v2, output is the input itself
// and gradInput the gradOutput itself (Note [Dropout as the identity]). Any input shape.
// Twin: cudnn::Dropout.
#pragma once

#include "nn/Module.h"

namespace nn {

class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5, bool v1 = false, bool inplace = false);

  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  void setp(double p);
  // output and the mask (Module::releaseActivations): a training backward then asks for a forward.
  void releaseActivations() override;
  static constexpr std::string_view kTypeName = "nn.Dropout";
  std::string type_name() const override { return std::string(kTypeName); }
  tensor::Json config() const override;
  static ModulePtr fromConfig(const tensor::Json& config);
  std::string str() const override;  // Torch's "%s(%f)": nn.Dropout(0.500000)

  double p;
  bool v2;
  bool inplace;
  bool writesGradOutput() const override { return inplace; }
  Tensor noise;

 protected:
  // float32/float64 input and a valid p; virtual so the cudnn twin can accept 16-bit inputs.
  virtual void checkInput(const Tensor& input, const char* method) const;
  void checkP(const char* method) const;
  bool isIdentity() const;

 private:
  bool outputIsAlias_ = false, gradInputIsAlias_ = false;  // the last pass handed its argument back
  // A pass's first step, writing `out` from `in` (output from input, gradInput from
  // gradOutput): the identity hands `in` back (returns true: nothing left to do); otherwise out
  // is `in` itself in place, else a copy of it in out's own buffer.
  bool start(Tensor& out, bool& outIsAlias, const Tensor& in);
};

}  // namespace nn

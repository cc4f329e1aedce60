// PointwiseBase.h: the shared base of the element-wise activations (ReLU, ClippedReLU, Tanh,
// Sigmoid, ELU, GELU, SiLU, LeakyReLU) and staples (Abs, Square, Sqrt, Exp, Log, Power,
// MulConstant, AddConstant: Note [Element-wise staples] in nn/kernels/Activation.h): output has the input's shape (any
// rank); gradInput is computed from the output alone, or from the input where the function is not invertible (GELU,
// SiLU: see kernels::activation_needs_input: also Abs, Square, Log, Power; those refuse inplace). With `inplace` the
// output IS the input (same storage, overwritten) and gradInput reuses gradOutput's storage, as Torch's in-place ReLU
// does. A subclass only names its activation() and coef(). Twins: the cudnn activation modules, one cuDNN activation
// descriptor base over these.
#pragma once

#include <optional>

#include "nn/Module.h"
#include "nn/ModuleConfig.h"
#include "nn/kernels/Activation.h"

namespace nn {

class PointwiseBase : public Module {
 public:
  using Activation = nn::Activation;  // nn/Activation.h

  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;

  // Which function, and cuDNN's coef (ClippedReLU's ceiling, ELU's alpha, 0 otherwise).
  virtual Activation activation() const = 0;
  virtual double coef() const { return 0.0; }
  tensor::Json config() const override;  // {"inplace": false}; subclasses add their coefficient

  bool inplace = false;
  bool writesGradOutput() const override { return inplace; }

 protected:
  explicit PointwiseBase(bool inplace_ = false) : inplace(inplace_) {}

  void checkInput(const Tensor& input, const char* method) const;
  // inplace is refused where the backward pass reads the input (the twins check it too).
  void checkInplace(const char* method) const;
  // gradOutput must have the output's shape and dtype (and updateOutput must have run).
  void checkGradOutput(const Tensor& gradOutput, const char* method) const;
  // The same without the float32/float64 check (the cudnn twins take 16-bit data too).
  void checkGradOutputMatches(const Tensor& gradOutput, const char* method) const;
  // updateGradInput for the modes whose derivative reads the input.
  const Tensor& gradInputFromInput(const Tensor& input, const Tensor& gradOutput);
};

// What an activation adds to PointwiseBase: its activation and its type name from
// Self::kTypeName, and for those without a coefficient fromConfig ({"inplace": ..}). A module
// is `class Tanh : public ActivationModule<Tanh, Activation::Tanh>` with its kTypeName; ReLU,
// which takes `inplace` in its constructor, adds `using ActivationModule::ActivationModule;`;
// ELU, LeakyReLU and ClippedReLU add their coefficient, its coef(), and config() and
// fromConfig through coefConfig() and coefFromConfig().
template <class Self, Activation A>
class ActivationModule : public PointwiseBase {
 public:
  explicit ActivationModule(bool inplace = false) : PointwiseBase(inplace) {}
  Activation activation() const override { return A; }
  std::string type_name() const override { return std::string(Self::kTypeName); }
  static ModulePtr fromConfig(const tensor::Json& config) {
    ConfigReader c(config, Self::kTypeName);
    const bool inplace = c.flag("inplace", false);
    c.finish();
    auto m = std::make_shared<Self>();
    m->inplace = inplace;
    return m;
  }

 protected:
  // An activation with a coefficient in its config as {"<key>": coef(), "inplace": ..}, built
  // back as Self(coef, inplace); `fallback` is the constructor's default (none: key required).
  tensor::Json coefConfig(const char* key) const { return tensor::Json::Object{{key, coef()}, {"inplace", inplace}}; }
  static ModulePtr coefFromConfig(const tensor::Json& config, const char* key, std::optional<double> fallback) {
    ConfigReader c(config, Self::kTypeName);
    const double coef = fallback ? c.number(key, *fallback) : c.number(key);
    const bool inplace = c.flag("inplace", false);
    c.finish();
    return std::make_shared<Self>(coef, inplace);
  }
};

}  // namespace nn

// Criterion.h: the base of loss functions, with Torch's interface: forward(input, target)
// returns the loss as a double (updateOutput), backward(input, target) returns the gradient
// with respect to the input (updateGradInput). State (class weights) is named in visitState
// so to() moves it. Like modules, an nn criterion handed CUDA tensors computes on the CPU
// and returns gradInput on the input's device; cudnn twins derive from their nn criterion.
#pragma once

#include <string>

#include "nn/Module.h"

namespace nn {

class Criterion {
 public:
  virtual ~Criterion() = default;
  Criterion(const Criterion&) = delete;
  Criterion& operator=(const Criterion&) = delete;

  double forward(const Tensor& input, const Tensor& target);
  const Tensor& backward(const Tensor& input, const Tensor& target);
  virtual double updateOutput(const Tensor& input, const Tensor& target) = 0;
  virtual const Tensor& updateGradInput(const Tensor& input, const Tensor& target) = 0;
  // The table interface (Note [Tables] in nn/Value.cpp): a criterion whose input is a table
  // ({x1, x2}: MarginRankingCriterion, CosineEmbeddingCriterion) overrides the Value methods and
  // refuses the tensor ones; every other criterion takes a Value holding its input tensor, and
  // its gradient is also kept in `gradInputValue`.
  double forward(const Value& input, const Tensor& target);
  const Value& backward(const Value& input, const Tensor& target);
  virtual double updateOutputValue(const Value& input, const Tensor& target);
  virtual const Value& updateGradInputValue(const Value& input, const Tensor& target);

  virtual Criterion& to(Device device);
  virtual Criterion& to(DType dtype);
  virtual bool computesOn(Device device) const { return device.is_cpu(); }
  Device device() const { return device_; }
  virtual Backend backendKind() const { return Backend::nn; }
  virtual std::string type_name() const = 0;
  virtual std::string str() const { return type_name(); }
  std::map<std::string, Tensor> stateDict();

  double output = 0;
  Tensor gradInput;
  Value gradInputValue;

 protected:
  Criterion() = default;
  Criterion(Criterion&&) = default;
  virtual void visitState(StateVisitor&) {}
  std::string where(const char* method) const { return type_name() + "::" + method + ": "; }
  Device device_ = Device::cpu();

 private:
  Tensor bridgedGradInput_;
};

using CriterionPtr = std::shared_ptr<Criterion>;

}  // namespace nn

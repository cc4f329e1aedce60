// Criterion.cpp: device bridging (Note [Device bridging] in Module.cpp) and state moves.
#include "nn/Criterion.h"

namespace nn {

double Criterion::forward(const Tensor& input, const Tensor& target) {
  if (!input.defined() || !target.defined()) throw Error(where("forward") + "input or target is undefined");
  if (input.is_cuda() && !computesOn(input.device())) {
    output = updateOutput(input.to(Device::cpu()), target.to(Device::cpu()));
    return output;
  }
  output = updateOutput(input, target);
  return output;
}

const Tensor& Criterion::backward(const Tensor& input, const Tensor& target) {
  if (!input.defined() || !target.defined()) throw Error(where("backward") + "input or target is undefined");
  if (input.is_cuda() && !computesOn(input.device())) {
    bridgedGradInput_ = updateGradInput(input.to(Device::cpu()), target.to(Device::cpu())).to(input.device());
    return bridgedGradInput_;
  }
  return updateGradInput(input, target);
}

double Criterion::forward(const Value& input, const Tensor& target) {
  if (input.isTensor()) return forward(input.tensorOrUndefined(), target);
  if (!target.defined()) throw Error(where("forward") + "target is undefined");
  output = updateOutputValue(input, target);
  return output;
}

const Value& Criterion::backward(const Value& input, const Tensor& target) {
  if (input.isTensor()) {
    gradInputValue = backward(input.tensorOrUndefined(), target);
    return gradInputValue;
  }
  if (!target.defined()) throw Error(where("backward") + "target is undefined");
  return updateGradInputValue(input, target);
}

double Criterion::updateOutputValue(const Value& input, const Tensor& target) {
  return updateOutput(input.tensor(where("forward")), target);
}

const Value& Criterion::updateGradInputValue(const Value& input, const Tensor& target) {
  gradInputValue = updateGradInput(input.tensor(where("backward")), target);
  return gradInputValue;
}

namespace {
struct Apply : StateVisitor {
  std::function<void(Tensor&)> fn;
  explicit Apply(std::function<void(Tensor&)> f) : fn(std::move(f)) {}
  void parameter(const std::string&, Tensor& v, Tensor& g) override {
    fn(v);
    fn(g);
  }
  void buffer(const std::string&, Tensor& v) override { fn(v); }
};
}  // namespace

Criterion& Criterion::to(Device device) {
  if (!computesOn(device)) return *this;
  Apply mover([&](Tensor& t) {
    if (t.defined()) t = t.to(device);
  });
  visitState(mover);
  gradInput = Tensor();
  device_ = device;
  return *this;
}

Criterion& Criterion::to(DType dtype) {
  Apply caster([&](Tensor& t) {
    if (t.defined() && tensor::is_floating(t.dtype())) t = t.to(dtype);
  });
  visitState(caster);
  gradInput = Tensor();
  return *this;
}

std::map<std::string, Tensor> Criterion::stateDict() {
  std::map<std::string, Tensor> out;
  struct Collect : StateVisitor {
    std::map<std::string, Tensor>& out;
    explicit Collect(std::map<std::string, Tensor>& o) : out(o) {}
    void parameter(const std::string& n, Tensor& v, Tensor&) override { out[n] = v; }
    void buffer(const std::string& n, Tensor& v) override {
      if (v.defined()) out[n] = v;
    }
  } collect(out);
  visitState(collect);
  return out;
}

}  // namespace nn

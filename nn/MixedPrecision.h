// MixedPrecision.h: float32 master weights for a network that computes in float16 or bfloat16.
// Note [Master weights]: the optimizer updates float32 copies of the 16-bit parameters (an
// update of lr * g, far below a float16 weight's spacing, is not lost), and the 16-bit weights
// are refreshed from them after each step. A step:
//   net.forward(x16); gy = criterion.backward(...);          // net in float16 (net.to(Float16))
//   net.backward(x16, scaler.scaleGrad(gy));
//   master.gradsToMaster();                                   // 16-bit grads -> float32, exactly
//   scaler.unscale(master.grads()); clipGradNorm(master.grads(), ...);   // optional clipping
//   if (scaler.step(optimizer)) master.paramsToModel();      // optimizer over master.params()
//   scaler.update(); net.zeroGradParameters();
// Both copies are tensor copies on the parameters' device (no host synchronisation), so on the
// GPU the step above can be captured in a CUDA graph (Note [Capturable loss scaling] in
// nn/GradScaler.h); on that path step() returns true and paramsToModel() runs after a skipped
// step too, rewriting the 16-bit weights from unchanged masters: the same values.
// Parameters already in the master dtype (cudnn batch norm keeps float32 weight, bias and
// statistics under to(Float16)) are used as they are, not copied. Optimizer state (moments)
// is then float32 too. `master` may be float64 (a float32 network with float64 masters: what
// the CPU tests use, nn modules computing float32 and float64 only).
#pragma once

#include <string>
#include <vector>

#include "nn/Optimizer.h"

namespace nn {

class MasterWeights {
 public:
  explicit MasterWeights(Module& net, DType master = DType::Float32);

  // What the optimizer takes (Optimizer(master.params(), master.grads()) or groups()).
  const std::vector<Tensor>& params() const { return params_; }
  const std::vector<Tensor>& grads() const { return grads_; }
  // decayGroups over the master tensors, by the network's parameter names.
  std::vector<ParamGroup> groups(const std::function<bool(const std::string&, const Tensor&)>& noDecay = {}) const;

  void gradsToMaster();  // master grads = the network's gradients, converted
  void paramsToModel();  // the network's parameters = the master values, rounded

 private:
  std::vector<std::string> names_;
  std::vector<Tensor> modelParams_, modelGrads_;
  std::vector<Tensor> params_, grads_;
  std::vector<bool> copied_;  // false: shared with the network (already the master dtype)
};

}  // namespace nn

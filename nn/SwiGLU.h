// SwiGLU.h: the gated MLP of Llama-style decoders (Shazeer 2020, "GLU Variants Improve
// Transformer"; HF's LlamaMLP): out = down_proj(silu(gate_proj(x)) * up_proj(x)), with
//   gate_proj.weight, up_proj.weight [hidden x dim], down_proj.weight [dim x hidden]
//   (and gate_proj.bias, up_proj.bias [hidden], down_proj.bias [dim] with bias = true),
// HF's state_dict names, so a LlamaMLP's weights load as saved. Input [* x dim] (any leading
// dims, as Linear's: Note [Linear over leading dims] in nn/Linear.cpp), output [* x dim].
// Initialised as three nn.Linear: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weights and biases.
// The compute goes through protected primitives (the three projections and the gate), which
// the cuDNN twin overrides with cuBLAS and a fused CUDA kernel; everything between them is
// buffer plumbing. Without gradInput (setGradInputNeeded(false)) backward skips the input's two
// gradient GEMMs; the parameters' gradients still come out of the gate's backward.
// Prints as "nn.SwiGLU(64 -> 172 -> 64)". Twin: cudnn.SwiGLU.
#pragma once

#include "nn/Module.h"

namespace nn {

class SwiGLU : public Module {
 public:
  SwiGLU(int64_t dim, int64_t hidden, bool bias = false);

  const Tensor& updateOutput(const Tensor& input) override;
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  // Needs updateGradInput's pass first (backward() runs both): the projections' gradients
  // come out of the gate's backward.
  void accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale = 1.0) override;
  // The block + addend, added after the down projection (Note [Sums in the product's epilogue] in
  // nn/Module.cpp); addend of the input's shape.
  bool addsInForward() const override { return true; }
  const Tensor& updateOutputAdding(const Tensor& input, const Tensor& addend) override;
  void reset();  // nn.Linear's initialisation of each projection
  // The projections, the gate's output and backward's intermediates (Module::releaseActivations).
  void releaseActivations() override;
  static constexpr std::string_view kTypeName = "nn.SwiGLU";
  std::string type_name() const override { return std::string(kTypeName); }
  tensor::Json config() const override;
  static ModulePtr fromConfig(const tensor::Json& config);
  std::string str() const override;

  int64_t dim, hidden;
  Tensor gateWeight, upWeight, downWeight, gateBias, upBias, downBias;
  Tensor gradGateWeight, gradUpWeight, gradDownWeight, gradGateBias, gradUpBias, gradDownBias;

 protected:
  void visitState(StateVisitor& v) override;
  bool parametersNeedGradInput() const override { return true; }
  // backward() under setFreeIntermediateGradients lets go of backward's intermediates after
  // accGradParameters has read them.
  void backwardImpl(const Tensor& input, const Tensor& gradOutput, double scale) override;

  // ---- the primitives a twin overrides; arguments are checked, 2-d and contiguous ----
  // out = x weight^T + bias (bias may be undefined): x [n x in], weight [out x in], out [n x out],
  // allocated by the hook (nn::ensure).
  virtual void linear(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& out);
  // out = x weight^T + bias + addend (addend [n x out], not overlapping out): linear, then the sum
  // here; the twin adds it in the product's epilogue where it can.
  virtual void linearAdding(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& addend,
                            Tensor& out);
  // gradX = gy weight, or gradX += gy weight with `accumulate` (gradX then is [n x in] already).
  virtual void linearGradInput(const Tensor& gy, const Tensor& weight, Tensor& gradX, bool accumulate);
  // gradWeight += scale gy^T x, gradBias += scale sum_rows gy (gradBias may be undefined)
  virtual void linearGradParameters(const Tensor& x, const Tensor& gy, Tensor& gradWeight, Tensor& gradBias,
                                    double scale);
  // h = silu(gate) * up (nn/kernels/SwiGLU.h), all [n x hidden]; h allocated by the hook.
  virtual void gate(const Tensor& gate, const Tensor& up, Tensor& h);
  // The forward's first half, x [n x dim] into gate_, up_ and h_: the two projections, then the
  // gate, through the hooks above; the twin runs a few 16-bit rows as one launch.
  virtual void projectAndGate(const Tensor& x);
  // The gate's gradients from gradH, [n x hidden] each, allocated by the hook.
  virtual void gateBackward(const Tensor& gate, const Tensor& up, const Tensor& gradH, Tensor& gradGate,
                            Tensor& gradUp);
  // The input's dtype and device: float32 or float64 of the weights' dtype and device here; the
  // twin takes CUDA tensors of its four dtypes instead.
  virtual void checkInputType(const std::string& where, const Tensor& input) const;

  // The parameters of the configured shapes, dense (and with `gradients` their gradients),
  // biases all present or all absent (Note [Parameters are checked where they are used]).
  void checkParameters(const char* method, bool gradients) const;
  // The rows of an input [* x dim] (numel / dim), after every check of the input.
  int64_t checkInput(const Tensor& input, const char* method) const;

  // updateOutput's computation, + addend (checked) where defined.
  const Tensor& forwardInto(const Tensor& input, const Tensor& addend, const char* method);
  // What forward keeps for backward: the projections [rows x hidden] and the gate's output.
  Tensor gate_, up_, h_;
  // backward's intermediates, for accGradParameters
  Tensor gradH_, gradGate_, gradUp_;
  bool gradsValid_ = false;
};

}  // namespace nn

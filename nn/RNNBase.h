// RNNBase.h: what RNNReLU, RNNTanh, LSTM and GRU (and BLSTM, BGRU) share: sizes, modes,
// initial/final states and their gradients, variable sequence lengths, dropout between
// layers, and the parameters, named and ordered as PyTorch's nn.RNN/LSTM/GRU state_dict
// (which is also cuDNN's gate order). Input [seqLength x batch x inputDim] ([batch x
// seqLength x inputDim] with batchFirst), output likewise with outputDim x numDirections.
// The cell math is in nn/kernels/RNN.*; the twins are cudnn::RNNReLU, ..., on cudnn/ops/rnn.*.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "nn/Module.h"

namespace nn {

// Cell types. Gate counts: ReLU/Tanh 1, LSTM 4 (i, f, g, o), GRU 3 (r, z, n).
enum class RNNMode { ReLU, Tanh, LSTM, GRU };
const char* rnn_mode_name(RNNMode mode);  // "relu", "tanh", "lstm", "gru"
int64_t rnn_gate_count(RNNMode mode);

// The configuration by name, as PyTorch's torch::nn::LSTMOptions (every recurrent module takes
// it): nn::LSTM(nn::RNNOptions{.inputSize = 6, .hiddenSize = 5, .numLayers = 2, .bias = false}).
// A port from PyTorch should use it: the positional constructors follow cudnn.torch, whose
// 4th argument is batchFirst where PyTorch's is bias. BLSTM and BGRU are bidirectional
// whatever .bidirectional says.
struct RNNOptions {
  int64_t inputSize = 0, hiddenSize = 0, numLayers = 1;
  bool bias = true;  // false: no bias_ih / bias_hh parameters (PyTorch's bias=False)
  bool batchFirst = false;
  double dropout = 0;  // between layers, training only; in [0, 1)
  bool bidirectional = false;
};

// Note [RNN size limits]
// A recurrent module's sizes come from user code or from a model file (untrusted: 100 bytes
// of JSON can ask for a hidden size of 2^62 or 2^40 layers). The constructor computes the
// parameter element count in checked arithmetic and refuses more than kMaxRNNParameters
// (2^32 elements, 16 GiB in float32, far beyond any real recurrent network) before it
// allocates anything, and numLayers beyond kMaxRNNLayers (cuDNN itself takes int32 sizes).
inline constexpr int64_t kMaxRNNParameters = int64_t{1} << 32;
inline constexpr int64_t kMaxRNNLayers = 4096;

// Note [RNN parameters]
// Per layer k and direction d (suffix "" or "_reverse"), in this order: weight_ih_l{k}
// [gates*outputDim x layerInput], weight_hh_l{k} [gates*outputDim x outputDim],
// bias_ih_l{k} [gates*outputDim], bias_hh_l{k} [gates*outputDim] (the biases only with
// bias(), as PyTorch's bias=False drops them); layerInput is inputDim
// for layer 0 and outputDim*numDirections above it. Within a weight the gate blocks follow
// PyTorch's order (rows [g*outputDim, (g+1)*outputDim) belong to gate g). The cudnn twin
// replaces each value/grad by a view into cuDNN's flat weight buffer: code that needs a
// parameter goes through `params` (never a cached copy), so optimizers, model files and
// loadStateDict see one set of tensors on both backends.
struct RNNParameter {
  std::string name;  // "weight_ih_l0", "bias_hh_l1_reverse", ...
  Tensor value, grad;
};

class RNNBase : public Module {
 public:
  // typeName: the module's kTypeName, for the constructor's errors (type_name() is not yet
  // callable there): "nn.BLSTM", not the mode's "nn.LSTM".
  RNNBase(RNNMode mode, const RNNOptions& options, std::string_view typeName);
  // BLSTM and BGRU say true: their type fixes the direction (config() has no "bidirectional").
  static constexpr bool kAlwaysBidirectional = false;

  const Tensor& updateOutput(const Tensor& input) override;
  // Also sets gradHiddenInput (and gradCellInput), from gradOutput and, where defined,
  // gradHiddenOutput / gradCellOutput. Backward needs the last forward to have been in training
  // mode on this input's shape, dtype and sequenceLengths (an evaluate-mode forward keeps
  // nothing, as cuDNN's inference mode); otherwise it throws saying so. accGradParameters
  // consumes what updateGradInput computed (gradGates_), so it follows it, as in backward().
  const Tensor& updateGradInput(const Tensor& input, const Tensor& gradOutput) override;
  void accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale = 1.0) override;
  void reset(double stdv = -1);  // stdv < 0: Torch's U(-1/sqrt(outputDim), 1/sqrt(outputDim))

  // Carry the final states into the next forward (truncated BPTT over a long sequence): at the
  // start of each forward, hiddenInput/cellInput become copies of the last hiddenOutput/cellOutput.
  // resetStates() clears what was carried (hiddenOutput/cellOutput, and hiddenInput/cellInput).
  void rememberStates(bool remember) { rememberStates_ = remember; }
  bool remembersStates() const { return rememberStates_; }
  void resetStates();

  tensor::Json config() const override;
  std::string str() const override;  // "nn.LSTM(10 -> 20, 2 layers, batchFirst, dropout 0.5)"

  // to() also forgets the last forward (its saved state is of the old dtype or device): a
  // backward must follow a new forward, and says so.
  using Module::to;
  Module& to(Device device) override;
  Module& to(DType dtype) override;

  int64_t numDirections() const { return bidirectional_ ? 2 : 1; }
  int64_t gateCount() const { return rnn_gate_count(mode_); }
  // Parameters per layer and direction: 4 (weight_ih, weight_hh, bias_ih, bias_hh), 2 without bias.
  int64_t paramsPerLayer() const { return bias_ ? 4 : 2; }
  // index into params of (layer, direction, which): which 0 weight_ih, 1 weight_hh, 2 bias_ih, 3 bias_hh
  size_t paramIndex(int64_t layer, int64_t direction, int which) const {
    return static_cast<size_t>(((layer * numDirections() + direction) * paramsPerLayer()) + which);
  }
  // The shape params[i] must have (Note [RNN parameters]).
  Shape paramShape(size_t i) const;

  // ---- configuration: fixed at construction (the parameters and saved state depend on it) ----
  RNNMode mode() const { return mode_; }
  int64_t inputDim() const { return inputDim_; }
  int64_t outputDim() const { return outputDim_; }  // hidden size
  int64_t numLayers() const { return numLayers_; }
  bool bias() const { return bias_; }
  bool batchFirst() const { return batchFirst_; }
  // probability of zeroing a layer's output before the next layer (training only)
  double dropout() const { return dropout_; }
  bool bidirectional() const { return bidirectional_; }
  RNNOptions options() const;
  // cudnn twins: persistent kernels (CUDNN_RNN_ALGO_PERSIST_STATIC) where cuDNN supports the
  // sizes, else the standard algorithm (said once in verbose mode). No effect on the CPU.
  bool persist = false;
  void setPersist(bool on) { persist = on; }

  // ---- parameters (Note [RNN parameters]) ----
  std::vector<RNNParameter> params;

  // ---- states: [numLayers*numDirections x batch x outputDim], index layer*numDirections+dir ----
  // Inputs: undefined means zeros. Outputs after forward; gradients after backward.
  // Of the input's dtype. The nn modules take states on any device (a network whose nn module
  // is bridged from CUDA tensors, Note [Device bridging]) and give theirs on the CPU.
  Tensor hiddenInput, cellInput;            // cellInput: LSTM only
  Tensor hiddenOutput, cellOutput;          // final states (at each sequence's own last step)
  Tensor gradHiddenInput, gradCellInput;    // set by backward
  Tensor gradHiddenOutput, gradCellOutput;  // set by the user before backward; undefined = zeros

  // Per-sequence lengths (batch entries, each in [1, seqLength]); empty = all full length.
  // Outputs past a sequence's end are zero; its final state is the one at its last step.
  // The order is free (no sorting needed), on both backends.
  std::vector<int64_t> sequenceLengths;

 protected:
  void visitState(StateVisitor& v) override;
  // the weight gradients come out of the gate gradients of updateGradInput's pass
  bool parametersNeedGradInput() const override { return true; }
  // Shape checks shared with the twins: input rank/size, batchFirst, lengths, state shapes;
  // throws naming the module and the shapes. Returns {seqLength, batch}.
  std::pair<int64_t, int64_t> checkInput(const Tensor& input, const char* method) const;
  // params: the count and every value's shape (and with `gradients`, every gradient's), as the
  // configuration says (Note [Parameters are checked where they are used] in nn/Buffers.h).
  void checkParameters(const char* method, bool gradients) const;
  void checkGradOutput(const Tensor& input, const Tensor& gradOutput, const char* method) const;
  Shape stateShape(int64_t batch) const { return {numLayers_ * numDirections(), batch, outputDim_}; }
  // cudnn.torch's positional arguments (inputDim, outputDim, numLayers, batchFirst, dropout)
  // as options; rememberStates, its 6th, is set by the subclasses' constructors.
  static RNNOptions positional(int64_t inputDim, int64_t outputDim, int64_t numLayers, bool batchFirst, double dropout,
                               bool bidirectional = false);
  // BLSTM and BGRU: the options, bidirectional.
  static RNNOptions alwaysBidirectional(RNNOptions options) {
    options.bidirectional = true;
    return options;
  }
  // Common config keys for the subclasses' fromConfig.
  struct FileOptions {
    RNNOptions rnn;
    bool persist = false, rememberStates = false;
  };
  // Checks the sizes (Note [RNN size limits]) before the reader's finish(), so that a model file
  // asking for too much is refused while it is validated, before anything is built.
  static FileOptions readOptions(const tensor::Json& config, const std::string& type, RNNMode mode,
                                 bool readBidirectional = true);
  // The parameter element count of `o`, in checked arithmetic; throws naming `type` when a size
  // is out of range or the count is beyond kMaxRNNParameters (Note [RNN size limits]).
  static int64_t parameterCount(const std::string& type, RNNMode mode, const RNNOptions& o);
  // What fromConfig sets after construction: persist and rememberStates.
  void applyOptions(const FileOptions& options);
  // Every type's fromConfig: reads the options (bidirectional only where the type takes it;
  // BLSTM and BGRU imply it), constructs M, applies the rest.
  template <class M>
  static ModulePtr fromConfigAs(const tensor::Json& config) {
    const FileOptions o = readOptions(config, std::string(M::kTypeName), M::kMode, !M::kAlwaysBidirectional);
    std::shared_ptr<M> m = std::make_shared<M>(o.rnn);
    m->applyOptions(o);
    return m;
  }
  // rememberStates: the last forward's final states become hiddenInput/cellInput (copies).
  // updateOutput calls it first, before checkInput (the twins' too).
  void carryStates();
  // BLSTM/BGRU (and their twins): the type fixes the direction, so config() has no "bidirectional".
  bool impliedBidirectional() const;
  // The last forward as the backward checks it (input shape, dtype, lengths, training mode).
  struct ForwardRecord {
    Shape inputShape;
    DType dtype = DType::Float32;
    std::vector<int64_t> lengths;
    bool training = false;  // false also when there was no forward since construction / to()
    bool zeroInitialState = true;  // no hiddenInput: each sequence starts from zeros
  };
  ForwardRecord forward_;
  // grad += scale * gh^T hprev over the N = S * B rows of one layer and direction, the first
  // step of each sequence left out where it meets the zero initial state with a non-finite
  // gate gradient (Note [The zero initial state in the recurrent weight gradient]).
  template <class T>
  void add_recurrent_weight_gradient(bool reverse, int64_t S, int64_t B, int64_t G, int64_t H, T scale, const T* gh,
                                     const T* hprev, T* grad) const;
  // "expected a forward() in training mode with input [..] first": throws unless the last
  // forward was a training one on `input`'s shape, dtype and the current sequenceLengths.
  void checkTrainingForward(const Tensor& input, const char* method) const;

  bool rememberStates_ = false;

 private:
  RNNMode mode_;
  int64_t inputDim_, outputDim_, numLayers_;
  bool bias_, batchFirst_;
  double dropout_;
  bool bidirectional_;

 protected:
  // What the CPU forward keeps for backward (gate activations, per-layer inputs, dropout
  // masks); the cudnn twin keeps cuDNN's reserve space instead. Implementation-defined.
  std::vector<Tensor> saved_;
  Tensor gradGates_;             // computed in updateGradInput, consumed by accGradParameters
  bool gradGatesValid_ = false;  // updateGradInput ran since the last forward
  Tensor zeroBias_;              // without bias: the zeros the CPU kernels add in its place
  Tensor layer0Input_;           // the CPU forward's time-major layer-0 input (the input itself, or a copy)
};

// What each recurrent module adds to RNNBase: its mode (and, for BLSTM and BGRU, the fixed
// direction), cudnn.torch's positional constructor (inputDim, outputDim, numLayers,
// batchFirst, dropout, rememberStates) beside the one taking nn::RNNOptions by name (PyTorch's
// order and bias), and its type name and fromConfig from Self::kTypeName. A module is
// `class LSTM : public RNNModule<LSTM, RNNMode::LSTM>` with `using RNNModule::RNNModule;` and
// its kTypeName.
template <class Self, RNNMode Mode, bool AlwaysBidirectional = false>
class RNNModule : public RNNBase {
 public:
  static constexpr RNNMode kMode = Mode;
  static constexpr bool kAlwaysBidirectional = AlwaysBidirectional;

  RNNModule(int64_t inputDim, int64_t outputDim, int64_t numLayers = 1, bool batchFirst = false, double dropout = 0,
            bool rememberStates = false)
      : RNNModule(positional(inputDim, outputDim, numLayers, batchFirst, dropout)) {
    rememberStates_ = rememberStates;
  }
  // BLSTM and BGRU are bidirectional whatever the options say.
  explicit RNNModule(const RNNOptions& options)
      : RNNBase(Mode, AlwaysBidirectional ? alwaysBidirectional(options) : options, Self::kTypeName) {}

  std::string type_name() const override { return std::string(Self::kTypeName); }
  static ModulePtr fromConfig(const tensor::Json& config) { return fromConfigAs<Self>(config); }
};

}  // namespace nn

// rnn.h: Theano's RNNBlock on cuDNN 9's RNN API (cudnnRNNForward, cudnnRNNBackwardData_v8,
// cudnnRNNBackwardWeights_v8): a stack of `depth` recurrent layers of `hidden` units
// (mode relu/tanh/lstm/gru, linear or skip input, one or two directions) whose weights live
// in ONE flat buffer of param_size(inputDim) elements laid out by cuDNN.
//   x [T x B x I] ([B x T x I] batch-first), h0/c0 [depth*dirs x B x hidden] -> y [T x B x
//   dirs*hidden], hy/cy [depth*dirs x B x hidden]; backward gives dx, dh0, dc0 and ADDS the
//   weights' gradient into a buffer shaped like the weights (CUDNN_WGRAD_MODE_ADD).
// The twins cudnn::RNNReLU ... BGRU (cudnn/RNNBase.h) sit on it. See Note [RNN plans] in rnn.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cudnn/core/Descriptors.h"
#include "nn/RNNBase.h"

namespace cudnn {

enum class RNNInputMode { Linear, Skip };  // skip: layer 0 takes x as it is (I == hidden)
enum class RNNDirection { Unidirectional, Bidirectional };

// One linear layer of a cell: weight [hidden x layerInput] and bias [hidden], views into a
// weight (or gradient) buffer. Undefined where cuDNN keeps no such matrix (skip input).
struct RNNGate {
  Tensor weight, bias;
};

// What one forward runs on. x, h0, c0 contiguous on the weights' device and of their dtype.
struct RNNSequence {
  Tensor x;
  bool batchFirst = false;
  std::vector<int64_t> lengths;  // per batch entry, in [1, T]; empty: all T
  Tensor h0, c0;                 // undefined: zeros
  bool training = true;          // false: cuDNN's inference mode (no reserve space, no backward)
};

class RNNBlock {
 public:
  // bias false: CUDNN_RNN_NO_BIAS, the layers have no bias vectors (splitParams' are undefined).
  RNNBlock(DType dtype, int64_t hidden, int64_t depth, nn::RNNMode mode, RNNInputMode inputMode = RNNInputMode::Linear,
           RNNDirection direction = RNNDirection::Unidirectional, bool bias = true);
  ~RNNBlock();
  RNNBlock(RNNBlock&&) noexcept;
  RNNBlock& operator=(RNNBlock&&) noexcept;

  // ---- Theano's interface ----
  // Elements (of dtype) of the weight buffer for inputs of inputDim.
  int64_t param_size(int64_t inputDim);
  // The linear layers of pseudo-layer `layer` (= layer * dirs + direction), as views into
  // `params` ([param_size(inputDim)]), in the order Theano's docs list them (cuDNN's
  // linLayerID): relu/tanh: input, recurrent; lstm: input-side i, f, g (new memory), o, then
  // the recurrent i, f, g, o; gru: input-side r (reset), z (update), n (new memory), then the
  // recurrent r, z, n. Weights are [hidden x layerInput] (PyTorch's and our orientation:
  // gate = W x + b), not Theano's transposed [layerInput x hidden].
  std::vector<RNNGate> split_params(const Tensor& params, int64_t layer, int64_t inputDim);
  // y, hy (and cy for lstm) of x [T x B x I] from h0 (and c0); undefined h0/c0 are zeros.
  // A training-mode forward: grad() may follow.
  std::vector<Tensor> apply(const Tensor& params, const Tensor& x, const Tensor& h0, const Tensor& c0 = {});
  // The gradients of the last apply() for dy (and dhy, dcy; undefined: zeros):
  // {dx, dh0, dc0 (lstm; else undefined), dparams}.
  std::vector<Tensor> grad(const Tensor& params, const Tensor& dy, const Tensor& dhy = {},
                           const Tensor& dcy = {});

  // ---- what the modules use ----
  // Dropout between layers (training forwards only), seeded explicitly (Note [Dropout seeding]).
  void set_dropout(double p, uint64_t seed);
  // Persistent kernels (CUDNN_RNN_ALGO_PERSIST_STATIC) where cuDNN takes them, else the
  // standard algorithm, said once per block in verbose mode. See Note [Persistent RNN kernels].
  void set_persist(bool on);
  // "standard" or "persist_static": the algorithm the last forward ran.
  const char* algorithm() const;
  // How many shapes' descriptors the block keeps: at most conv.cache_limit, least recently used
  // out first (Note [RNN plans] in rnn.cpp).
  size_t plans() const;

  // Outputs are (re)made contiguous with nn::ensure (their storage reused).
  void forward(const Tensor& params, const RNNSequence& s, Tensor& y, Tensor& hy, Tensor& cy);
  // For the last forward (which must have been a training one): dx, dhx, dcx from dy and
  // dhy/dcy (undefined: zeros). A second call for the same forward re-runs that forward first
  // (cuDNN's backward consumes the reserve space).
  void backward_data(const Tensor& params, const Tensor& dy, const Tensor& dhy, const Tensor& dcy, Tensor& dx,
                    Tensor& dhx, Tensor& dcx);
  // dparams += the weights' gradient of the last forward; backward_data must have run for it.
  void backward_weights(const Tensor& dparams);
  bool backward_data_done() const;

  DType dtype() const { return dtype_; }
  int64_t hidden() const { return hidden_; }
  int64_t depth() const { return depth_; }
  int64_t directions() const { return direction_ == RNNDirection::Bidirectional ? 2 : 1; }
  nn::RNNMode mode() const { return mode_; }
  RNNInputMode input_mode() const { return inputMode_; }
  bool bias() const { return bias_; }

  struct Impl;  // descriptors, cache and the last forward (rnn.cpp)

 private:
  DType dtype_;
  int64_t hidden_, depth_;
  nn::RNNMode mode_;
  RNNInputMode inputMode_;
  RNNDirection direction_;
  bool bias_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cudnn

// RNN.h: the CPU cell math of nn::RNNBase (RNNReLU, RNNTanh, LSTM, GRU): one direction of one
// layer over a whole time-major sequence, forward and backward, float and double. The input
// projection of all steps is one GEMM; each step adds one recurrent GEMM and an element-wise
// cell. Variable lengths: a batch entry b takes part in step t only when t < lengths[b], so
// the forward direction stops at its own last step and the reverse one starts there.
// The module (nn/RNNBase.cpp) stacks layers and directions, applies dropout and batchFirst.
#pragma once

#include <cstdint>

namespace nn::kernels {

enum class RNNCell : uint8_t { ReLU, Tanh, LSTM, GRU };

inline int64_t rnn_cell_gates(RNNCell cell) {
  return cell == RNNCell::LSTM ? 4 : cell == RNNCell::GRU ? 3 : 1;
}

// One direction of one layer. Arrays are row-major; a "[T*B x n]" array has row t*batch + b.
struct RNNLayerGeometry {
  RNNCell cell = RNNCell::Tanh;
  int64_t seqLength = 0, batch = 0, inputSize = 0, hidden = 0;
  bool reverse = false;              // walks t = seqLength-1 .. 0
  const int64_t* lengths = nullptr;  // [batch], each in [1, seqLength]; nullptr: all seqLength
  int64_t gateSize() const { return rnn_cell_gates(cell) * hidden; }
};

// What the forward keeps for the backward of one layer and direction (all written by the forward).
template <class T>
struct RNNLayerSaved {
  T* gates = nullptr;  // [T*B x gates*H]: the activated gates (ReLU/Tanh: h itself); rows of
                       // steps an entry skips are zero
  T* hprev = nullptr;  // [T*B x H]: the hidden state each step started from
  T* cprev = nullptr;  // [T*B x H]: LSTM only, the cell state each step started from
  T* extra = nullptr;  // [T*B x H]: LSTM the new cell state c_t; GRU W_hn h + b_hn; unused otherwise
};

// y[t*B + b, 0:H] (row stride ldy) = h_t, zero where t >= lengths[b]; hn/cn [B x H] the final
// states (cn LSTM only); h0/c0 [B x H] or nullptr for zeros. work: [B x gates*H] scratch.
// The layer input x is [T*B x inputSize]. Weights as PyTorch: w_ih [gates*H x inputSize],
// w_hh [gates*H x H], b_ih and b_hh [gates*H].
template <class T>
void rnn_layer_forward(const RNNLayerGeometry& g, const T* x, const T* w_ih, const T* w_hh, const T* b_ih,
                       const T* b_hh, const T* h0, const T* c0, T* y, int64_t ldy, T* hn, T* cn,
                       const RNNLayerSaved<T>& saved, T* work);

// From dy (the gradient to y, row stride ldy; rows past a sequence's end are ignored) and
// dhn/dcn (gradients to the final states, nullptr for zeros): the gate gradients
// dgates_ih [T*B x gates*H] (w.r.t. the input projection, bias_ih included) and dgates_hh
// (w.r.t. the recurrent projection; the same array as dgates_ih except for GRU, whose new
// gate sees r * (W_hn h + b_hn)), and the gradients to the initial states dh0/dc0 [B x H]
// (dc0 LSTM only). Rows of skipped steps get zero gate gradients. work: [2 x B x H] scratch.
template <class T>
void rnn_layer_backward(const RNNLayerGeometry& g, const T* w_hh, const RNNLayerSaved<T>& saved, const T* dy,
                        int64_t ldy, const T* dhn, const T* dcn, T* dgates_ih, T* dgates_hh, T* dh0, T* dc0,
                        T* work);

}  // namespace nn::kernels

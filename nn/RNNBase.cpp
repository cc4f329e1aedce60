// RNNBase.cpp: configuration, parameters, states and checks of the recurrent modules, and the
// CPU forward/backward: layers and directions stacked over nn/kernels/RNN.* in a time-major
// layout (batchFirst input and output are transposed copies), dropout between layers.
#include "nn/RNNBase.h"

#include <cmath>
#include <cstdio>
#include <cstring>

#include "nn/Buffers.h"
#include "nn/ModuleConfig.h"
#include "nn/kernels/RNN.h"
#include "tensor/Blas.h"

namespace nn {

namespace {

using kernels::RNNCell;
using tensor::blas::gemm;

RNNCell cell_of(RNNMode mode) {
  switch (mode) {
    case RNNMode::ReLU: return RNNCell::ReLU;
    case RNNMode::Tanh: return RNNCell::Tanh;
    case RNNMode::LSTM: return RNNCell::LSTM;
    case RNNMode::GRU: return RNNCell::GRU;
  }
  return RNNCell::Tanh;
}

std::string lengths_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// A state tensor (hiddenInput, gradHiddenOutput, ...) as a contiguous CPU tensor, or undefined.
Tensor cpu_state(const Tensor& t) { return t.defined() ? t.to(Device::cpu()).contiguous() : Tensor(); }

// Note [RNN saved layout]
// saved_ holds, for the CPU forward and backward (time-major, row t*batch + b):
//   [0, L)                    layer l's input [T*B x in_l] for l >= 1 (after dropout); slot 0 a
//                             copy of the input when it cannot be used in place (layer0Input_)
//   [L, 2L)                   the dropout mask applied to layer l's output (l < L-1, training, p > 0)
//   2L                        the top layer's time-major output (batchFirst) / gradOutput copy
//   2L+1 + 4*(l*D+d) + k      per layer and direction: k 0 gates, 1 hprev, 2 extra, 3 cprev
//                             (kernels::RNNLayerSaved)
//   then 4 scratch slots: the kernels' work array, two gradient buffers between layers, and
//   the time-major gradient to a batchFirst input.
struct Slots {
  int64_t L, D;
  size_t input(int64_t l) const { return static_cast<size_t>(l); }
  size_t mask(int64_t l) const { return static_cast<size_t>(L + l); }
  size_t top() const { return static_cast<size_t>(2 * L); }
  size_t dir(int64_t l, int64_t d, int k) const {
    return static_cast<size_t>(2 * L + 1 + 4 * (l * D + d) + k);
  }
  size_t work(int k) const { return static_cast<size_t>(2 * L + 1 + 4 * L * D + k); }
  size_t count() const { return work(4); }
};

// Parameters replaced by hand (m.params[i].value = ...)? the kernels read raw rows.
void check_raw_params(const RNNBase& m, const Tensor& input) {
  for (const auto& p : m.params) {
    if (p.value.dtype() != input.dtype() || !p.value.is_cpu()) {
      throw Error(m.where("updateOutput") + "expected " + tensor::name(input.dtype()) + " parameters on cpu, got " +
                  p.name + " " + p.value.description());
    }
  }
}

// Layer 0's time-major input [S x B x inputDim]: the input itself when possible, else a copy in
// `buffer` with padding zeroed (the weight gradient multiplies it by zero gate gradients, which
// must not make NaN of it).
Tensor time_major_input(const Tensor& input, Tensor& buffer, bool batchFirst, const int64_t* lengths, int64_t S,
                        int64_t B, int64_t inputDim) {
  if (!batchFirst && !lengths && input.is_contiguous()) return input;
  Tensor& x0 = ensure(buffer, {S, B, inputDim}, input);
  x0.copy_(batchFirst ? input.transpose(0, 1) : input);
  if (lengths) {
    for (int64_t b = 0; b < B; ++b) {
      if (lengths[b] < S) x0.narrow(0, lengths[b], S - lengths[b]).select(1, b).zero_();
    }
  }
  return x0;
}

// An initial state as the kernels read it: a state set to the last final state without a copy
// (m.hiddenInput = m.hiddenOutput) is copied before the final states are rewritten in place.
Tensor initial_state(const Tensor& s, const Tensor& out) {
  const Tensor t = cpu_state(s);
  return t.defined() && out.defined() && t.shares_storage(out) ? t.clone() : t;
}

}  // namespace

const char* rnn_mode_name(RNNMode mode) {
  switch (mode) {
    case RNNMode::ReLU: return "relu";
    case RNNMode::Tanh: return "tanh";
    case RNNMode::LSTM: return "lstm";
    case RNNMode::GRU: return "gru";
  }
  return "?";
}

int64_t rnn_gate_count(RNNMode mode) { return kernels::rnn_cell_gates(cell_of(mode)); }

RNNBase::RNNBase(RNNMode mode, const RNNOptions& o, std::string_view typeName)
    : mode_(mode),
      inputDim_(o.inputSize),
      outputDim_(o.hiddenSize),
      numLayers_(o.numLayers),
      bias_(o.bias),
      batchFirst_(o.batchFirst),
      dropout_(o.dropout),
      bidirectional_(o.bidirectional) {
  parameterCount(std::string(typeName), mode_, o);  // every size checked before anything is allocated
  const int64_t G = gateCount() * outputDim_, C = outputDim_ * numDirections();
  for (int64_t l = 0; l < numLayers_; ++l) {
    const int64_t in = l == 0 ? inputDim_ : C;
    for (int64_t d = 0; d < numDirections(); ++d) {
      const std::string suffix = "_l" + std::to_string(l) + (d == 1 ? "_reverse" : "");
      params.push_back({"weight_ih" + suffix, tensor::empty({G, in}), tensor::zeros({G, in})});
      params.push_back({"weight_hh" + suffix, tensor::empty({G, outputDim_}), tensor::zeros({G, outputDim_})});
      if (!bias_) continue;
      params.push_back({"bias_ih" + suffix, tensor::empty({G}), tensor::zeros({G})});
      params.push_back({"bias_hh" + suffix, tensor::empty({G}), tensor::zeros({G})});
    }
  }
  reset();
}

int64_t RNNBase::parameterCount(const std::string& type, RNNMode mode, const RNNOptions& o) {
  if (o.inputSize <= 0 || o.hiddenSize <= 0) {
    throw Error(type + ": expected positive inputDim and outputDim, got " + std::to_string(o.inputSize) + " -> " +
                std::to_string(o.hiddenSize));
  }
  if (o.numLayers < 1 || o.numLayers > kMaxRNNLayers) {
    throw Error(type + ": expected numLayers in [1, " + std::to_string(kMaxRNNLayers) + "], got " +
                std::to_string(o.numLayers));
  }
  if (!(o.dropout >= 0 && o.dropout < 1)) {
    throw Error(type + ": expected dropout in [0, 1), got " + std::to_string(o.dropout));
  }
  const std::string op = type + " (inputDim " + std::to_string(o.inputSize) + ", outputDim " +
                         std::to_string(o.hiddenSize) + ", " + std::to_string(o.numLayers) + " layers)";
  auto mul = [&](int64_t a, int64_t b) { return tensor::shape_numel({a, b}, op.c_str()); };
  auto add = [&](int64_t a, int64_t b) {
    int64_t r = 0;
    if (__builtin_add_overflow(a, b, &r)) throw Error(op + ": the parameter count overflows int64");
    return r;
  };
  const int64_t D = o.bidirectional ? 2 : 1, H = o.hiddenSize, biases = o.bias ? 2 : 0;
  const int64_t G = mul(rnn_gate_count(mode), H), C = mul(H, D);
  // per direction: layer 0 [G x (inputDim + H + biases)], each layer above [G x (C + H + biases)]
  const int64_t first = mul(G, add(add(o.inputSize, H), biases));
  const int64_t above = mul(mul(G, add(add(C, H), biases)), o.numLayers - 1);
  const int64_t total = mul(add(first, above), D);
  if (total > kMaxRNNParameters) {
    throw Error(type + ": expected at most " + std::to_string(kMaxRNNParameters) +
                " parameter elements (nn::kMaxRNNParameters), got " + std::to_string(total) + " for " + op);
  }
  return total;
}

RNNOptions RNNBase::positional(int64_t inputDim, int64_t outputDim, int64_t numLayers, bool batchFirst, double dropout,
                               bool bidirectional) {
  RNNOptions o;
  o.inputSize = inputDim;
  o.hiddenSize = outputDim;
  o.numLayers = numLayers;
  o.batchFirst = batchFirst;
  o.dropout = dropout;
  o.bidirectional = bidirectional;
  return o;
}

RNNOptions RNNBase::options() const {
  RNNOptions o = positional(inputDim_, outputDim_, numLayers_, batchFirst_, dropout_, bidirectional_);
  o.bias = bias_;
  return o;
}

Shape RNNBase::paramShape(size_t i) const {
  const int64_t per = paramsPerLayer(), G = gateCount() * outputDim_;
  const int64_t layer = static_cast<int64_t>(i) / (per * numDirections());
  switch (static_cast<int64_t>(i) % per) {
    case 0: return {G, layer == 0 ? inputDim_ : outputDim_ * numDirections()};
    case 1: return {G, outputDim_};
    default: return {G};
  }
}

Module& RNNBase::to(Device device) {
  Module::to(device);
  forward_ = ForwardRecord{};
  gradGatesValid_ = false;
  return *this;
}

Module& RNNBase::to(DType dtype) {
  Module::to(dtype);
  forward_ = ForwardRecord{};
  gradGatesValid_ = false;
  return *this;
}

void RNNBase::reset(double stdv) {
  if (stdv < 0) stdv = 1.0 / std::sqrt(static_cast<double>(outputDim_));
  for (auto& p : params) p.value.uniform_(-stdv, stdv);
}

void RNNBase::visitState(StateVisitor& v) {
  for (auto& p : params) v.parameter(p.name, p.value, p.grad);
}

void RNNBase::resetStates() { hiddenInput = cellInput = hiddenOutput = cellOutput = Tensor(); }

void RNNBase::carryStates() {
  if (!rememberStates_) return;
  if (hiddenOutput.defined()) hiddenInput = hiddenOutput.clone();
  if (cellOutput.defined()) cellInput = cellOutput.clone();
}

bool RNNBase::impliedBidirectional() const {
  const std::string name = type_name();
  const size_t dot = name.find('.');
  return dot != std::string::npos && dot + 1 < name.size() && name[dot + 1] == 'B';
}

// ---- checks ----

std::pair<int64_t, int64_t> RNNBase::checkInput(const Tensor& input, const char* method) const {
  if (!input.defined()) throw Error(where(method) + "input is undefined");
  const std::string layout = batchFirst_ ? "[batch x seqLength x " : "[seqLength x batch x ";
  if (input.dim() != 3 || input.size(2) != inputDim_) {
    throw Error(where(method) + "expected input of " + layout + std::to_string(inputDim_) + "]" +
                (batchFirst_ ? " (batchFirst)" : "") + ", got " + tensor::shape_str(input.sizes()));
  }
  const int64_t seqLength = input.size(batchFirst_ ? 1 : 0), batch = input.size(batchFirst_ ? 0 : 1);
  if (seqLength < 1) {
    throw Error(where(method) + "expected seqLength >= 1, got input " + tensor::shape_str(input.sizes()));
  }
  if (!sequenceLengths.empty()) {
    bool ok = static_cast<int64_t>(sequenceLengths.size()) == batch;
    for (int64_t n : sequenceLengths) ok = ok && n >= 1 && n <= seqLength;
    if (!ok) {
      throw Error(where(method) + "expected sequenceLengths of " + std::to_string(batch) +
                  " entries (one per batch entry) in [1, " + std::to_string(seqLength) + "], got " +
                  lengths_str(sequenceLengths));
    }
  }
  const Shape states = stateShape(batch);
  auto check_state = [&](const Tensor& s, const char* name) {
    if (!s.defined()) return;
    if (s.sizes() != states) {
      throw Error(where(method) + "expected " + name + " of " + tensor::shape_str(states) +
                  " (numLayers*numDirections x batch x outputDim), got " + tensor::shape_str(s.sizes()) +
                  (rememberStates_ ? " (rememberStates carries the last final states: resetStates() when the "
                                     "batch changes)"
                                   : ""));
    }
    if (s.dtype() != input.dtype()) {
      throw Error(where(method) + "expected " + name + " of the input's dtype (" +
                  tensor::name(input.dtype()) + "), got " + s.description());
    }
  };
  check_state(hiddenInput, "hiddenInput");
  if (mode_ == RNNMode::LSTM) {
    check_state(cellInput, "cellInput");
  } else if (cellInput.defined()) {
    throw Error(where(method) + "expected no cellInput (LSTM only), got " + cellInput.description());
  }
  return {seqLength, batch};
}

void RNNBase::checkGradOutput(const Tensor& input, const Tensor& gradOutput, const char* method) const {
  const auto [seqLength, batch] = checkInput(input, method);
  const int64_t C = outputDim_ * numDirections();
  const Shape expected = batchFirst_ ? Shape{batch, seqLength, C} : Shape{seqLength, batch, C};
  if (!gradOutput.defined() || gradOutput.sizes() != expected) {
    throw Error(where(method) + "expected gradOutput of " + tensor::shape_str(expected) +
                " (the output's shape), got " +
                (gradOutput.defined() ? tensor::shape_str(gradOutput.sizes()) : std::string("undefined")));
  }
  if (gradOutput.dtype() != input.dtype()) {
    throw Error(where(method) + "expected gradOutput of the input's dtype (" + tensor::name(input.dtype()) +
                "), got " + gradOutput.description());
  }
  const Shape states = stateShape(batch);
  auto check_state = [&](const Tensor& s, const char* name) {
    if (!s.defined()) return;
    if (s.sizes() != states || s.dtype() != input.dtype()) {
      throw Error(where(method) + "expected " + name + " of " + tensor::shape_str(states) + " " +
                  tensor::name(input.dtype()) + " (the final state's shape), got " + s.description());
    }
  };
  check_state(gradHiddenOutput, "gradHiddenOutput");
  if (mode_ == RNNMode::LSTM) {
    check_state(gradCellOutput, "gradCellOutput");
  } else if (gradCellOutput.defined()) {
    throw Error(where(method) + "expected no gradCellOutput (LSTM only), got " +
                gradCellOutput.description());
  }
}

void RNNBase::checkParameters(const char* method, bool gradients) const {
  const size_t expected = static_cast<size_t>(numLayers_ * numDirections() * paramsPerLayer());
  if (params.size() != expected) {
    throw Error(where(method) + "expected " + std::to_string(expected) + " parameters (" + std::to_string(numLayers_) +
                " layers x " + std::to_string(numDirections()) + " directions x " + std::to_string(paramsPerLayer()) +
                "), got " + std::to_string(params.size()) + " (was params changed by hand?)");
  }
  for (size_t i = 0; i < params.size(); ++i) {
    const RNNParameter& p = params[i];
    check_parameter(*this, method, p.name.c_str(), p.value, paramShape(i), gradients ? &p.grad : nullptr);
  }
}

void RNNBase::checkTrainingForward(const Tensor& input, const char* method) const {
  if (!forward_.training || forward_.inputShape != input.sizes() || forward_.dtype != input.dtype() ||
      forward_.lengths != sequenceLengths) {
    std::string last = "none";
    if (!forward_.inputShape.empty()) {
      last = std::string(forward_.training ? "training" : "evaluate") + " mode, " +
             tensor::name(forward_.dtype) + " " + tensor::shape_str(forward_.inputShape) +
             (forward_.lengths.empty() ? "" : ", sequenceLengths " + lengths_str(forward_.lengths));
    }
    throw Error(where(method) + "expected a forward() in training mode on this input first (" +
                tensor::name(input.dtype()) + " " + tensor::shape_str(input.sizes()) +
                (sequenceLengths.empty() ? "" : ", sequenceLengths " + lengths_str(sequenceLengths)) +
                "), got last forward: " + last);
  }
}

// ---- forward ----

const Tensor& RNNBase::updateOutput(const Tensor& input) {
  carryStates();
  // plain variables, not a structured binding: clang 14 cannot capture those in a lambda
  const auto [seqLength, batchSize] = checkInput(input, "updateOutput");
  const int64_t S = seqLength, B = batchSize;
  check_float(where("updateOutput"), input);
  checkParameters("updateOutput", false);
  check_matches(where("updateOutput"), input, params[0].value, "input", "weight_ih_l0");
  check_raw_params(*this, input);
  const int64_t L = numLayers_, D = numDirections(), H = outputDim_, C = H * D, G = gateCount() * H;
  const bool lstm = mode_ == RNNMode::LSTM;
  const bool drop = training_ && dropout_ > 0;
  // See Note [RNN saved layout]
  const Slots slot{L, D};
  forward_ = ForwardRecord{};  // a failure below leaves no forward to run backward on
  gradGatesValid_ = false;
  saved_.resize(slot.count());
  const int64_t* lengths = sequenceLengths.empty() ? nullptr : sequenceLengths.data();
  layer0Input_ = time_major_input(input, saved_[slot.input(0)], batchFirst_, lengths, S, B, inputDim_);
  const Tensor h0 = initial_state(hiddenInput, hiddenOutput);
  const Tensor c0 = lstm ? initial_state(cellInput, cellOutput) : Tensor();
  ensure(hiddenOutput, stateShape(B), input);
  if (lstm) {
    ensure(cellOutput, stateShape(B), input);
  } else {
    cellOutput = Tensor();
  }
  Tensor& top = batchFirst_ ? ensure(saved_[slot.top()], {S, B, C}, input) : ensure(output, {S, B, C}, input);
  Tensor& work = ensure(saved_[slot.work(0)], {B, G}, input);
  // without bias the kernels add zeros (one buffer for both biases, read only)
  if (!bias_ && (!zeroBias_.defined() || zeroBias_.numel() != G || zeroBias_.dtype() != input.dtype())) {
    zeroBias_ = tensor::zeros({G}, input.dtype());
  }
  for (int64_t l = 0; l < L; ++l) {
    const Tensor& x = l == 0 ? layer0Input_ : saved_[slot.input(l)];
    Tensor& y = l == L - 1 ? top : ensure(saved_[slot.input(l + 1)], {S, B, C}, input);
    for (int64_t d = 0; d < D; ++d) {
      ensure(saved_[slot.dir(l, d, 0)], {S * B, G}, input);
      ensure(saved_[slot.dir(l, d, 1)], {S * B, H}, input);
      if (lstm || mode_ == RNNMode::GRU) ensure(saved_[slot.dir(l, d, 2)], {S * B, H}, input);
      if (lstm) ensure(saved_[slot.dir(l, d, 3)], {S * B, H}, input);
      const int64_t s = l * D + d;
      const kernels::RNNLayerGeometry g{.cell = cell_of(mode_),
                                        .seqLength = S,
                                        .batch = B,
                                        .inputSize = l == 0 ? inputDim_ : C,
                                        .hidden = H,
                                        .reverse = d == 1,
                                        .lengths = lengths};
      tensor::dispatch_f32_f64(input.dtype(), "nn.RNNBase", [&](auto tag) {
        using T = decltype(tag);
        kernels::RNNLayerSaved<T> sv;
        sv.gates = saved_[slot.dir(l, d, 0)].data<T>();
        sv.hprev = saved_[slot.dir(l, d, 1)].data<T>();
        sv.extra = (lstm || mode_ == RNNMode::GRU) ? saved_[slot.dir(l, d, 2)].data<T>() : nullptr;
        sv.cprev = lstm ? saved_[slot.dir(l, d, 3)].data<T>() : nullptr;
        const size_t i = paramIndex(l, d, 0);
        const T* bih = bias_ ? params[i + 2].value.data<T>() : zeroBias_.data<T>();
        const T* bhh = bias_ ? params[i + 3].value.data<T>() : zeroBias_.data<T>();
        kernels::rnn_layer_forward<T>(g, x.data<T>(), params[i].value.data<T>(), params[i + 1].value.data<T>(), bih,
                                      bhh, h0.defined() ? h0.data<T>() + s * B * H : nullptr,
                                      c0.defined() ? c0.data<T>() + s * B * H : nullptr, y.data<T>() + d * H, C,
                                      hiddenOutput.data<T>() + s * B * H,
                                      lstm ? cellOutput.data<T>() + s * B * H : nullptr, sv, work.data<T>());
      });
    }
    if (drop && l < L - 1) {
      Tensor& mask = ensure(saved_[slot.mask(l)], {S, B, C}, input);
      mask.bernoulli_(1 - dropout_).div_(1 - dropout_);
      y.mul_(mask);
    }
  }
  if (batchFirst_) ensure(output, {B, S, C}, input).copy_(top.transpose(0, 1));
  forward_ = ForwardRecord{input.sizes(), input.dtype(), sequenceLengths, training_, !h0.defined()};
  return output;
}

// ---- backward ----

const Tensor& RNNBase::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  checkGradOutput(input, gradOutput, "updateGradInput");
  checkTrainingForward(input, "updateGradInput");
  checkParameters("updateGradInput", false);
  // plain variables, not a structured binding: clang 14 cannot capture those in a lambda
  const auto [seqLength, batchSize] = checkInput(input, "updateGradInput");
  const int64_t S = seqLength, B = batchSize;
  const int64_t L = numLayers_, D = numDirections(), H = outputDim_, C = H * D, G = gateCount() * H;
  const bool lstm = mode_ == RNNMode::LSTM, gru = mode_ == RNNMode::GRU;
  const bool drop = dropout_ > 0;  // forward_ says the forward was in training mode
  const Slots slot{L, D};
  const int64_t* lengths = sequenceLengths.empty() ? nullptr : sequenceLengths.data();
  const int64_t K = gru ? 2 : 1;
  gradGatesValid_ = false;
  ensure(gradGates_, {L * D, K, S * B, G}, input);
  ensure(gradHiddenInput, stateShape(B), input);
  if (lstm) {
    ensure(gradCellInput, stateShape(B), input);
  } else {
    gradCellInput = Tensor();
  }
  const Tensor dhn = cpu_state(gradHiddenOutput), dcn = lstm ? cpu_state(gradCellOutput) : Tensor();
  Tensor dtop = batchFirst_ ? ensure(saved_[slot.top()], {S, B, C}, input).copy_(gradOutput.transpose(0, 1))
                            : gradOutput.contiguous();
  Tensor& work = ensure(saved_[slot.work(0)], {2, B, H}, input);
  if (batchFirst_) {
    ensure(saved_[slot.work(3)], {S, B, inputDim_}, input);
  } else {
    ensure(gradInput, {S, B, inputDim_}, input);
  }
  Tensor dy = dtop;
  for (int64_t l = L - 1; l >= 0; --l) {
    const int64_t in = l == 0 ? inputDim_ : C;
    // where this layer's input gradient goes: gradInput (or its time-major copy) for layer 0
    Tensor& dx = l == 0 ? (batchFirst_ ? saved_[slot.work(3)] : gradInput)
                        : ensure(saved_[slot.work(1 + (L - l) % 2)], {S, B, in}, input);
    tensor::dispatch_f32_f64(input.dtype(), "nn.RNNBase", [&](auto tag) {
      using T = decltype(tag);
      for (int64_t d = 0; d < D; ++d) {
        const int64_t s = l * D + d;
        kernels::RNNLayerGeometry g;
        g.cell = cell_of(mode_);
        g.seqLength = S;
        g.batch = B;
        g.inputSize = in;
        g.hidden = H;
        g.reverse = d == 1;
        g.lengths = lengths;
        kernels::RNNLayerSaved<T> sv;
        sv.gates = saved_[slot.dir(l, d, 0)].data<T>();
        sv.hprev = saved_[slot.dir(l, d, 1)].data<T>();
        sv.extra = (lstm || gru) ? saved_[slot.dir(l, d, 2)].data<T>() : nullptr;
        sv.cprev = lstm ? saved_[slot.dir(l, d, 3)].data<T>() : nullptr;
        T* gi = gradGates_.data<T>() + s * K * S * B * G;
        T* gh = gru ? gi + S * B * G : gi;
        const size_t i = paramIndex(l, d, 0);
        kernels::rnn_layer_backward<T>(g, params[i + 1].value.data<T>(), sv, dy.data<T>() + d * H, C,
                                       dhn.defined() ? dhn.data<T>() + s * B * H : nullptr,
                                       dcn.defined() ? dcn.data<T>() + s * B * H : nullptr, gi, gh,
                                       gradHiddenInput.data<T>() + s * B * H,
                                       lstm ? gradCellInput.data<T>() + s * B * H : nullptr, work.data<T>());
        // dx (+)= dgates_ih W_ih over every step at once
        gemm<T>(false, false, S * B, in, G, T(1), gi, G, params[i].value.data<T>(), in, d == 0 ? T(0) : T(1),
                dx.data<T>(), in);
      }
    });
    if (l > 0 && drop) dx.mul_(saved_[slot.mask(l - 1)]);
    dy = dx;
  }
  if (batchFirst_) ensure(gradInput, {B, S, inputDim_}, input).copy_(saved_[slot.work(3)].transpose(0, 1));
  gradGatesValid_ = true;
  return gradInput;
}

// Note [The zero initial state in the recurrent weight gradient]
// Without a hiddenInput each sequence starts from zeros, and cuDNN (given no hx) leaves the
// first step out of the recurrent weight gradient dW_hh = sum_t gh_t^T h_{t-1}, where h_{t-1}
// is that zero state, rather than multiplying by it: a NaN or Inf reaching the first step's gate
// gradients makes NaN there in a product (Inf x 0) and nothing in cuDNN's sum (measured by
// tests/cudnn/test_BadInput.cpp, NaN and Inf in gradOutput). So where those rows hold a
// non-finite value they are left out here too; otherwise the product runs over every row as
// before, bit for bit (a zero row adds nothing).
template <class T>
void RNNBase::add_recurrent_weight_gradient(bool reverse, int64_t S, int64_t B, int64_t G, int64_t H, T scale,
                                            const T* gh, const T* hprev, T* grad) const {
  const int64_t N = S * B;
  // the row (t * B + b) of each sequence's first step
  std::vector<int64_t> first;
  if (forward_.zeroInitialState && N > 0) {
    for (int64_t b = 0; b < B; ++b) {
      const int64_t len = forward_.lengths.empty() ? S : forward_.lengths[static_cast<size_t>(b)];
      if (len > 0) first.push_back((reverse ? len - 1 : 0) * B + b);
    }
  }
  bool wild = false;
  for (const int64_t r : first) {
    for (int64_t j = 0; j < G; ++j) wild = wild || !std::isfinite(gh[r * G + j]);
  }
  if (!wild) return gemm<T>(true, false, G, H, N, scale, gh, G, hprev, H, T(1), grad, H);
  std::vector<char> skip(static_cast<size_t>(N), 0);
  for (const int64_t r : first) skip[static_cast<size_t>(r)] = 1;
  std::vector<T> rows_gh, rows_h;
  for (int64_t r = 0; r < N; ++r) {
    if (skip[static_cast<size_t>(r)]) continue;
    rows_gh.insert(rows_gh.end(), gh + r * G, gh + (r + 1) * G);
    rows_h.insert(rows_h.end(), hprev + r * H, hprev + (r + 1) * H);
  }
  const int64_t kept = static_cast<int64_t>(rows_h.size()) / std::max<int64_t>(H, 1);
  if (kept > 0) gemm<T>(true, false, G, H, kept, scale, rows_gh.data(), G, rows_h.data(), H, T(1), grad, H);
}

void RNNBase::accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale) {
  checkGradOutput(input, gradOutput, "accGradParameters");
  checkTrainingForward(input, "accGradParameters");
  if (!gradGatesValid_) {
    throw Error(where("accGradParameters") +
                "expected updateGradInput() after the forward first (backward() "
                "calls both), got none");
  }
  checkParameters("accGradParameters", true);
  // plain variables, not a structured binding: clang 14 cannot capture those in a lambda
  const auto [seqLength, batchSize] = checkInput(input, "accGradParameters");
  const int64_t S = seqLength, B = batchSize;
  const int64_t L = numLayers_, D = numDirections(), H = outputDim_, C = H * D, G = gateCount() * H;
  const bool gru = mode_ == RNNMode::GRU;
  const int64_t K = gru ? 2 : 1, N = S * B;
  const Slots slot{L, D};
  tensor::dispatch_f32_f64(input.dtype(), "nn.RNNBase", [&](auto tag) {
    using T = decltype(tag);
    const T sc = static_cast<T>(scale);
    for (int64_t l = 0; l < L; ++l) {
      const int64_t in = l == 0 ? inputDim_ : C;
      const T* x = (l == 0 ? layer0Input_ : saved_[slot.input(l)]).template data<T>();
      for (int64_t d = 0; d < D; ++d) {
        const size_t i = paramIndex(l, d, 0);
        const T* gi = gradGates_.data<T>() + (l * D + d) * K * N * G;
        const T* gh = gru ? gi + N * G : gi;
        const T* hprev = saved_[slot.dir(l, d, 1)].template data<T>();
        gemm<T>(true, false, G, in, N, sc, gi, G, x, in, T(1), params[i].grad.data<T>(), in);
        add_recurrent_weight_gradient(d == 1, S, B, G, H, sc, gh, hprev, params[i + 1].grad.data<T>());
        if (!bias_) continue;
        T* bi = params[i + 2].grad.data<T>();
        T* bh = params[i + 3].grad.data<T>();
        for (int64_t r = 0; r < N; ++r) {
          const T* a = gi + r * G;
          const T* b = gh + r * G;
#pragma omp simd
          for (int64_t j = 0; j < G; ++j) {
            bi[j] += sc * a[j];
            bh[j] += sc * b[j];
          }
        }
      }
    }
  });
}

// ---- configuration and printing ----

std::string RNNBase::str() const {
  std::string s = type_name() + "(" + std::to_string(inputDim_) + " -> " + std::to_string(outputDim_);
  if (numLayers_ > 1) s += ", " + std::to_string(numLayers_) + " layers";
  if (bidirectional_ && !impliedBidirectional()) s += ", bidirectional";
  if (batchFirst_) s += ", batchFirst";
  if (dropout_ > 0) {
    char buf[48];
    std::snprintf(buf, sizeof buf, ", dropout %g", dropout_);
    s += buf;
  }
  if (!bias_) s += ", without bias";
  if (persist) s += ", persist";
  return s + ")";
}

tensor::Json RNNBase::config() const {
  tensor::Json::Object o{{"inputDim", inputDim_},
                         {"outputDim", outputDim_},
                         {"numLayers", numLayers_},
                         {"bias", bias_},
                         {"batchFirst", batchFirst_},
                         {"dropout", dropout_},
                         {"persist", persist},
                         {"rememberStates", rememberStates_}};
  if (!impliedBidirectional()) o.emplace_back("bidirectional", bidirectional_);
  return o;
}

RNNBase::FileOptions RNNBase::readOptions(const tensor::Json& config, const std::string& type, RNNMode mode,
                                          bool readBidirectional) {
  ConfigReader c(config, type);
  FileOptions o;
  o.rnn.inputSize = c.integer("inputDim");
  o.rnn.hiddenSize = c.integer("outputDim");
  o.rnn.numLayers = c.integer("numLayers", 1);
  o.rnn.bias = c.flag("bias", true);
  o.rnn.batchFirst = c.flag("batchFirst", false);
  o.rnn.dropout = c.number("dropout", 0.0);
  o.rnn.bidirectional = readBidirectional ? c.flag("bidirectional", false) : true;
  o.persist = c.flag("persist", false);
  o.rememberStates = c.flag("rememberStates", false);
  parameterCount(type, mode, o.rnn);
  c.finish();
  return o;
}

void RNNBase::applyOptions(const FileOptions& options) {
  persist = options.persist;
  rememberStates_ = options.rememberStates;
}

}  // namespace nn

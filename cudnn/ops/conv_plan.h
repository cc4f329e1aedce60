// conv_plan.h: the inside of ConvPlan, shared by the files of the convolution pipeline (internal
// to cudnn/ops, never installed):
//   conv_search.cpp  one pass as make_key -> candidates -> try_in_order (Note [Choosing a
//                    convolution algorithm]), a fused forward being the same pass with an
//                    epilogue (Note [Fusion]); the process-wide plan cache;
//   conv_bias.cpp    the bias passes (Note [Bias without cuDNN]);
//   conv.cpp         ConvPlan's interface and the functional ops (conv, conv_grad_*).
#pragma once

#include <cudnn.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cudnn/ops/conv.h"
#include "cudnn/ops/conv_graph.h"
#include "cudnn/ops/graph_plan.h"
#include "tensor/LruCache.h"

namespace cudnn {

namespace conv_detail {

// What the try loop runs (Note [Candidates]).
struct Candidate {
  int algo = 0;  // a legacy algorithm, or kGraphEngine + the engine's global index
  cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
  float time = 0;
  size_t memory = 0;  // a graph engine's is known once its plan is built
  bool deterministic = true;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  std::shared_ptr<graph::ConvEngine> engine;  // set for a graph engine
  bool timed = false;                         // time is a measurement (a timed search's), not a heuristic's
};

// What a forward computes after the convolution, in the same graph operation (Note [Fusion]):
// + bias, then an activation. Empty for a plain pass.
struct Epilogue {
  const Tensor* bias = nullptr;
  std::optional<cudnnPointwiseMode_t> activation;

  bool empty() const { return !bias && !activation; }
  // Its part of the key: 0 for none, else 1 + bias + 2 * (1 + activation mode).
  int32_t key() const {
    if (empty()) return 0;
    return 1 + (bias ? 1 : 0) + 2 * (activation ? 1 + static_cast<int32_t>(*activation) : 0);
  }
};

// The tensors of one call of a pass, by role. Forward: a = x, b = w, out = y. Backward data:
// a = w, b = dy, out = dx. Backward filter: a = x, b = dy, out = dw. x_like and y_like are the
// convolution's input and output sides (dx and dy in the backward passes), w_shape the filter's.
struct PassTensors {
  const Tensor& a;
  const Tensor& b;
  const Tensor& out;
  const Tensor& x_like;
  const Tensor& y_like;
  const Shape& w_shape;
};

// One call of a pass as cuDNN sees it: descriptors, pointers and factors, named. The legacy
// descriptors are null for a fused forward (graph engines only); graph is null where no graph
// engine may run (Note [Candidates]).
struct ConvProblem {
  cudnnHandle_t handle = nullptr;
  cudnnTensorDescriptor_t x_desc = nullptr, y_desc = nullptr;
  cudnnFilterDescriptor_t w_desc = nullptr;
  cudnnConvolutionDescriptor_t conv_desc = nullptr;
  const void* a = nullptr;  // as PassTensors
  const void* b = nullptr;
  void* out = nullptr;
  const Tensor* out_tensor = nullptr;  // out again, for a graph engine's blend (Note [Candidates])
  size_t out_bytes = 0;
  size_t tensor_bytes = 0;   // a, b and out: what a timed search's trial cap is relative to
  bool sixteen_bit = false;  // float16 / bfloat16 data (the cap's default ratio)
  int device = 0;
  double alpha = 1, beta = 0;
  Scalar alpha_scalar{1, DType::Float32}, beta_scalar{0, DType::Float32};  // the factors for cuDNN's legacy calls
  const graph::ConvGraphSpec* graph = nullptr;
  void* bias = nullptr;  // a fused forward's bias
};

// A zero-initialised key of everything an algorithm choice depends on (no padding bytes:
// it is compared and hashed as bytes).
struct ConvKey {
  int32_t pass, device, dtype, compute, tf32, deterministic, timed, nd, groups, cross, graph;
  int32_t fusion;  // Epilogue::key()
  int32_t x[5], w[5], y[5], pad[3], stride[3], dilation[3];
  int32_t w_channels_last;  // the filter's layout (Note [Channels-last filters])
  int32_t heuristics;       // conv.heuristics (ConvHeuristics), which ranks the graph engines
  int64_t x_stride[5], y_stride[5];
  uint64_t handle;  // handle_serial() with graph engines, else 0
};
static_assert(sizeof(ConvKey) == 38 * 4 + 10 * 8 + 8, "ConvKey must have no padding");
static_assert(std::is_trivially_copyable_v<ConvKey>);
bool operator==(const ConvKey& a, const ConvKey& b);

// The verbose log of one pass's search: what is searched, under which policy, what was tried
// and why others were skipped; lines reach stderr only with verbose=true.
struct Trace {
  ConvPass pass = ConvPass::Forward;
  std::string what{}, policy{}, tried{}, skipped{};

  void say(const std::string& line) const;  // "conv <pass> <what>: <line>"
  void skip(const std::string& name, const std::string& why) { skipped += "; skipped " + name + ": " + why; }
  void ran(const std::string& name) { tried += (tried.empty() ? "" : ", ") + name; }
  void failed(const std::string& name, cudnnStatus_t st);
  void chose(const std::string& name, size_t workspace, const char* extra = "") const;
  // Moves the skips of the last try loop behind what it tried: "a, b [skipped c: why]".
  void close_loop();
};

// The choice a pass remembered, and what it needs to run again (Note [Choosing a convolution
// algorithm]: steady state goes straight to cuDNN).
struct PassState {
  bool valid = false;
  ConvKey key{};
  int algo = -1;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;  // float32 after a float16-math fallback
  size_t ws = 0;
  int once_algo = -1;                         // legacy only: see Note [Candidates]
  std::vector<ConvPlan::Timing> timings;      // what the search behind the choice measured
  std::shared_ptr<graph::ConvEngine> engine;  // set when a graph engine ran
  graph::VariantPackCache pack;
};

void log(const std::string& line);
std::string bytes_str(size_t b);

// The bias passes with descriptors the caller keeps (conv_bias.cpp).
void add_bias_with(TensorDescriptor& yd, TensorDescriptor& bd, const Tensor& y, const Tensor& bias);
void backward_bias_with(TensorDescriptor& dyd, TensorDescriptor& dbd, const Tensor& dy, const Tensor& db, double alpha,
                        double beta);

}  // namespace conv_detail

struct ConvPlan::Impl {
  using Candidate = conv_detail::Candidate;
  using ConvKey = conv_detail::ConvKey;
  using ConvProblem = conv_detail::ConvProblem;
  using Epilogue = conv_detail::Epilogue;
  using PassState = conv_detail::PassState;
  using PassTensors = conv_detail::PassTensors;
  using Trace = conv_detail::Trace;

  TensorDescriptor x_desc, y_desc;
  FilterDescriptor w_desc;
  ConvolutionDescriptor conv_desc;
  TensorDescriptor bias_data_desc, bias_desc;  // add_bias / backward_bias
  ConvChoices choices;
  std::optional<Precision> precision;
  PassState state[3];
  PassState fused;          // the forward with an epilogue (Note [Fusion])
  ConvKey fused_refused{};  // the last key no fused engine ran for: not searched again
  bool has_refused = false;
  // per pass, the last key whose pinned or *_once legacy search found nothing runnable: its calls
  // go to the graph engines (Note [When no pinned algorithm runs] in conv_search.cpp)
  std::optional<ConvKey> legacy_refused[3];
  int searches = 0;

  // One pass, out = alpha * op(...) + beta * out; with an epilogue (forward only, alpha 1,
  // beta 0) y = act(op(...) + bias), or false, y left to the caller, where no fused engine runs.
  template <ConvPass P>
  bool execute(const PassTensors& t, const ConvSpec& g, double alpha, double beta, const Epilogue& epi = {});

 private:
  bool use_fastest() const { return choices.fastest.value_or(config().fastest); }
  // The most workspace a candidate may take: workspace_limit unless fastest, never more than
  // can be had.
  size_t workspace_cap() const;
  // The most workspace a timed search's trial may take (Note [Trial workspaces]).
  size_t search_cap(const ConvProblem& c) const;
  const AlgoSetting& setting_of(ConvPass pass) const;
  template <ConvPass P>
  ConvKey make_key(const PassTensors& t, const ConvSpec& g, cudnnDataType_t compute, bool timed, bool graph) const;
  template <ConvPass P>
  void run_remembered(PassState& s, const ConvProblem& c);
  template <ConvPass P>
  std::vector<Candidate> candidates(const ConvProblem& c, const AlgoSetting& setting, const ConvKey& key, bool timed,
                                    const ConvSpec& g, DType dtype, Trace& trace);
  template <ConvPass P>
  std::vector<Candidate> rank(const ConvProblem& c, bool timed, Trace& trace);
  template <ConvPass P>
  std::vector<Candidate> rank_fused(const ConvProblem& c, const PassTensors& t, const ConvSpec& g, const Epilogue& epi,
                                    bool timed, Trace& trace);
  template <ConvPass P>
  bool try_in_order(const ConvProblem& c, const ConvKey& key, cudnnDataType_t compute,
                    const std::vector<Candidate>& cands, DType dtype, PassState& s, Trace& trace);
  template <ConvPass P>
  bool try_engine(const ConvProblem& c, const ConvKey& key, cudnnDataType_t compute, const Candidate& cand, DType dtype,
                  PassState& s, Trace& trace);
  template <ConvPass P>
  bool try_legacy(const ConvProblem& c, const ConvKey& key, cudnnDataType_t compute, const Candidate& cand, DType dtype,
                  size_t cap, PassState& s, Trace& trace);
  template <ConvPass P>
  // may_fail: false instead of "no algorithm could run" (Note [When no pinned algorithm runs])
  bool search(const PassTensors& t, const ConvSpec& g, const ConvKey& key, const AlgoSetting& setting, bool timed,
              bool graph, double alpha, double beta, bool may_fail);
  bool search_fused(const PassTensors& t, const ConvSpec& g, const ConvKey& key, const Epilogue& epi, bool timed);
  template <ConvPass P>
  ConvProblem problem(const PassTensors& t, const ConvSpec& g, cudnnDataType_t compute, cudnnMathType_t math,
                      bool legacy, const graph::ConvGraphSpec* graph, double alpha, double beta);
};

// The activations a fused forward's epilogue applies (ConvPlan::forward_fused).
inline constexpr std::pair<Activation, cudnnPointwiseMode_t> kPointwiseModes[] = {
    {Activation::ReLU, CUDNN_POINTWISE_RELU_FWD},
    {Activation::Tanh, CUDNN_POINTWISE_TANH_FWD},
    {Activation::Sigmoid, CUDNN_POINTWISE_SIGMOID_FWD},
};

}  // namespace cudnn

// conv.cpp: convolution passes and the algorithm selection behind them.
#include "cudnn/ops/conv.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <limits>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include "cudnn/core/Handle.h"
#include "cudnn/kernels/Bias.h"
#include "cudnn/ops/conv_graph.h"
#include "tensor/Cuda.h"
#include "tensor/LruCache.h"

namespace cudnn {

// Note [Choosing a convolution algorithm]
// A pass runs in three steps, the shape of ATen's algorithm iterator:
//   make_key     everything the choice depends on (shapes, dtypes, geometry, flags), a POD;
//   candidates   what to try, in order: the pinned algorithm, or the *_once policies' first
//                choice, or the list cuDNN ranks for the key, heuristically (cudnnGet*_v7,
//                "guess") or by running them (cudnnFind*Ex, "time", also when benchmark=true);
//                ranked lists are cached per key, process-wide, so alternating shapes never
//                search twice;
//   try_in_order each candidate in turn, skipping those that are unsupported, not
//                deterministic (deterministic=true), or whose workspace exceeds the cap
//                (workspace_limit unless fastest, never more than the memory obtainable); one
//                whose workspace cannot be allocated, or that reports NOT_SUPPORTED or an
//                allocation failure when run, is passed over for the next.
// Then the pass's last resort (an algorithm needing no workspace), and float16 math with
// nothing runnable retries in float32 math. What is known about each algorithm (name, 3-D
// support, determinism, last resort) is the table in Config.cpp. Once a pass ran, the plan
// remembers (key -> algorithm, math, workspace) and later calls with the same key go straight
// to cuDNN: no search, no allocation, no descriptor change.
//
// Note [Candidates]
// A Candidate is what the try loop runs: a legacy algorithm (cudnnConvolution*), or a
// graph-API engine (conv_graph.h: an operation graph, an engine configuration from cuDNN's
// heuristics, its execution plan). The legacy algorithms miss the engines cuDNN 9 ranks best
// (an AlexNet 3x3 conv: legacy best 0.455 ms, PyTorch's engine 0.217; docs/performance.md, "Per layer").
//   - guess: the graph engines in heuristics order (mode A, then the fallback list), then the
//     legacy ones; time (benchmark=true): every candidate of both kinds timed, one list by time.
//   - The filters read an engine's numerical notes: NONDETERMINISTIC is skipped under
//     deterministic=true, TENSOR_CORE for float32 with allow_tf32=false, DOWN_CONVERT_INPUTS
//     always; its workspace (known once its plan is built) obeys the same cap.
//   - A graph plan is bound to shapes, strides and the handle: the key holds them all. Its
//     operation computes op(...) alone (engines refuse other alpha/beta), so a call with other
//     factors (the twins accumulate filter gradients, beta 1) runs it into a scratch buffer
//     and blends that into the output with tensor ops. Pinned algorithms and the *_once policies (one algorithm for
//     every shape, which a graph plan cannot be) stay legacy; conv.graph=false turns the graph engines off.
//   - Buffers not 16-byte aligned, a filter that is not contiguous, or a strided output with
//     factors to blend take the legacy path.

namespace {

struct Candidate {
  int algo = 0;  // a legacy algorithm, or kGraphEngine + the engine's global index
  cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
  float time = 0;
  size_t memory = 0;  // a graph engine's is known once its plan is built
  bool deterministic = true;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  std::shared_ptr<graph::ConvEngine> engine;  // set for a graph engine
};

// What one call of a pass operates on. Forward: a=x, b=w, out=y. Backward data: a=w, b=dy,
// out=dx. Backward filter: a=x, b=dy, out=dw. x/y descriptors describe the conv input
// and output (dx and dy in the backward passes).
struct ConvCall {
  cudnnHandle_t handle;
  cudnnTensorDescriptor_t x, y;
  cudnnFilterDescriptor_t w;
  cudnnConvolutionDescriptor_t conv;
  const void* a;
  const void* b;
  void* out;
  Scalar alpha, beta;
  size_t out_bytes;
  int device;
  const graph::ConvGraphSpec* graph;  // null: no graph engines for this call
  const Tensor* out_tensor;           // the output again, and the factors, for blending after
  double alpha_value, beta_value;     // a graph engine (Note [Candidates])
  void* bias = nullptr;               // a fused forward's bias (Note [Fusion])
};

// The pass's (x, w, y) in the graph's terms (Uid), from ConvCall's (a, b, out), with the
// output replaced by `out` (a scratch buffer while timing).
template <ConvPass P>
std::array<void*, 3> graph_pointers(const ConvCall& c, void* out) {
  auto* a = const_cast<void*>(c.a);
  auto* b = const_cast<void*>(c.b);
  if constexpr (P == ConvPass::Forward)
    return {a, b, out};
  else if constexpr (P == ConvPass::BackwardData)
    return {out, a, b};
  else
    return {a, out, b};
}

template <ConvPass P>
struct Pass;

template <>
struct Pass<ConvPass::Forward> {
  using Perf = cudnnConvolutionFwdAlgoPerf_t;
  using Algo = cudnnConvolutionFwdAlgo_t;
  static constexpr int kCount = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
  static cudnnStatus_t heuristics(const ConvCall& c, int n, int* got, Perf* out) {
    return cudnnGetConvolutionForwardAlgorithm_v7(c.handle, c.x, c.w, c.conv, c.y, n, got, out);
  }
  static cudnnStatus_t find(const ConvCall& c, void* scratch, int n, int* got, Perf* out, void* ws, size_t bytes) {
    return cudnnFindConvolutionForwardAlgorithmEx(c.handle, c.x, c.a, c.w, c.b, c.conv, c.y, scratch, n, got, out, ws,
                                                  bytes);
  }
  static cudnnStatus_t workspace(const ConvCall& c, int algo, size_t* bytes) {
    return cudnnGetConvolutionForwardWorkspaceSize(c.handle, c.x, c.w, c.conv, c.y, static_cast<Algo>(algo), bytes);
  }
  static cudnnStatus_t run(const ConvCall& c, int algo, void* ws, size_t bytes) {
    return cudnnConvolutionForward(c.handle, c.alpha.ptr(), c.x, c.a, c.w, c.b, c.conv, static_cast<Algo>(algo), ws,
                                   bytes, c.beta.ptr(), c.y, c.out);
  }
};

template <>
struct Pass<ConvPass::BackwardData> {
  using Perf = cudnnConvolutionBwdDataAlgoPerf_t;
  using Algo = cudnnConvolutionBwdDataAlgo_t;
  static constexpr int kCount = CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
  static cudnnStatus_t heuristics(const ConvCall& c, int n, int* got, Perf* out) {
    return cudnnGetConvolutionBackwardDataAlgorithm_v7(c.handle, c.w, c.y, c.conv, c.x, n, got, out);
  }
  static cudnnStatus_t find(const ConvCall& c, void* scratch, int n, int* got, Perf* out, void* ws, size_t bytes) {
    return cudnnFindConvolutionBackwardDataAlgorithmEx(c.handle, c.w, c.a, c.y, c.b, c.conv, c.x, scratch, n, got, out,
                                                       ws, bytes);
  }
  static cudnnStatus_t workspace(const ConvCall& c, int algo, size_t* bytes) {
    return cudnnGetConvolutionBackwardDataWorkspaceSize(c.handle, c.w, c.y, c.conv, c.x, static_cast<Algo>(algo),
                                                        bytes);
  }
  static cudnnStatus_t run(const ConvCall& c, int algo, void* ws, size_t bytes) {
    return cudnnConvolutionBackwardData(c.handle, c.alpha.ptr(), c.w, c.a, c.y, c.b, c.conv, static_cast<Algo>(algo),
                                        ws, bytes, c.beta.ptr(), c.x, c.out);
  }
};

template <>
struct Pass<ConvPass::BackwardFilter> {
  using Perf = cudnnConvolutionBwdFilterAlgoPerf_t;
  using Algo = cudnnConvolutionBwdFilterAlgo_t;
  static constexpr int kCount = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
  static cudnnStatus_t heuristics(const ConvCall& c, int n, int* got, Perf* out) {
    return cudnnGetConvolutionBackwardFilterAlgorithm_v7(c.handle, c.x, c.y, c.conv, c.w, n, got, out);
  }
  static cudnnStatus_t find(const ConvCall& c, void* scratch, int n, int* got, Perf* out, void* ws, size_t bytes) {
    return cudnnFindConvolutionBackwardFilterAlgorithmEx(c.handle, c.x, c.a, c.y, c.b, c.conv, c.w, scratch, n, got,
                                                         out, ws, bytes);
  }
  static cudnnStatus_t workspace(const ConvCall& c, int algo, size_t* bytes) {
    return cudnnGetConvolutionBackwardFilterWorkspaceSize(c.handle, c.x, c.y, c.conv, c.w, static_cast<Algo>(algo),
                                                          bytes);
  }
  static cudnnStatus_t run(const ConvCall& c, int algo, void* ws, size_t bytes) {
    return cudnnConvolutionBackwardFilter(c.handle, c.alpha.ptr(), c.x, c.a, c.y, c.b, c.conv, static_cast<Algo>(algo),
                                          ws, bytes, c.beta.ptr(), c.w, c.out);
  }
};

// Runs a graph engine for the call: straight into the output when alpha is 1 and beta 0,
// else into a scratch buffer (contiguous, as the output then is) blended in with tensor ops.
template <ConvPass P>
cudnnStatus_t run_engine(const ConvCall& c, const graph::ConvEngine& e, void* ws, graph::VariantPackCache& pack) {
  const bool plain = c.alpha_value == 1 && c.beta_value == 0;
  const Tensor& out = *c.out_tensor;
  const Tensor scratch = plain ? out : tensor::empty(out.sizes(), out.dtype(), out.device());
  const std::array<void*, 3> p = graph_pointers<P>(c, scratch.raw_data());
  const cudnnStatus_t st = e.run(c.handle, p[0], p[1], p[2], ws, pack, c.bias);
  if (st != CUDNN_STATUS_SUCCESS || plain) return st;
  Tensor target(out);
  if (c.beta_value == 0)
    target.zero_();  // beta 0 ignores what out held, NaN included
  else if (c.beta_value != 1)
    target.mul_(c.beta_value);
  target.add_(scratch, c.alpha_value);
  return st;
}

// A zero-initialised key of everything an algorithm choice depends on (no padding bytes:
// it is compared and hashed as bytes).
struct ConvKey {
  int32_t pass, device, dtype, compute, tf32, deterministic, timed, nd, groups, cross, graph;
  int32_t fusion;  // a fused forward's epilogue: 1 + bias + 2 * (1 + activation mode), else 0
  int32_t x[5], w[5], y[5], pad[3], stride[3], dilation[3];
  int32_t w_channels_last, unused;  // the filter's layout (Note [Channels-last filters]); 0
  int64_t x_stride[5], y_stride[5];
  uint64_t handle;  // handle_serial() with graph engines, else 0
};
static_assert(sizeof(ConvKey) == 38 * 4 + 10 * 8 + 8, "ConvKey must have no padding");
static_assert(std::is_trivially_copyable_v<ConvKey>);

bool operator==(const ConvKey& a, const ConvKey& b) { return std::memcmp(&a, &b, sizeof a) == 0; }

struct KeyHash {
  size_t operator()(const ConvKey& k) const {
    const auto* p = reinterpret_cast<const unsigned char*>(&k);
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < sizeof k; ++i) h = (h ^ p[i]) * 1099511628211ull;
    return static_cast<size_t>(h);
  }
};

// Bounded by the flag conv.cache_limit (least recently used keys go first, each with its
// graph plans once no pass still holds them): a network fed ever-new shapes would otherwise
// grow it without end.
struct AlgorithmCache {
  std::mutex mutex;
  tensor::LruCache<ConvKey, std::vector<Candidate>, KeyHash> ranked;

  const std::vector<Candidate>* find(const ConvKey& key) {
    ranked.set_capacity(config().conv_cache_limit);
    return ranked.find(key);
  }
  void put(const ConvKey& key, std::vector<Candidate> candidates) {
    ranked.set_capacity(config().conv_cache_limit);
    ranked.put(key, std::move(candidates));
  }
};

AlgorithmCache& cache() {
  static AlgorithmCache* c = new AlgorithmCache;  // outlives every plan, including static ones
  return *c;
}

bool retryable(cudnnStatus_t s) {
  return CUDNN_STATUS_CATEGORY(s) == CUDNN_STATUS_NOT_SUPPORTED ||
         s == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED ||
         s == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
}

std::string bytes_str(size_t b) {
  char buf[32];
  if (b >= (size_t(1) << 30))
    std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(b) / (1 << 30));
  else if (b >= (size_t(1) << 20))
    std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(b) / (1 << 20));
  else
    std::snprintf(buf, sizeof buf, "%zu B", b);
  return buf;
}

void log(const std::string& line) {
  if (config().verbose) std::fprintf(stderr, "cudnn-nn: %s\n", line.c_str());
}

// "cudnn::conv fwd: ", the prefix of a pass's own errors.
std::string where_of(ConvPass pass) { return std::string("cudnn::conv ") + pass_name(pass) + ": "; }

cudnnDataType_t compute_type(DType dtype, std::optional<Precision> override_precision, ConvPass pass) {
  const Precision p = override_precision.value_or(config().precision);
  auto reject = [&](const char* what) -> cudnnDataType_t {
    throw tensor::Error(where_of(pass) + "conv.precision=" + what + " is not available for " + tensor::name(dtype) +
                        " data (cuDNN computes float64 data in float64, float32 data in float32, and 16-bit data "
                        "in float16 or float32)");
  };
  switch (dtype) {
    case DType::Float64:
      if (p == Precision::Float16 || p == Precision::Float32)
        return reject(p == Precision::Float16 ? "float16" : "float32");
      return CUDNN_DATA_DOUBLE;
    case DType::Float32:
      if (p == Precision::Float16 || p == Precision::Float64)
        return reject(p == Precision::Float16 ? "float16" : "float64");
      return CUDNN_DATA_FLOAT;
    case DType::Float16:
      if (p == Precision::Float64) return reject("float64");
      return (p == Precision::AsInput || p == Precision::Float16) ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
    case DType::BFloat16:
      if (p == Precision::Float64 || p == Precision::Float16)
        return reject(p == Precision::Float64 ? "float64" : "float16");
      return CUDNN_DATA_FLOAT;  // cuDNN has no bfloat16 compute type
    default:
      break;
  }
  return data_type(dtype);
}

cudnnMathType_t default_math(DType dtype) {
  if (dtype == DType::Float16 || dtype == DType::BFloat16) return CUDNN_TENSOR_OP_MATH;
  if (dtype == DType::Float32 && !config().allow_tf32) return CUDNN_FMA_MATH;
  return CUDNN_DEFAULT_MATH;
}

void fill_dims(int32_t* out, const Shape& s) {
  for (size_t i = 0; i < s.size() && i < 5; ++i) out[i] = static_cast<int32_t>(s[i]);
}

// The table's word on an algorithm it may not name (cuDNN's ranking can return one): such an
// algorithm counts as deterministic.
bool deterministic(ConvPass pass, int algo) {
  const ConvAlgorithm* a = find_algorithm(pass, algo);
  return !a || a->deterministic;
}

}  // namespace

struct PassState {
  bool valid = false;
  ConvKey key{};
  int algo = -1;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;  // float32 after a float16-math fallback
  size_t ws = 0;
  int once_algo = -1;                         // legacy only: see Note [Candidates]
  std::shared_ptr<graph::ConvEngine> engine;  // set when a graph engine ran
  graph::VariantPackCache pack;
};

struct ConvPlan::Impl {
  TensorDescriptor x_desc, y_desc;
  FilterDescriptor w_desc;
  ConvolutionDescriptor conv_desc;
  TensorDescriptor bias_data_desc, bias_desc;  // add_bias / backward_bias
  ConvChoices choices;
  std::optional<Precision> precision;
  PassState state[3];
  int searches = 0;

  template <ConvPass P>
  void execute(const Tensor& a, const Tensor& b, const Tensor& out, const Tensor& x_like, const Tensor& y_like,
               const Shape& w_shape, const ConvSpec& g, double alpha, double beta);

 private:
  bool use_fastest() const { return choices.fastest.value_or(config().fastest); }
  // The most workspace a candidate may take: workspace_limit unless fastest, never more than
  // can be had.
  size_t workspace_cap() const {
    return use_fastest() ? workspace_available() : std::min(config().workspace_limit, workspace_available());
  }
  template <ConvPass P>
  ConvKey make_key(const Tensor& a, const Tensor& x_like, const Tensor& y_like, const Shape& w_shape, const ConvSpec& g,
                   cudnnDataType_t compute, bool timed, bool graph) const;
  template <ConvPass P>
  std::vector<Candidate> candidates(const ConvCall& c, const AlgoSetting& setting, const ConvKey& key, bool timed,
                                    const ConvSpec& g, DType dtype, const std::string& what, std::string& policy);
  template <ConvPass P>
  bool try_in_order(ConvCall& c, const ConvKey& key, cudnnDataType_t compute, const std::vector<Candidate>& cands,
                    DType dtype, const std::string& policy, const std::string& what, std::string& tried);
  template <ConvPass P>
  bool try_engine(ConvCall& c, const ConvKey& key, cudnnDataType_t compute, const Candidate& cand, DType dtype,
                  const std::string& policy, const std::string& what, std::string& tried, std::string& skipped,
                  PassState& s);

 public:
  // Note [Fusion]: the fused forward, when a graph engine runs it.
  PassState fused;
  ConvKey fused_refused{};  // the last key no fused engine ran for: not searched again
  bool has_refused = false;
  bool forward_fused(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y, const ConvSpec& g,
                     std::optional<Activation> act);
  template <ConvPass P>
  std::vector<Candidate> rank(const ConvCall& c, bool timed, const std::string& what);
};

namespace {
template <class Perf>
Candidate to_candidate(const Perf& p) {
  return Candidate{
      static_cast<int>(p.algo), p.status, p.time, p.memory, p.determinism == CUDNN_DETERMINISTIC, p.mathType, nullptr};
}

// A pinned, remembered or last-resort algorithm as a candidate, when cuDNN takes it for
// these shapes (its workspace size can be asked).
template <ConvPass P>
std::optional<Candidate> candidate_of(const ConvCall& c, int algo, DType dtype) {
  size_t bytes = 0;
  if (Pass<P>::workspace(c, algo, &bytes) != CUDNN_STATUS_SUCCESS) return std::nullopt;
  return Candidate{algo, CUDNN_STATUS_SUCCESS, 0, bytes, deterministic(P, algo), default_math(dtype), nullptr};
}
}  // namespace

namespace {
// Note [Engine configurations]
// cuDNN's heuristics list an engine several times, with different knobs (tiles, splits,
// stages): its configurations. A guess runs the first candidate that works, so it takes each
// engine's best-ranked configuration only, and at most 10 engines. A timed search
// (benchmark=true) can afford more, and the heuristics' first configuration is not always the
// fastest: a bfloat16 9x9 convolution (L3) ran engine 45's first at 0.62 ms where PyTorch's
// search found 0.56 ms. So it times up to 4 configurations of each engine, 24 in all; each
// costs one plan build and a few runs, once per shape.
constexpr size_t kMaxGraphEngines = 10;
constexpr size_t kMaxTimedConfigs = 24;
constexpr int kTimedConfigsPerEngine = 4;

// The graph engines cuDNN offers for the call, as candidates (none without a graph spec).
std::vector<Candidate> graph_candidates(const ConvCall& c, ConvPass pass, bool timed, const std::string& what) {
  std::vector<Candidate> out;
  if (!c.graph) return out;
  std::string why;
  const size_t max = timed ? kMaxTimedConfigs : kMaxGraphEngines;
  for (auto& e : graph::conv_engines(*c.graph, c.handle, max, timed ? kTimedConfigsPerEngine : 1, why)) {
    Candidate cand;
    cand.algo = kGraphEngine + static_cast<int>(e->global_index());
    cand.deterministic = !e->has_note(CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC);
    cand.engine = std::move(e);
    out.push_back(std::move(cand));
  }
  if (out.empty()) log(std::string("conv ") + pass_name(pass) + " " + what + ": no graph engine (" + why + ")");
  return out;
}

// Runs `run` once to warm up, then times two runs on the device's stream (ms per run).
template <class Run>
float time_on_stream(Run&& run) {
  cudaEvent_t start = nullptr, stop = nullptr;
  CUDA_CHECK(cudaEventCreate(&start));
  float ms = -1;
  try {
    CUDA_CHECK(cudaEventCreate(&stop));
    if (run() == CUDNN_STATUS_SUCCESS) {
      CUDA_CHECK(cudaEventRecord(start, stream()));
      const bool ok = run() == CUDNN_STATUS_SUCCESS && run() == CUDNN_STATUS_SUCCESS;
      CUDA_CHECK(cudaEventRecord(stop, stream()));
      CUDA_CHECK(cudaEventSynchronize(stop));
      CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
      ms = ok ? ms / 2 : -1;
    }
  } catch (...) {
    cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    throw;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms;
}
}  // namespace

// Graph plans held by the process-wide cache are released at shutdown, before the handles
// they were built with (shutdown hooks run newest first, and the handles' hook came first).
namespace {
// Note [Channels-last filters]
// A channels-last convolution (NHWC activations) runs fastest with its filter in the same
// layout: with a row-major filter cuDNN's NHWC engines transpose it, and a 3-channel 11x11
// filter gradient took 11.6 ms against PyTorch's 5.3 (L1, float16, H100). So the twins hand
// the passes a channels-last copy of the weight (and take the weight gradient in that layout)
// when the activations are channels-last; the filter descriptor and the graph's filter
// strides say which layout it is, and the key holds it.
bool filter_channels_last(const Tensor& w) {
  return w.dim() >= 4 && !w.is_contiguous() && w.is_contiguous(tensor::MemoryFormat::ChannelsLast);
}

// Whether a call may offer graph engines (Note [Candidates]): graph engines allowed, a policy
// that chooses per shape, a dense filter (row-major or channels-last), nd+2-d tensors, and
// 16-byte-aligned buffers (the alignment the graph's tensors declare).
bool graph_eligible(const AlgoSetting& setting, const ConvSpec& g, const Tensor& x_like, const Tensor& w,
                    const Tensor& y_like, std::initializer_list<const Tensor*> buffers) {
  if (!config().conv_graph || setting.once() || setting.policy == AlgoSetting::Policy::Fixed ||
      !(w.is_contiguous() || filter_channels_last(w)) || x_like.dim() != g.nd + 2 || y_like.dim() != g.nd + 2) {
    return false;
  }
  for (const Tensor* t : buffers) {
    if (reinterpret_cast<uintptr_t>(t->raw_data()) % 16 != 0) return false;
  }
  return true;
}

graph::ConvGraphSpec graph_spec_of(ConvPass pass, DType dtype, cudnnDataType_t compute, const Tensor& x_like,
                                   const Shape& w_shape, const Tensor& w, const Tensor& y_like, const ConvSpec& g,
                                   bool bias = false, std::optional<cudnnPointwiseMode_t> activation = std::nullopt) {
  return graph::ConvGraphSpec{.pass = pass,
                              .data = data_type(dtype),
                              .compute = compute,
                              .x_sizes = x_like.sizes(),
                              .x_strides = x_like.strides(),
                              .w_sizes = w_shape,
                              .w_strides = w.strides(),
                              .y_sizes = y_like.sizes(),
                              .y_strides = y_like.strides(),
                              .geometry = g,
                              .bias = bias,
                              .activation = activation};
}

void release_algorithm_cache() {
  std::lock_guard<std::mutex> lock(cache().mutex);
  cache().ranked.clear();
}
}  // namespace

// The graph candidates that build, each timed on `scratch` as output (in no order yet); those
// over the cap are kept with an infinite time, so the try loop can say why it skipped them.
template <ConvPass P>
std::vector<Candidate> time_graph(const ConvCall& c, std::vector<Candidate>& cands, size_t cap, void* scratch) {
  std::vector<Candidate> timed;
  Workspace lease(0, Workspace::Use::Search);  // Note [Workspaces]: the trials' bytes go back after
  for (Candidate& g : cands) {
    std::string why;
    if (!g.engine->build(c.handle, why)) continue;
    g.memory = g.engine->workspace();
    if (g.memory > cap) {
      g.time = std::numeric_limits<float>::max();
      timed.push_back(g);
      continue;
    }
    void* ws = nullptr;
    try {
      ws = lease.grow(g.memory);
    } catch (const tensor::Error&) {
      continue;
    }
    const std::array<void*, 3> p = graph_pointers<P>(c, scratch);
    graph::VariantPackCache pack;
    g.time = time_on_stream([&] { return g.engine->run(c.handle, p[0], p[1], p[2], ws, pack, c.bias); });
    if (g.time >= 0) timed.push_back(g);
  }
  return timed;
}

template <ConvPass P>
std::vector<Candidate> ConvPlan::Impl::rank(const ConvCall& c, bool timed, const std::string& what) {
  using T = Pass<P>;
  ++searches;
  tensor::cuda::register_shutdown_hook(&release_algorithm_cache);
  std::vector<Candidate> graph_cands = graph_candidates(c, P, timed, what);
  typename T::Perf perf[T::kCount];
  int got = 0;
  CUDNN_CHECK(T::heuristics(c, T::kCount, &got, perf));
  std::vector<Candidate> out;
  for (int i = 0; i < got; ++i) out.push_back(to_candidate(perf[i]));
  if (!timed) {
    graph_cands.insert(graph_cands.end(), out.begin(), out.end());
    return graph_cands;
  }
  // Timing runs the candidates: give it a scratch output (the real one may hold data to
  // accumulate into) and a workspace as large as the largest candidate that fits the cap.
  const size_t cap = workspace_cap();
  Tensor scratch = tensor::empty({static_cast<int64_t>(c.out_bytes)}, DType::UInt8, tensor::Device::cuda(c.device));
  std::vector<Candidate> ranked = time_graph<P>(c, graph_cands, cap, scratch.raw_data());
  size_t ws_bytes = 0;
  for (const auto& p : out) {
    if (p.status == CUDNN_STATUS_SUCCESS && p.memory <= cap) ws_bytes = std::max(ws_bytes, p.memory);
  }
  Workspace lease(0, Workspace::Use::Search);
  void* ws = nullptr;
  try {
    ws = lease.grow(ws_bytes);
  } catch (const tensor::Error&) {
    ws_bytes = 0;
    log(std::string("conv ") + pass_name(P) + " " + what + ": timing without workspace (allocation failed)");
  }
  CUDNN_CHECK(T::find(c, scratch.raw_data(), T::kCount, &got, perf, ws, ws_bytes));
  for (int i = 0; i < got; ++i) {
    if (perf[i].status == CUDNN_STATUS_SUCCESS) ranked.push_back(to_candidate(perf[i]));
  }
  // One list by time, graph engines and legacy algorithms alike.
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const Candidate& x, const Candidate& y) { return x.time < y.time; });
  // Algorithms Find could not time inside the workspace keep their heuristic rank after it.
  for (const auto& p : out) {
    bool present = false;
    for (const auto& q : ranked) present = present || (!q.engine && q.algo == p.algo);
    if (!present && p.status == CUDNN_STATUS_SUCCESS) ranked.push_back(p);
  }
  return ranked;
}

template <ConvPass P>
bool ConvPlan::Impl::try_engine(ConvCall& c, const ConvKey& key, cudnnDataType_t compute, const Candidate& cand,
                                DType dtype, const std::string& policy, const std::string& what, std::string& tried,
                                std::string& skipped, PassState& s) {
  graph::ConvEngine& e = *cand.engine;
  const std::string name = e.name();
  if (config().deterministic && !cand.deterministic) {
    skipped += "; skipped " + name + ": not deterministic";
    return false;
  }
  if (dtype == DType::Float32 && !config().allow_tf32 && e.has_note(CUDNN_NUMERICAL_NOTE_TENSOR_CORE)) {
    return false;  // TF32 tensor cores, which allow_tf32=false rules out
  }
  std::string why;
  if (!e.build(c.handle, why)) {
    skipped += "; skipped " + name + ": " + why;
    return false;
  }
  const size_t cap = workspace_cap();
  const size_t ws_bytes = e.workspace();
  if (ws_bytes > cap) {
    skipped += "; skipped " + name + ": workspace " + bytes_str(ws_bytes) + " > cap " + bytes_str(cap);
    return false;
  }
  Workspace lease;
  void* ws = nullptr;
  if (ws_bytes) {
    try {
      ws = lease.grow(ws_bytes);
    } catch (const tensor::Error&) {
      skipped += "; skipped " + name + ": could not allocate " + bytes_str(ws_bytes);
      return false;
    }
  }
  const cudnnStatus_t st = run_engine<P>(c, e, ws, s.pack);
  tried += (tried.empty() ? "" : ", ") + name;
  if (st != CUDNN_STATUS_SUCCESS) {
    if (!retryable(st)) detail::throw_cudnn_error(st, "cudnnBackendExecute (selected engine)", __FILE__, __LINE__);
    skipped += "; " + name + " failed to run: " + cudnnGetErrorString(st);
    return false;
  }
  s.valid = true;
  s.key = key;
  s.algo = cand.algo;
  s.compute = compute;
  s.ws = ws_bytes;
  s.engine = cand.engine;
  log(std::string("conv ") + pass_name(P) + " " + what + ": chose " + name + " (" + policy + ", workspace " +
      bytes_str(ws_bytes) + ")" + skipped);
  return true;
}

template <ConvPass P>
bool ConvPlan::Impl::try_in_order(ConvCall& c, const ConvKey& key, cudnnDataType_t compute,
                                  const std::vector<Candidate>& cands, DType dtype, const std::string& policy,
                                  const std::string& what, std::string& tried) {
  using T = Pass<P>;
  const Config& cfg = config();
  const size_t cap = workspace_cap();
  std::string skipped;
  for (const Candidate& cand : cands) {
    if (cand.engine) {
      if (try_engine<P>(c, key, compute, cand, dtype, policy, what, tried, skipped, state[static_cast<int>(P)])) {
        return true;
      }
      continue;
    }
    const char* name = algo_name(P, cand.algo);
    if (cand.status != CUDNN_STATUS_SUCCESS) continue;
    if (cfg.deterministic && (!cand.deterministic || !deterministic(P, cand.algo))) {
      skipped += std::string("; skipped ") + name + ": not deterministic";
      continue;
    }
    if (dtype == DType::Float32 && cand.math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)
      continue;  // would round to float16
    if (cand.memory > cap) {
      skipped += std::string("; skipped ") + name + ": workspace " + bytes_str(cand.memory) + " > cap " +
                 bytes_str(cap) + (use_fastest() ? " (free memory)" : " (workspace_limit or free memory)");
      continue;
    }
    const cudnnMathType_t math = default_math(dtype) == CUDNN_FMA_MATH ? CUDNN_FMA_MATH : cand.math;
    conv_desc.set_math(math);
    size_t ws_bytes = cand.memory;
    // A fixed or remembered algorithm's size was asked for these shapes; re-ask after a math change.
    if (T::workspace(c, cand.algo, &ws_bytes) != CUDNN_STATUS_SUCCESS) {
      skipped += std::string("; skipped ") + name + ": not supported with this math mode";
      continue;
    }
    Workspace lease;
    void* ws = nullptr;
    if (ws_bytes) {
      try {
        ws = lease.grow(ws_bytes);
      } catch (const tensor::Error&) {
        skipped += std::string("; skipped ") + name + ": could not allocate " + bytes_str(ws_bytes);
        continue;
      }
    }
    const cudnnStatus_t st = T::run(c, cand.algo, ws, ws_bytes);
    tried += std::string(tried.empty() ? "" : ", ") + name;
    if (st == CUDNN_STATUS_SUCCESS) {
      PassState& s = state[static_cast<int>(P)];
      s.valid = true;
      s.key = key;
      s.algo = cand.algo;
      s.math = math;
      s.compute = compute;
      s.ws = ws_bytes;
      s.engine.reset();
      if (s.once_algo < 0) s.once_algo = cand.algo;
      log(std::string("conv ") + pass_name(P) + " " + what + ": chose " + name + " (" + policy + ", workspace " +
          bytes_str(ws_bytes) + (math == CUDNN_FMA_MATH ? ", FMA math" : "") + ")" + skipped);
      return true;
    }
    if (!retryable(st)) detail::throw_cudnn_error(st, "cudnnConvolution (selected algorithm)", __FILE__, __LINE__);
    skipped += std::string("; ") + name + " failed to run: " + cudnnGetErrorString(st);
  }
  if (!skipped.empty()) tried += " [" + skipped.substr(2) + "]";
  return false;
}

template <ConvPass P>
ConvKey ConvPlan::Impl::make_key(const Tensor& a, const Tensor& x_like, const Tensor& y_like, const Shape& w_shape,
                                 const ConvSpec& g, cudnnDataType_t compute, bool timed, bool graph) const {
  const Config& cfg = config();
  ConvKey key;
  std::memset(&key, 0, sizeof key);
  key.pass = static_cast<int32_t>(P);
  key.device = a.device().index;
  key.dtype = static_cast<int32_t>(a.dtype());
  key.compute = compute;
  key.tf32 = cfg.allow_tf32;
  key.deterministic = cfg.deterministic;
  key.timed = timed;
  key.nd = g.nd;
  key.groups = static_cast<int32_t>(g.groups);
  key.cross = g.cross_correlation;
  fill_dims(key.x, x_like.sizes());
  fill_dims(key.w, w_shape);
  fill_dims(key.y, y_like.sizes());
  for (int64_t i = 0; i < x_like.dim() && i < 5; ++i) key.x_stride[i] = x_like.stride(i);
  for (int64_t i = 0; i < y_like.dim() && i < 5; ++i) key.y_stride[i] = y_like.stride(i);
  key.graph = graph;
  if (graph) key.handle = handle_serial();
  for (int i = 0; i < 3; ++i) {
    key.pad[i] = static_cast<int32_t>(g.pad[i]);
    key.stride[i] = static_cast<int32_t>(g.stride[i]);
    key.dilation[i] = static_cast<int32_t>(g.dilation[i]);
  }
  return key;
}

template <ConvPass P>
std::vector<Candidate> ConvPlan::Impl::candidates(const ConvCall& c, const AlgoSetting& setting, const ConvKey& key,
                                                  bool timed, const ConvSpec& g, DType dtype, const std::string& what,
                                                  std::string& policy) {
  policy = setting.name;
  const PassState& st = state[static_cast<int>(P)];
  if (setting.policy == AlgoSetting::Policy::Fixed) {
    const ConvAlgorithm& pinned = *find_algorithm(P, setting.algo);
    if (g.nd == 3 && !pinned.in_3d) {
      log(std::string("conv ") + pass_name(P) + " " + what + ": conv.algo_" + pass_name(P) + "=" + setting.name +
          " is not available in 3-D; falling back to guess_on_shape_change");
      policy = std::string("guess_on_shape_change (3-D fallback from ") + setting.name + ")";
    } else if (config().deterministic && !pinned.deterministic) {
      throw tensor::Error(where_of(P) + "conv.algo_" + pass_name(P) + "=" + setting.name + " (" + pinned.cudnn_name +
                          ") is not deterministic but deterministic=true is set");
    } else if (auto one = candidate_of<P>(c, setting.algo, dtype)) {
      return {*one};
    } else {
      log(std::string("conv ") + pass_name(P) + " " + what + ": " + pinned.cudnn_name +
          " does not support this configuration; falling back to guess_on_shape_change");
      policy = std::string("guess_on_shape_change (fallback from ") + setting.name + ")";
    }
  } else if (setting.once() && st.once_algo >= 0) {
    if (auto one = candidate_of<P>(c, st.once_algo, dtype)) return {*one};
  }
  {
    std::lock_guard<std::mutex> lock(cache().mutex);
    const std::vector<Candidate>* found = cache().find(key);
    if (found && !found->empty()) return *found;
  }
  std::vector<Candidate> ranked = rank<P>(c, timed, what);
  std::lock_guard<std::mutex> lock(cache().mutex);
  cache().put(key, ranked);
  return ranked;
}

template <ConvPass P>
void ConvPlan::Impl::execute(const Tensor& a, const Tensor& b, const Tensor& out, const Tensor& x_like,
                             const Tensor& y_like, const Shape& w_shape, const ConvSpec& g, double alpha, double beta) {
  using T = Pass<P>;
  const DType dtype = a.dtype();
  tensor::cuda::DeviceGuard guard(a.device().index);
  const Config& cfg = config();
  const std::optional<AlgoSetting>& pinned = choices.mode[static_cast<int>(P)];
  const AlgoSetting& setting = pinned ? *pinned : cfg.algo(P);
  const bool timed = setting.policy != AlgoSetting::Policy::Fixed && (setting.timed() || cfg.benchmark);
  // keyed by the requested compute type; the state records what ran
  const cudnnDataType_t requested = compute_type(dtype, precision, P);
  // Graph engines: see Note [Candidates] for when they are offered.
  const Tensor& w = P == ConvPass::Forward ? b : P == ConvPass::BackwardData ? a : out;
  const bool graph = graph_eligible(setting, g, x_like, w, y_like, {&a, &b, &out}) &&
                     ((alpha == 1 && beta == 0) || out.is_contiguous());
  ConvKey key = make_key<P>(a, x_like, y_like, w_shape, g, requested, timed, graph);
  const bool w_channels_last = filter_channels_last(w);
  key.w_channels_last = w_channels_last;
  graph::ConvGraphSpec graph_spec;
  auto make_call = [&](cudnnDataType_t compute, cudnnMathType_t math) {
    if (graph) graph_spec = graph_spec_of(P, dtype, compute, x_like, w_shape, w, y_like, g);
    return ConvCall{handle(),
                    x_desc.set(x_like, g.nd + 2),
                    y_desc.set(y_like, g.nd + 2),
                    w_desc.set(dtype, w_shape, w_channels_last),
                    conv_desc.set(g, compute, math),
                    a.raw_data(),
                    b.raw_data(),
                    out.raw_data(),
                    Scalar(alpha, dtype),
                    Scalar(beta, dtype),
                    out.nbytes(),
                    a.device().index,
                    graph ? &graph_spec : nullptr,
                    &out,
                    alpha,
                    beta};
  };

  // Steady state: same key as last time, straight to cuDNN.
  PassState& st = state[static_cast<int>(P)];
  if (st.valid && st.key == key) {
    const Workspace lease(st.ws);
    void* ws = lease.data();
    ConvCall c = make_call(st.compute, st.math);
    if (st.engine) {
      const cudnnStatus_t status = run_engine<P>(c, *st.engine, ws, st.pack);
      if (status != CUDNN_STATUS_SUCCESS) detail::throw_cudnn_error(status, "cudnnBackendExecute", __FILE__, __LINE__);
      return;
    }
    CUDNN_CHECK(T::run(c, st.algo, ws, st.ws));
    return;
  }

  cudnnDataType_t compute = requested;
  for (int attempt = 0; attempt < 2; ++attempt) {
    ConvCall c = make_call(compute, default_math(dtype));
    ConvKey cache_key = key;
    cache_key.compute = compute;
    const int first = g.first();
    std::ostringstream what_os;
    what_os << tensor::name(dtype) << (compute == CUDNN_DATA_HALF ? "(f16 math)" : "") << " x"
            << tensor::shape_str(x_like.sizes()) << " w" << tensor::shape_str(w_shape) << " stride " << g.stride[first]
            << "," << g.stride[first + 1] << " pad " << g.pad[first] << "," << g.pad[first + 1] << " dilation "
            << g.dilation[first] << "," << g.dilation[first + 1] << " groups " << g.groups;
    const std::string what = what_os.str();

    std::string policy;
    const std::vector<Candidate> cands = candidates<P>(c, setting, cache_key, timed, g, dtype, what, policy);
    std::string tried;
    if (try_in_order<P>(c, key, compute, cands, dtype, policy, what, tried)) return;
    // Last resort: the algorithm that needs no workspace.
    if (auto last = candidate_of<P>(c, last_resort(P, cfg.deterministic).algo, dtype)) {
      if (try_in_order<P>(c, key, compute, {*last}, dtype, "last resort", what, tried)) return;
    }
    if (compute == CUDNN_DATA_HALF) {
      log(std::string("conv ") + pass_name(P) + " " + what + ": no float16-math algorithm ran (" + tried +
          "); retrying with float32 math");
      compute = CUDNN_DATA_FLOAT;
      continue;
    }
    throw tensor::Error(where_of(P) + "no algorithm could run for " + what +
                        "; tried: " + (tried.empty() ? "none" : tried));
  }
}

// Note [Fusion]
// forward_fused runs y = act(conv(x, w) + bias) as one operation graph (conv -> virtual float
// -> + bias -> virtual float -> act -> y), so the bias and activation cost no extra pass over
// y. Only graph engines can: the candidates are the fused graph's engines alone (keyed apart
// from the plain forward by ConvKey::fusion), under the same filters, cap and policies as
// Note [Candidates]; when none runs the plan remembers the key and answers false, and the
// caller (cudnn::ConvolutionBase, set up by cudnn::fuse) runs conv, bias and activation as
// three steps. The fused and unfused results agree to rounding (the epilogue adds in float).
//
// Note [Fusing a bias alone]
// cudnn::fuse also gives conv + bias to one graph operation where no activation follows (the
// convolutions before ResNet's batch norms). Its candidates are the fused graph's engines only,
// and for most shapes the best of them is slower than the plain convolution's best followed by
// our bias kernel (ResNet-50 forward as a whole: float32 8.04 -> 8.26 ms, float16 5.26 -> 6.39
// on an H100), while for others it is faster (L1 in float32: 2.60 -> 2.15 ms). So a bias alone
// fuses only in a timed search, and only where its best engine beats conv + bias timed the same
// way; otherwise the key is remembered as refused, as when no fused engine runs.
namespace {
void add_bias_with(TensorDescriptor& yd, TensorDescriptor& bd, const Tensor& y, const Tensor& bias);
}  // namespace

bool ConvPlan::Impl::forward_fused(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y,
                                   const ConvSpec& g, std::optional<Activation> act) {
  constexpr ConvPass P = ConvPass::Forward;
  const Config& cfg = config();
  const AlgoSetting& setting = choices.mode[static_cast<int>(P)] ? *choices.mode[static_cast<int>(P)] : cfg.algo(P);
  std::optional<cudnnPointwiseMode_t> mode;
  if (act) {
    switch (*act) {
      case Activation::Relu:
        mode = CUDNN_POINTWISE_RELU_FWD;
        break;
      case Activation::Tanh:
        mode = CUDNN_POINTWISE_TANH_FWD;
        break;
      case Activation::Sigmoid:
        mode = CUDNN_POINTWISE_SIGMOID_FWD;
        break;
      default:
        return false;
    }
  }
  const Tensor& bias_or_x = bias.defined() ? bias : x;  // the buffers to align: bias when there is one
  if (!graph_eligible(setting, g, x, w, y, {&x, &w, &y, &bias_or_x}) || (bias.defined() && !bias.is_contiguous())) {
    return false;
  }
  const DType dtype = x.dtype();
  tensor::cuda::DeviceGuard guard(x.device().index);
  const bool timed = setting.timed() || cfg.benchmark;
  if (!mode && !timed) return false;  // Note [Fusing a bias alone]: only where timing says so
  const cudnnDataType_t compute = compute_type(dtype, precision, P);
  ConvKey key = make_key<P>(x, x, y, w.sizes(), g, compute, timed, true);
  key.w_channels_last = filter_channels_last(w);
  key.fusion = 1 + (bias.defined() ? 1 : 0) + 2 * (mode ? 1 + static_cast<int32_t>(*mode) : 0);
  if (has_refused && fused_refused == key) return false;
  const graph::ConvGraphSpec spec = graph_spec_of(P, dtype, compute, x, w.sizes(), w, y, g, bias.defined(), mode);
  ConvCall c{handle(),
             nullptr,
             nullptr,
             nullptr,
             nullptr,
             x.raw_data(),
             w.raw_data(),
             y.raw_data(),
             Scalar(1, dtype),
             Scalar(0, dtype),
             y.nbytes(),
             x.device().index,
             &spec,
             &y,
             1,
             0,
             bias.defined() ? bias.raw_data() : nullptr};
  if (fused.valid && fused.key == key) {
    const Workspace lease(fused.ws);
    void* ws = lease.data();
    const cudnnStatus_t status = run_engine<P>(c, *fused.engine, ws, fused.pack);
    if (status != CUDNN_STATUS_SUCCESS)
      detail::throw_cudnn_error(status, "cudnnBackendExecute (fused)", __FILE__, __LINE__);
    return true;
  }
  const std::string what = std::string("fused ") + tensor::name(dtype) + " x" + tensor::shape_str(x.sizes()) + " w" +
                           tensor::shape_str(w.sizes()) + (bias.defined() ? " + bias" : "") +
                           (act ? " + activation" : "");
  std::vector<Candidate> cands;
  bool cached = false;
  {
    std::lock_guard<std::mutex> lock(cache().mutex);
    if (const std::vector<Candidate>* found = cache().find(key)) {
      cands = *found;
      cached = true;
    }
  }
  if (!cached) {
    ++searches;
    tensor::cuda::register_shutdown_hook(&release_algorithm_cache);
    cands = graph_candidates(c, P, timed, what);
    if (timed && !cands.empty()) {
      Tensor scratch = tensor::empty({static_cast<int64_t>(c.out_bytes)}, DType::UInt8, x.device());
      cands = time_graph<P>(c, cands, workspace_cap(), scratch.raw_data());
      std::stable_sort(cands.begin(), cands.end(),
                       [](const Candidate& a, const Candidate& b) { return a.time < b.time; });
      if (!mode && bias.defined() && !cands.empty()) {  // Note [Fusing a bias alone]
        // into y, which the caller computes again either way; the warm-up run does the search
        const float apart = time_on_stream([&] {
          execute<P>(x, w, y, x, y, w.sizes(), g, 1, 0);
          add_bias_with(bias_data_desc, bias_desc, y, bias);
          return CUDNN_STATUS_SUCCESS;
        });
        if (apart >= 0 && cands.front().time >= apart) {
          log("conv fwd " + what + ": conv and bias apart are faster (" + std::to_string(apart) +
              " ms against the best fused engine's " + std::to_string(cands.front().time) + " ms)");
          cands.clear();
        }
      }
    }
    std::lock_guard<std::mutex> lock(cache().mutex);
    cache().put(key, cands);
  }
  std::string tried, skipped;
  for (const Candidate& cand : cands) {
    if (try_engine<P>(c, key, compute, cand, dtype, timed ? "fused, timed" : "fused", what, tried, skipped, fused)) {
      return true;
    }
  }
  log("conv fwd " + what + ": no fused engine ran (" + (tried.empty() ? "none tried" : tried) + skipped +
      "); computing conv, bias and activation apart");
  fused_refused = key;
  has_refused = true;
  return false;
}

ConvPlan::ConvPlan() : impl_(std::make_unique<Impl>()) {}
ConvPlan::~ConvPlan() = default;
ConvPlan::ConvPlan(ConvPlan&&) noexcept = default;
ConvPlan& ConvPlan::operator=(ConvPlan&&) noexcept = default;

ConvChoices ConvChoices::parse(const std::string& fwd, const std::string& bwd_filter, const std::string& bwd_data,
                               bool fastest) {
  ConvChoices c;
  auto one = [&](ConvPass pass, const std::string& name) {
    if (!name.empty()) c.mode[static_cast<int>(pass)] = AlgoSetting::parse(pass, name);
  };
  one(ConvPass::Forward, fwd);
  one(ConvPass::BackwardFilter, bwd_filter);
  one(ConvPass::BackwardData, bwd_data);
  if (fastest) c.fastest = true;  // off: the global flag decides
  return c;
}

void ConvPlan::setChoices(const ConvChoices& c) {
  if (impl_->choices.mode != c.mode) {
    impl_->choices.mode = c.mode;
    for (auto& s : impl_->state) s = PassState{};
  }
  setFastest(c.fastest);
}

void ConvPlan::setMode(const std::string& fwd, const std::string& bwd_filter, const std::string& bwd_data) {
  ConvChoices c = ConvChoices::parse(fwd, bwd_filter, bwd_data, false);
  c.fastest = impl_->choices.fastest;
  setChoices(c);
}

void ConvPlan::resetMode() {
  impl_->choices = ConvChoices{};
  for (auto& s : impl_->state) s = PassState{};
}

void ConvPlan::setFastest(std::optional<bool> on) {
  if (impl_->choices.fastest == on) return;
  impl_->choices.fastest = on;
  for (auto& s : impl_->state) s.valid = false;
}

void ConvPlan::setPrecision(std::optional<Precision> p) {
  impl_->precision = p;
  for (auto& s : impl_->state) s.valid = false;
}

const ConvChoices& ConvPlan::choices() const { return impl_->choices; }
std::string_view ConvPlan::mode(ConvPass pass) const {
  const std::optional<AlgoSetting>& m = impl_->choices.mode[static_cast<int>(pass)];
  return m ? m->name : "";
}
int ConvPlan::algorithm(ConvPass pass) const { return impl_->state[static_cast<int>(pass)].algo; }
size_t ConvPlan::workspace_bytes(ConvPass pass) const { return impl_->state[static_cast<int>(pass)].ws; }
int ConvPlan::searches() const { return impl_->searches; }
int ConvPlan::fused_algorithm() const { return impl_->fused.valid ? impl_->fused.algo : -1; }

bool ConvPlan::forward_fused(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y, const ConvSpec& g,
                             std::optional<Activation> act) {
  return impl_->forward_fused(x, w, bias, y, g, act);
}

void ConvPlan::forward(const Tensor& x, const Tensor& w, const Tensor& y, const ConvSpec& g, double alpha,
                       double beta) {
  impl_->execute<ConvPass::Forward>(x, w, y, x, y, w.sizes(), g, alpha, beta);
}

void ConvPlan::backward_data(const Tensor& w, const Tensor& dy, const Tensor& dx, const ConvSpec& g, double alpha,
                             double beta) {
  impl_->execute<ConvPass::BackwardData>(w, dy, dx, dx, dy, w.sizes(), g, alpha, beta);
}

void ConvPlan::backward_filter(const Tensor& x, const Tensor& dy, const Tensor& dw, const ConvSpec& g, double alpha,
                               double beta) {
  impl_->execute<ConvPass::BackwardFilter>(x, dy, dw, x, dy, dw.sizes(), g, alpha, beta);
}

void clear_algorithm_cache() { release_algorithm_cache(); }

size_t algorithm_cache_size() {
  std::lock_guard<std::mutex> lock(cache().mutex);
  return cache().ranked.size();
}

// ------------------------------------------------------------------------------ bias

// Note [Bias without cuDNN]
// Dense outputs (row-major or channels-last) take the kernels of kernels/Bias.cu, which are
// several times faster (Note [Bias kernels] there); other layouts take cuDNN's calls below.
// cudnnAddTensor and cudnnConvolutionBackwardBias are legacy calls whose documentation does
// not list the dtypes they take (bfloat16 is the doubtful one). Where cuDNN answers
// NOT_SUPPORTED (or, for bfloat16, BAD_PARAM) the same arithmetic runs on the tensor layer's
// CUDA kernels instead: a broadcast add, and two sums that accumulate in float32. That path
// allocates temporaries (through the caching allocator) and says so once per dtype in
// verbose mode; every other status is an error as usual.

namespace {
Shape bias_shape(const Tensor& y) {
  Shape s(static_cast<size_t>(std::max<int64_t>(y.dim(), 4)), 1);
  s[1] = y.size(1);
  return s;
}

bool bias_unsupported(cudnnStatus_t st, DType dtype, const char* call) {
  const bool fallback = CUDNN_STATUS_CATEGORY(st) == CUDNN_STATUS_NOT_SUPPORTED ||
                        (dtype == DType::BFloat16 && CUDNN_STATUS_CATEGORY(st) == CUDNN_STATUS_BAD_PARAM);
  if (!fallback) return false;
  static std::mutex mutex;
  static unsigned said = 0;
  std::lock_guard<std::mutex> lock(mutex);
  const unsigned bit = 1u << (static_cast<unsigned>(dtype) % 32);
  if (!(said & bit)) {
    said |= bit;
    log(std::string(call) + " does not take " + tensor::name(dtype) + " data (" + cudnnGetErrorString(st) +
        "): using the tensor kernels instead");
  }
  return true;
}

void add_bias_with(TensorDescriptor& yd, TensorDescriptor& bd, const Tensor& y, const Tensor& bias) {
  if (kernels::bias_add(y, bias.view({bias.numel()}))) return;  // Note [Bias kernels] in kernels/Bias.cu
  tensor::cuda::DeviceGuard guard(y.device().index);
  const Tensor b = bias.view(bias_shape(y));
  const cudnnStatus_t st = cudnnAddTensor(handle(), Scalar(1, y.dtype()).ptr(), bd.set(b), b.raw_data(),
                                          Scalar(1, y.dtype()).ptr(), yd.set(y), y.raw_data());
  if (st == CUDNN_STATUS_SUCCESS) return;
  if (!bias_unsupported(st, y.dtype(), "cudnnAddTensor"))
    detail::throw_cudnn_error(st, "cudnnAddTensor", __FILE__, __LINE__);
  Tensor(y).add_(b);
}

void backward_bias_with(TensorDescriptor& dyd, TensorDescriptor& dbd, const Tensor& dy, const Tensor& db, double alpha,
                        double beta) {
  if (kernels::bias_grad(dy, db.view({db.numel()}), alpha, beta)) return;  // Note [Bias kernels] in kernels/Bias.cu
  tensor::cuda::DeviceGuard guard(dy.device().index);
  const Tensor b = db.view(bias_shape(dy));
  const cudnnStatus_t st =
      cudnnConvolutionBackwardBias(handle(), Scalar(alpha, dy.dtype()).ptr(), dyd.set(dy), dy.raw_data(),
                                   Scalar(beta, dy.dtype()).ptr(), dbd.set(b), b.raw_data());
  if (st == CUDNN_STATUS_SUCCESS) return;
  if (!bias_unsupported(st, dy.dtype(), "cudnnConvolutionBackwardBias")) {
    detail::throw_cudnn_error(st, "cudnnConvolutionBackwardBias", __FILE__, __LINE__);
  }
  const int64_t C = dy.size(1);
  const Tensor sums = dy.reshape({dy.size(0), C, -1}).sum(2).sum(0);
  Tensor flat = db.view({C});
  if (beta == 0)
    flat.zero_();  // beta 0 ignores what db held, NaN included
  else if (beta != 1)
    flat.mul_(beta);
  flat.add_(sums, alpha);
}
}  // namespace

void add_bias(const Tensor& y, const Tensor& bias) {
  TensorDescriptor yd, bd;
  add_bias_with(yd, bd, y, bias);
}

void backward_bias(const Tensor& dy, const Tensor& db, double alpha, double beta) {
  TensorDescriptor dyd, dbd;
  backward_bias_with(dyd, dbd, dy, db, alpha, beta);
}

void ConvPlan::add_bias(const Tensor& y, const Tensor& bias) {
  add_bias_with(impl_->bias_data_desc, impl_->bias_desc, y, bias);
}

void ConvPlan::backward_bias(const Tensor& dy, const Tensor& db, double alpha, double beta) {
  backward_bias_with(impl_->bias_data_desc, impl_->bias_desc, dy, db, alpha, beta);
}

// ------------------------------------------------------------------------------ functional

ConvSpec conv_spec(const ConvParams& p, const Shape& kerns) {
  ConvSpec g;
  g.nd = static_cast<int>(kerns.size()) - 2;
  if (g.nd != 2 && g.nd != 3) {
    throw tensor::Error("cudnn::conv: expected 4-d or 5-d kernels, got " + tensor::shape_str(kerns));
  }
  auto per_dim = [&](const std::vector<int>& v, const char* name, nn::Dims& out, int lo) {
    if (v.empty()) return;
    if (static_cast<int>(v.size()) != g.nd) {
      throw tensor::Error(std::string("cudnn::conv: ") + name + " needs " + std::to_string(g.nd) + " values, got " +
                          std::to_string(v.size()));
    }
    for (int i = 0; i < g.nd; ++i) {
      if (v[i] < lo) throw tensor::Error(std::string("cudnn::conv: ") + name + " must be >= " + std::to_string(lo));
      out[g.first() + i] = v[i];
    }
  };
  per_dim(p.subsample, "subsample", g.stride, 1);
  per_dim(p.dilation, "dilation", g.dilation, 1);
  for (int i = 0; i < g.nd; ++i) {
    const int d = g.first() + i;
    const int k = static_cast<int>(kerns[2 + i]);
    g.k[d] = k;
    switch (p.border_mode.kind) {
      case BorderMode::Kind::Valid:
        g.pad[d] = 0;
        break;
      case BorderMode::Kind::Full:
        g.pad[d] = g.dilation[d] * (k - 1);  // in int64: no int overflow for huge dilations
        break;
      case BorderMode::Kind::Half:
        g.pad[d] = g.dilation[d] * (k - 1) / 2;
        break;
      case BorderMode::Kind::Explicit:
        break;
    }
  }
  if (p.border_mode.kind == BorderMode::Kind::Explicit) per_dim(p.border_mode.pad, "border_mode pads", g.pad, 0);
  if (p.groups < 1) throw tensor::Error("cudnn::conv: groups must be >= 1");
  g.groups = p.groups;
  g.cross_correlation = p.conv_mode == ConvParams::Mode::Cross;
  return g;
}

Shape conv_output_shape(const Shape& img, const Shape& kerns, const ConvSpec& g, const std::string& where) {
  if (img.size() != kerns.size() || static_cast<int>(img.size()) != g.nd + 2) {
    throw tensor::Error(where + "expected input and kernels of rank " + std::to_string(g.nd + 2) + ", got " +
                        tensor::shape_str(img) + " and " + tensor::shape_str(kerns));
  }
  if (img[1] != kerns[1] * g.groups || kerns[0] % g.groups != 0) {
    throw tensor::Error(where + "input " + tensor::shape_str(img) + " has " + std::to_string(img[1]) +
                        " channels, kernels " + tensor::shape_str(kerns) + " with groups " + std::to_string(g.groups) +
                        " expect " + std::to_string(kerns[1] * g.groups));
  }
  Shape out = {img[0], kerns[0]};
  for (int i = 0; i < g.nd; ++i) {
    const int d = g.first() + i;
    const int64_t span = g.dilation[d] * (kerns[2 + i] - 1) + 1;
    const int64_t padded = img[2 + i] + 2 * g.pad[d];
    if (padded < span) {
      throw tensor::Error(where + "input " + tensor::shape_str(img) + " is too small for kernels " +
                          tensor::shape_str(kerns) + " (padded size " + std::to_string(padded) + " < kernel extent " +
                          std::to_string(span) + ")");
    }
    out.push_back((padded - span) / g.stride[d] + 1);
  }
  return out;
}

namespace {
ConvPlan functional_plan(const ConvParams& p, ConvPass pass) {
  ConvPlan plan;
  if (!p.algo.empty()) {
    plan.setMode(pass == ConvPass::Forward ? p.algo : "", pass == ConvPass::BackwardFilter ? p.algo : "",
                 pass == ConvPass::BackwardData ? p.algo : "");
  }
  plan.setPrecision(p.precision);
  return plan;
}
}  // namespace

Tensor conv(const Tensor& img, const Tensor& kerns, const ConvParams& p) {
  const std::string where = "cudnn::conv: ";
  check_cuda(where, img, "img");
  check_cuda(where, kerns, "kerns");
  check_same(where, img, "img", kerns, "kerns");
  const ConvSpec g = conv_spec(p, kerns.sizes());
  Tensor y = tensor::empty(conv_output_shape(img.sizes(), kerns.sizes(), g, where), img.dtype(), img.device());
  functional_plan(p, ConvPass::Forward).forward(img.contiguous(), kerns.contiguous(), y, g);
  return y;
}

Tensor conv_grad_input(const Tensor& kerns, const Tensor& topgrad, const Shape& img_shape, const ConvParams& p) {
  const std::string where = "cudnn::conv_grad_input: ";
  check_cuda(where, kerns, "kerns");
  check_cuda(where, topgrad, "topgrad");
  check_same(where, kerns, "kerns", topgrad, "topgrad");
  const ConvSpec g = conv_spec(p, kerns.sizes());
  const Shape expected = conv_output_shape(img_shape, kerns.sizes(), g, where);
  if (expected != topgrad.sizes()) {
    throw tensor::Error(where + "topgrad " + tensor::shape_str(topgrad.sizes()) + " does not match the output " +
                        tensor::shape_str(expected) + " of an input " + tensor::shape_str(img_shape));
  }
  Tensor dx = tensor::empty(img_shape, kerns.dtype(), kerns.device());
  functional_plan(p, ConvPass::BackwardData).backward_data(kerns.contiguous(), topgrad.contiguous(), dx, g);
  return dx;
}

Tensor conv_grad_weight(const Tensor& img, const Tensor& topgrad, const Shape& kerns_shape, const ConvParams& p) {
  const std::string where = "cudnn::conv_grad_weight: ";
  check_cuda(where, img, "img");
  check_cuda(where, topgrad, "topgrad");
  check_same(where, img, "img", topgrad, "topgrad");
  const ConvSpec g = conv_spec(p, kerns_shape);
  const Shape expected = conv_output_shape(img.sizes(), kerns_shape, g, where);
  if (expected != topgrad.sizes()) {
    throw tensor::Error(where + "topgrad " + tensor::shape_str(topgrad.sizes()) + " does not match the output " +
                        tensor::shape_str(expected) + " of kernels " + tensor::shape_str(kerns_shape));
  }
  Tensor dw = tensor::empty(kerns_shape, img.dtype(), img.device());
  functional_plan(p, ConvPass::BackwardFilter).backward_filter(img.contiguous(), topgrad.contiguous(), dw, g);
  return dw;
}

}  // namespace cudnn

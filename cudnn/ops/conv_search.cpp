// conv_search.cpp: the algorithm selection behind every convolution pass, a fused forward
// included (one pipeline: Note [Fusion]).
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <limits>
#include <mutex>
#include <sstream>
#include <tuple>
#include <utility>

#include "cudnn/core/Handle.h"
#include "cudnn/ops/conv_plan.h"
#include "tensor/Cuda.h"
#include "tensor/EnumTable.h"

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
//                (workspace_limit unless fastest, never more than the memory obtainable; a
//                timed search's list holds only those within its trial cap, the ones within a
//                tolerance of the fastest smallest workspace first: Note [Trial workspaces]); one
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
// (an AlexNet 3x3 conv: legacy best 0.455 ms, graph engines 0.134, ../CUDNN9-NOTES.md).
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
//
// Note [Heuristics modes]
// cuDNN ranks a graph's engines by one of its heuristics modes: A, the instant one that
// PyTorch's default path asks, or B, slower to ask and meant to be more accurate. A guess runs
// the first engine of the list that works, so the mode decides the default path's kernel: with
// conv.heuristics=b the list is mode B's ranking, then the engines only A names, then the
// fallback list (a graph B cannot rank keeps A's). The choice is still a pure function of the
// shapes and flags (no timing), so a run and its resumed copy compute the same bits. Both lists
// are cached per key (ConvKey::heuristics); the question costs once per shape.

namespace conv_detail {

bool operator==(const ConvKey& a, const ConvKey& b) { return std::memcmp(&a, &b, sizeof a) == 0; }

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

void Trace::say(const std::string& line) const {
  log(std::string("conv ") + pass_name(pass) + " " + what + ": " + line);
}

void Trace::failed(const std::string& name, cudnnStatus_t st) {
  skipped += "; " + name + " failed to run: " + cudnnGetErrorString(st);
}

void Trace::chose(const std::string& name, size_t workspace, const char* extra) const {
  say("chose " + name + " (" + policy + ", workspace " + bytes_str(workspace) + extra + ")" + skipped);
}

void Trace::close_loop() {
  if (!skipped.empty()) tried += " [" + skipped.substr(2) + "]";
  skipped.clear();
}

}  // namespace conv_detail

using namespace conv_detail;

namespace {

// The (x, w, y) of a pass in the graph's terms (Uid), from the problem's (a, b, out), with the
// output replaced by `out` (a scratch buffer while timing).
template <ConvPass P>
std::array<void*, 3> graph_pointers(const ConvProblem& c, void* out) {
  auto* a = const_cast<void*>(c.a);
  auto* b = const_cast<void*>(c.b);
  if constexpr (P == ConvPass::Forward)
    return {a, b, out};
  else if constexpr (P == ConvPass::BackwardData)
    return {out, a, b};
  else
    return {a, out, b};
}

// The legacy cuDNN calls of a pass. Every pass's four functions take their descriptors in one
// order, (input, input, convolution, output) with the pointers beside them, so a pass names
// only its functions and which descriptors are its two inputs and its output: forward (x, w)
// -> y, backward data (w, dy) -> dx, backward filter (x, dy) -> dw.
template <ConvPass P>
struct Api;

template <>
struct Api<ConvPass::Forward> {
  using Perf = cudnnConvolutionFwdAlgoPerf_t;
  using Algo = cudnnConvolutionFwdAlgo_t;
  static constexpr int kCount = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
  static constexpr auto heuristics = cudnnGetConvolutionForwardAlgorithm_v7;
  static constexpr auto find = cudnnFindConvolutionForwardAlgorithmEx;
  static constexpr auto workspace = cudnnGetConvolutionForwardWorkspaceSize;
  static constexpr auto run = cudnnConvolutionForward;
  static auto descriptors(const ConvProblem& c) { return std::tuple(c.x_desc, c.w_desc, c.y_desc); }
};

template <>
struct Api<ConvPass::BackwardData> {
  using Perf = cudnnConvolutionBwdDataAlgoPerf_t;
  using Algo = cudnnConvolutionBwdDataAlgo_t;
  static constexpr int kCount = CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
  static constexpr auto heuristics = cudnnGetConvolutionBackwardDataAlgorithm_v7;
  static constexpr auto find = cudnnFindConvolutionBackwardDataAlgorithmEx;
  static constexpr auto workspace = cudnnGetConvolutionBackwardDataWorkspaceSize;
  static constexpr auto run = cudnnConvolutionBackwardData;
  static auto descriptors(const ConvProblem& c) { return std::tuple(c.w_desc, c.y_desc, c.x_desc); }
};

template <>
struct Api<ConvPass::BackwardFilter> {
  using Perf = cudnnConvolutionBwdFilterAlgoPerf_t;
  using Algo = cudnnConvolutionBwdFilterAlgo_t;
  static constexpr int kCount = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
  static constexpr auto heuristics = cudnnGetConvolutionBackwardFilterAlgorithm_v7;
  static constexpr auto find = cudnnFindConvolutionBackwardFilterAlgorithmEx;
  static constexpr auto workspace = cudnnGetConvolutionBackwardFilterWorkspaceSize;
  static constexpr auto run = cudnnConvolutionBackwardFilter;
  static auto descriptors(const ConvProblem& c) { return std::tuple(c.x_desc, c.y_desc, c.w_desc); }
};

// A pass's legacy calls on a ConvProblem: heuristics, Find (timing into `out`), the workspace
// size of an algorithm, and a run (out = alpha * op(a, b) + beta * out).
template <ConvPass P>
struct Pass {
  using A = Api<P>;
  using Perf = typename A::Perf;
  using Algo = typename A::Algo;
  static constexpr int kCount = A::kCount;
  static cudnnStatus_t heuristics(const ConvProblem& c, int n, int* got, Perf* perf) {
    const auto [da, db, dout] = A::descriptors(c);
    return A::heuristics(c.handle, da, db, c.conv_desc, dout, n, got, perf);
  }
  static cudnnStatus_t find(const ConvProblem& c, void* out, int n, int* got, Perf* perf, void* ws, size_t bytes) {
    const auto [da, db, dout] = A::descriptors(c);
    return A::find(c.handle, da, c.a, db, c.b, c.conv_desc, dout, out, n, got, perf, ws, bytes);
  }
  static cudnnStatus_t workspace(const ConvProblem& c, int algo, size_t* bytes) {
    const auto [da, db, dout] = A::descriptors(c);
    return A::workspace(c.handle, da, db, c.conv_desc, dout, static_cast<Algo>(algo), bytes);
  }
  static cudnnStatus_t run(const ConvProblem& c, int algo, void* ws, size_t bytes) {
    const auto [da, db, dout] = A::descriptors(c);
    return A::run(c.handle, c.alpha_scalar.ptr(), da, c.a, db, c.b, c.conv_desc, static_cast<Algo>(algo), ws, bytes,
                  c.beta_scalar.ptr(), dout, c.out);
  }
};

// Runs a graph engine for the call: straight into the output when alpha is 1 and beta 0,
// else into a scratch buffer (contiguous, as the output then is) blended in with tensor ops.
template <ConvPass P>
cudnnStatus_t run_engine(const ConvProblem& c, const graph::ConvEngine& e, void* ws, graph::VariantPackCache& pack) {
  const bool plain = c.alpha == 1 && c.beta == 0;
  const Tensor& out = *c.out_tensor;
  const Tensor scratch = plain ? out : tensor::empty(out.sizes(), out.dtype(), out.device());
  const std::array<void*, 3> p = graph_pointers<P>(c, scratch.raw_data());
  const cudnnStatus_t st = e.run(c.handle, p[0], p[1], p[2], ws, pack, c.bias);
  if (st != CUDNN_STATUS_SUCCESS || plain) return st;
  Tensor target(out);
  if (c.beta == 0)
    target.zero_();  // beta 0 ignores what out held, NaN included
  else if (c.beta != 1)
    target.mul_(c.beta);
  target.add_(scratch, c.alpha);
  return st;
}

// Note [One plan cache]
// Every plan of cudnn/ops/ lives in the one plan-cache type, graph::PlanCache (graph_plan.h):
// a fixed-layout key without padding, hashed and compared as bytes, and a bound, the flag
// conv.cache_limit, shared by every instance: least recently used keys go first, each with
// its graph plans once no pass still holds them, so a network fed ever-new shapes does not grow
// one without end. The convolutions' ranked candidates live in one process-wide instance keyed
// by ConvKey (a fused forward's under its own key, Epilogue::key); attention's plans under
// graph::SdpaKey (attention.cpp), layer norm's under its own key (layer_norm.cpp), and the
// cuBLASLt heuristics' choices of the row-sums products under theirs (blas.cpp). The RNN
// descriptors (each RNNBlock's per shape, cudnn/ops/rnn.cpp) are per block, not graph plans,
// and bounded by the same flag in the same least-recently-used list (tensor/LruCache.h). A
// cached graph plan executes through variant packs remembered by their pointers
// (graph::VariantPackCache), so steady-state calls build none.
graph::PlanCache<ConvKey, std::vector<Candidate>>& cache() {
  static auto* c = new graph::PlanCache<ConvKey, std::vector<Candidate>>;  // outlives every plan
  return *c;
}

// Graph plans held by the process-wide cache are released at shutdown, before the handles
// they were built with (shutdown hooks run newest first, and the handles' hook came first).
void release_algorithm_cache() { cache().clear(); }

bool retryable(cudnnStatus_t s) {
  return CUDNN_STATUS_CATEGORY(s) == CUDNN_STATUS_NOT_SUPPORTED ||
         s == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED ||
         s == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
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

// Whether this thread's search takes deterministic candidates only: deterministic=true, or the
// graph fallback of a pin named "deterministic" (Note [When no pinned algorithm runs]), which
// sets this for its own search on its own thread and so never touches the process's flags.
thread_local bool deterministic_fallback = false;
bool deterministic_only() { return config().deterministic || deterministic_fallback; }

// The table's word on an algorithm it may not name (cuDNN's ranking can return one): such an
// algorithm counts as deterministic.
bool deterministic(ConvPass pass, int algo) {
  const ConvAlgorithm* a = find_algorithm(pass, algo);
  return !a || a->deterministic;
}

// Note [Refused candidates]
// Some candidates the try loop refuses whatever their workspace: one not deterministic under
// deterministic=true, a graph engine on TF32 tensor cores (its TENSOR_CORE note) for float32
// data under allow_tf32=false, a legacy algorithm that rounds float32 inputs to float16 or
// that cuDNN reported failing. A timed search times only the others: a refused trial could
// rank first (TF32 engines are the fastest float32 ones), and the tolerance was then measured
// from, and timings() listed, candidates that never run. On the H100 a float32 9x9 search
// under allow_tf32=false listed as fastest 0.072 ms with 11.4 MiB of workspace (118 TFLOP/s,
// beyond FMA's peak: TF32) and ran a 0-byte candidate outside the tolerance of it. Refused
// candidates cost no trial either. Returns why, or nullptr.
constexpr const char* kNotDeterministic = "not deterministic";

const char* refusal(ConvPass pass, const Candidate& c, DType dtype) {
  const Config& cfg = config();
  if (c.engine) {
    if (deterministic_only() && !c.deterministic) return kNotDeterministic;
    if (dtype == DType::Float32 && !cfg.allow_tf32 && c.engine->has_note(CUDNN_NUMERICAL_NOTE_TENSOR_CORE))
      return "TF32 tensor cores (allow_tf32=false)";
    return nullptr;
  }
  if (c.status != CUDNN_STATUS_SUCCESS) return "failed in cuDNN's ranking";
  if (deterministic_only() && (!c.deterministic || !deterministic(pass, c.algo))) return kNotDeterministic;
  if (dtype == DType::Float32 && c.math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) return "rounds inputs to float16";
  return nullptr;
}

// A refusal the trace reports (the others are a matter of flags the caller set).
void trace_refusal(Trace& trace, const std::string& name, const char* why) {
  if (why == kNotDeterministic) trace.skip(name, why);
}

template <class Perf>
Candidate to_candidate(const Perf& p) {
  return Candidate{
      static_cast<int>(p.algo), p.status, p.time, p.memory, p.determinism == CUDNN_DETERMINISTIC, p.mathType, nullptr};
}

// A pinned, remembered or last-resort algorithm as a candidate, when cuDNN takes it for
// these shapes (its workspace size can be asked).
template <ConvPass P>
std::optional<Candidate> candidate_of(const ConvProblem& c, int algo, DType dtype) {
  size_t bytes = 0;
  if (Pass<P>::workspace(c, algo, &bytes) != CUDNN_STATUS_SUCCESS) return std::nullopt;
  return Candidate{algo, CUDNN_STATUS_SUCCESS, 0, bytes, deterministic(P, algo), default_math(dtype), nullptr};
}

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

// Note [Trial workspaces]
// A timed search runs every candidate, and a candidate's workspace counts in the process's
// peak (max_memory_allocated) the moment it is leased. Capped only by workspace_limit (4 GiB)
// the trials made the peak of a 3x3 convolution on 13x13 images (L5) 10.8x PyTorch's, and the
// fastest engine, leased on every call, kept L1's and L3's steady memory 1.6-1.8x PyTorch's
// (docs/performance.md, "Leased workspaces"). So a timed search
//   - tries only candidates whose workspace is at most conv.search_workspace times the bytes of
//     the pass's tensors (x, w and y; by default 4 for float32/float64 data, 2 for 16-bit),
//     and at least kTrialWorkspaceFloor (16 MiB,
//     what small problems' good engines ask), within workspace_limit and the memory to be had:
//     the pool then grows by at most a few times the working set of the call; over-cap
//     candidates are left out of the list, so not even a fallback leases more (the last resort
//     needs no workspace). Why 4: on the H100 (float16 L1-L5) a cap of 1 left out every fast
//     engine of L2, L3 and L5 (10x slower), 16 kept L1's and L3's steady memory 1.6-1.8x
//     PyTorch's, and 4 met the memory goals but L3's steady (1.28x) with every row still
//     faster than PyTorch's (docs/performance.md, "Trial workspaces"). Why 2 for 16-bit data:
//     on the H200 a cap of 2 met every memory goal in float16 and bfloat16 (L3's forward
//     leaves FFT_TILING, 204 MiB, for a tensor-core engine with 53 MiB, 0.42 -> 0.50 ms) with
//     every row still ahead, while in float32 it put L1-L4 behind PyTorch (their fast engines
//     need 3-4x the tensors), where 4 meets both ("Two trial caps" in docs/performance.md);
//   - among the candidates within conv.search_tolerance (default 2 %) of the fastest time,
//     runs the one with the smallest workspace: two timed runs differ by about that much anyway,
//     and a workspace leased on every call is steady memory;
//   - times into the output itself when the call overwrites it (beta 0), not a scratch copy;
//   - gives every trial's workspace back to the driver as soon as its trials end (Note
//     [Workspaces] in cudnn/core/Handle.h).
// The trade-off: an engine faster only thanks to a workspace larger than the problem's
// tensors, or faster by less than the tolerance, is not chosen; a row may run up to the
// tolerance slower than its fastest engine. fastest=true (or conv.search_workspace=0 with a
// large workspace_limit) restores the old search. The flags apply to searches made after they
// are set: a cached choice stays until clear_algorithm_cache().
constexpr size_t kTrialWorkspaceFloor = size_t(16) << 20;

// The graph engines cuDNN offers for the call, as candidates (none without a graph spec).
std::vector<Candidate> graph_candidates(const ConvProblem& c, bool timed, Trace& trace) {
  std::vector<Candidate> out;
  if (!c.graph) return out;
  std::string why;
  const size_t max = timed ? kMaxTimedConfigs : kMaxGraphEngines;
  const bool mode_b = config().conv_heuristics == ConvHeuristics::B;  // Note [Heuristics modes]
  for (auto& e : graph::conv_engines(*c.graph, c.handle, max, timed ? kTimedConfigsPerEngine : 1, why, mode_b)) {
    Candidate cand;
    cand.algo = kGraphEngine + static_cast<int>(e->global_index());
    cand.deterministic = !e->has_note(CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC);
    cand.engine = std::move(e);
    out.push_back(std::move(cand));
  }
  if (out.empty()) trace.say("no graph engine (" + why + ")");
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

// Note [Channels-last filters]
// A channels-last convolution (NHWC activations) runs fastest with its filter in the same
// layout: with a row-major filter cuDNN's NHWC engines transpose it, and a 3-channel 11x11
// filter gradient took 11.6 ms against PyTorch's 5.3 (L1, float16, H100). So the twins hand
// the passes the filter in the activations' layout: the weight itself where it already is (a
// network after Module::to(MemoryFormat::ChannelsLast), as PyTorch's model.to(memory_format=...)),
// else a copy made for each pass; likewise the filter gradient is accumulated in place (beta 1)
// or taken into a buffer and added. A copy per forward and backward-data pass, and a blend per
// filter gradient, cost a ResNet-50 step about 0.5 ms (docs/performance.md). The filter
// descriptor and the graph's filter strides say which layout it is, and the key holds it.
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

// The filter among a pass's tensors: forward (x, w) -> y, backward data (w, dy) -> dx, backward
// filter (x, dy) -> dw.
template <ConvPass P>
const Tensor& filter_of(const PassTensors& t) {
  if constexpr (P == ConvPass::Forward)
    return t.b;
  else if constexpr (P == ConvPass::BackwardData)
    return t.a;
  else
    return t.out;
}

// The graph candidates that the try loop would run (Note [Refused candidates]) and that build
// within the trial cap, each timed on `out` as output (in no order yet); those over the cap
// are left out (Note [Trial workspaces]), counted in `over`.
template <ConvPass P>
std::vector<Candidate> time_graph(const ConvProblem& c, std::vector<Candidate>& cands, size_t cap, void* out,
                                  int& over) {
  std::vector<Candidate> timed;
  const DType dtype = c.out_tensor->dtype();
  Workspace lease(0, Workspace::Use::Search);  // Note [Workspaces]: the trials' bytes go back after
  for (Candidate& g : cands) {
    if (refusal(P, g, dtype)) continue;
    std::string why;
    if (!g.engine->build(c.handle, why)) continue;
    g.memory = g.engine->workspace();
    if (g.memory > cap) {
      ++over;
      continue;
    }
    void* ws = nullptr;
    try {
      ws = lease.grow(g.memory);
    } catch (const tensor::Error&) {
      continue;
    }
    const std::array<void*, 3> p = graph_pointers<P>(c, out);
    graph::VariantPackCache pack;
    g.time = time_on_stream([&] { return g.engine->run(c.handle, p[0], p[1], p[2], ws, pack, c.bias); });
    g.timed = true;
    if (g.time >= 0) timed.push_back(g);
  }
  return timed;
}

void by_time(std::vector<Candidate>& cands) {
  std::stable_sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) { return a.time < b.time; });
}

// Reorders the timed candidates at the front of a list by_time put in order: those within
// `tolerance` of the fastest by workspace, smallest first (Note [Trial workspaces]).
void prefer_small_workspaces(std::vector<Candidate>& ranked, double tolerance) {
  if (ranked.empty() || !ranked.front().timed) return;
  const double limit = static_cast<double>(ranked.front().time) * (1 + tolerance);
  auto end = ranked.begin();
  while (end != ranked.end() && end->timed && end->time <= limit) ++end;
  std::stable_sort(ranked.begin(), end, [](const Candidate& a, const Candidate& b) { return a.memory < b.memory; });
}

// Where a timed search's trials write: the output itself when the call overwrites it (beta 0:
// the chosen candidate runs again into it), else a scratch buffer, so the output's data to
// accumulate into survives. Timing into the output spares the search's peak its size.
struct TrialOutput {
  Tensor scratch;
  void* ptr = nullptr;
  explicit TrialOutput(const ConvProblem& c) {
    if (c.beta == 0) {
      ptr = c.out;
      return;
    }
    scratch = tensor::empty({static_cast<int64_t>(c.out_bytes)}, DType::UInt8, tensor::Device::cuda(c.device));
    ptr = scratch.raw_data();
  }
};

}  // namespace

size_t ConvPlan::Impl::workspace_cap() const {
  return use_fastest() ? workspace_available() : std::min(config().workspace_limit, workspace_available());
}

size_t ConvPlan::Impl::search_cap(const ConvProblem& c) const {
  const size_t cap = workspace_cap();
  const double set = config().conv_search_workspace;
  const double ratio = set != Config::kSearchWorkspaceAuto ? set : c.sixteen_bit ? 2.0 : 4.0;
  if (use_fastest() || ratio <= 0) return cap;
  const double relative =
      std::max(static_cast<double>(kTrialWorkspaceFloor), ratio * static_cast<double>(c.tensor_bytes));
  return relative >= static_cast<double>(cap) ? cap : static_cast<size_t>(relative);
}

const AlgoSetting& ConvPlan::Impl::setting_of(ConvPass pass) const {
  const std::optional<AlgoSetting>& pinned = choices.mode[static_cast<int>(pass)];
  return pinned ? *pinned : config().algo(pass);
}

template <ConvPass P>
ConvKey ConvPlan::Impl::make_key(const PassTensors& t, const ConvSpec& g, cudnnDataType_t compute, bool timed,
                                 bool graph) const {
  const Config& cfg = config();
  ConvKey key;
  std::memset(&key, 0, sizeof key);
  key.pass = static_cast<int32_t>(P);
  key.device = t.a.device().index;
  key.dtype = static_cast<int32_t>(t.a.dtype());
  key.compute = compute;
  key.tf32 = cfg.allow_tf32;
  key.deterministic = deterministic_only();
  key.timed = timed;
  key.nd = g.nd;
  key.groups = static_cast<int32_t>(g.groups);
  key.cross = g.cross_correlation;
  fill_dims(key.x, t.x_like.sizes());
  fill_dims(key.w, t.w_shape);
  fill_dims(key.y, t.y_like.sizes());
  for (int64_t i = 0; i < t.x_like.dim() && i < 5; ++i) key.x_stride[i] = t.x_like.stride(i);
  for (int64_t i = 0; i < t.y_like.dim() && i < 5; ++i) key.y_stride[i] = t.y_like.stride(i);
  key.graph = graph;
  if (graph) key.handle = handle_serial();
  for (int i = 0; i < 3; ++i) {
    key.pad[i] = static_cast<int32_t>(g.pad[i]);
    key.stride[i] = static_cast<int32_t>(g.stride[i]);
    key.dilation[i] = static_cast<int32_t>(g.dilation[i]);
  }
  key.w_channels_last = filter_channels_last(filter_of<P>(t));
  key.heuristics = static_cast<int32_t>(cfg.conv_heuristics);
  return key;
}

template <ConvPass P>
ConvProblem ConvPlan::Impl::problem(const PassTensors& t, const ConvSpec& g, cudnnDataType_t compute,
                                    cudnnMathType_t math, bool legacy, const graph::ConvGraphSpec* graph, double alpha,
                                    double beta) {
  const DType dtype = t.a.dtype();
  ConvProblem c{.handle = handle(),
                .a = t.a.raw_data(),
                .b = t.b.raw_data(),
                .out = t.out.raw_data(),
                .out_tensor = &t.out,
                .out_bytes = t.out.nbytes(),
                .tensor_bytes = t.a.nbytes() + t.b.nbytes() + t.out.nbytes(),
                .sixteen_bit = dtype == DType::Float16 || dtype == DType::BFloat16,
                .device = t.a.device().index,
                .alpha = alpha,
                .beta = beta,
                .alpha_scalar = Scalar(alpha, dtype),
                .beta_scalar = Scalar(beta, dtype),
                .graph = graph};
  if (legacy) {
    c.x_desc = x_desc.set(t.x_like, g.nd + 2);
    c.y_desc = y_desc.set(t.y_like, g.nd + 2);
    c.w_desc = w_desc.set(dtype, t.w_shape, filter_channels_last(filter_of<P>(t)));
    c.conv_desc = conv_desc.set(g, compute, math);
  }
  return c;
}

// Steady state: the remembered choice, straight to cuDNN.
template <ConvPass P>
void ConvPlan::Impl::run_remembered(PassState& s, const ConvProblem& c) {
  const Workspace lease(s.ws);  // Note [Workspaces]: given back once the pass is enqueued
  void* ws = lease.data();
  if (s.engine) {
    const cudnnStatus_t status = run_engine<P>(c, *s.engine, ws, s.pack);
    if (status != CUDNN_STATUS_SUCCESS) detail::throw_cudnn_error(status, "cudnnBackendExecute", __FILE__, __LINE__);
    return;
  }
  CUDNN_CHECK(Pass<P>::run(c, s.algo, ws, s.ws));
}

template <ConvPass P>
std::vector<Candidate> ConvPlan::Impl::rank(const ConvProblem& c, bool timed, Trace& trace) {
  using T = Pass<P>;
  ++searches;
  tensor::cuda::register_shutdown_hook(&release_algorithm_cache);
  std::vector<Candidate> graph_cands = graph_candidates(c, timed, trace);
  typename T::Perf perf[T::kCount];
  int got = 0;
  CUDNN_CHECK(T::heuristics(c, T::kCount, &got, perf));
  std::vector<Candidate> out;
  for (int i = 0; i < got; ++i) out.push_back(to_candidate(perf[i]));
  if (!timed) {
    graph_cands.insert(graph_cands.end(), out.begin(), out.end());
    return graph_cands;
  }
  // Timing runs the candidates within the trial cap (Note [Trial workspaces]) into TrialOutput,
  // the legacy ones with one workspace as large as the largest of them that fits.
  const size_t cap = search_cap(c);
  const TrialOutput trial(c);
  int over = 0;
  std::vector<Candidate> ranked = time_graph<P>(c, graph_cands, cap, trial.ptr, over);
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
    trace.say("timing without workspace (allocation failed)");
  }
  CUDNN_CHECK(T::find(c, trial.ptr, T::kCount, &got, perf, ws, ws_bytes));
  lease.reset();  // the trials' bytes go back before the choice runs
  const DType dtype = c.out_tensor->dtype();
  for (int i = 0; i < got; ++i) {
    Candidate cand = to_candidate(perf[i]);
    if (refusal(P, cand, dtype)) continue;  // Note [Refused candidates]
    cand.timed = true;
    ranked.push_back(std::move(cand));
  }
  by_time(ranked);  // one list by time, graph engines and legacy algorithms alike
  prefer_small_workspaces(ranked, config().conv_search_tolerance);
  // Algorithms Find could not time inside the workspace keep their heuristic rank after it,
  // those within the cap only.
  for (const auto& p : out) {
    bool present = false;
    for (const auto& q : ranked) present = present || (!q.engine && q.algo == p.algo);
    if (present || refusal(P, p, dtype)) continue;
    if (p.memory <= cap)
      ranked.push_back(p);
    else
      ++over;
  }
  if (over) trace.say(std::to_string(over) + " candidates left out: workspace over the trial cap " + bytes_str(cap));
  return ranked;
}

// A fused forward's candidates: the fused graph's engines alone, timed under benchmark=true;
// a bias alone keeps them only where the best beats conv and bias apart (Note [Fusing a bias
// alone]).
template <ConvPass P>
std::vector<Candidate> ConvPlan::Impl::rank_fused(const ConvProblem& c, const PassTensors& t, const ConvSpec& g,
                                                  const Epilogue& epi, bool timed, Trace& trace) {
  ++searches;
  tensor::cuda::register_shutdown_hook(&release_algorithm_cache);
  std::vector<Candidate> cands = graph_candidates(c, timed, trace);
  if (!timed || cands.empty()) return cands;
  int over = 0;
  {
    const TrialOutput trial(c);  // y itself: a fused forward overwrites it
    cands = time_graph<P>(c, cands, search_cap(c), trial.ptr, over);
  }
  by_time(cands);
  if (over) trace.say(std::to_string(over) + " fused engines left out: workspace over the trial cap");
  if (epi.activation || !epi.bias || cands.empty()) {
    prefer_small_workspaces(cands, config().conv_search_tolerance);
    return cands;
  }
  // into y, which the caller computes again either way; the warm-up run does the search
  const float apart = time_on_stream([&] {
    execute<P>(t, g, 1, 0);
    add_bias_with(bias_data_desc, bias_desc, t.out, *epi.bias);
    return CUDNN_STATUS_SUCCESS;
  });
  if (apart >= 0 && cands.front().time >= apart) {
    trace.say("conv and bias apart are faster (" + std::to_string(apart) + " ms against the best fused engine's " +
              std::to_string(cands.front().time) + " ms)");
    cands.clear();
  }
  prefer_small_workspaces(cands, config().conv_search_tolerance);
  return cands;
}

template <ConvPass P>
std::vector<Candidate> ConvPlan::Impl::candidates(const ConvProblem& c, const AlgoSetting& setting, const ConvKey& key,
                                                  bool timed, const ConvSpec& g, DType dtype, Trace& trace) {
  trace.policy = setting.name;
  const PassState& st = state[static_cast<int>(P)];
  if (setting.policy == AlgoSetting::Policy::Fixed) {
    const ConvAlgorithm& pinned = *find_algorithm(P, setting.algo);
    if (g.nd == 3 && !pinned.in_3d) {
      trace.say(std::string("conv.algo_") + pass_name(P) + "=" + setting.name +
                " is not available in 3-D; falling back to guess_on_shape_change");
      trace.policy = std::string("guess_on_shape_change (3-D fallback from ") + setting.name + ")";
    } else if (config().deterministic && !pinned.deterministic) {
      throw tensor::Error(where_of(P) + "conv.algo_" + pass_name(P) + "=" + setting.name + " (" + pinned.cudnn_name +
                          ") is not deterministic but deterministic=true is set");
    } else if (auto one = candidate_of<P>(c, setting.algo, dtype)) {
      return {*one};
    } else {
      trace.say(std::string(pinned.cudnn_name) +
                " does not support this configuration; falling back to "
                "guess_on_shape_change");
      trace.policy = std::string("guess_on_shape_change (fallback from ") + setting.name + ")";
    }
  } else if (setting.once() && st.once_algo >= 0) {
    if (auto one = candidate_of<P>(c, st.once_algo, dtype)) return {*one};
  }
  if (std::optional<std::vector<Candidate>> found = cache().find(key); found && !found->empty()) return *found;
  std::vector<Candidate> ranked = rank<P>(c, timed, trace);
  cache().put(key, ranked);
  return ranked;
}

namespace {
// A workspace of `bytes` for the candidate `name`, or false (the candidate skipped, said why)
// when it cannot be allocated.
bool take_workspace(size_t bytes, const std::string& name, Workspace& lease, void*& ws, Trace& trace) {
  ws = nullptr;
  if (!bytes) return true;
  try {
    ws = lease.grow(bytes);
    return true;
  } catch (const tensor::Error&) {
    trace.skip(name, "could not allocate " + bytes_str(bytes));
    return false;
  }
}

// What a timed search measured, fastest first (ConvPlan::timings).
std::vector<ConvPlan::Timing> timings_of(const std::vector<Candidate>& cands) {
  std::vector<ConvPlan::Timing> out;
  for (const Candidate& c : cands) {
    if (c.timed) out.push_back({c.algo, c.time, c.memory});
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.ms < b.ms; });
  return out;
}

// verbose=true: what a timed search measured, fastest first (name, ms, workspace), so that a
// user weighing speed against memory (conv.search_workspace, conv.search_tolerance) sees the
// candidates the choice was made among.
void trace_timings(const Trace& trace, ConvPass pass, const std::vector<Candidate>& cands) {
  if (!config().verbose) return;
  std::vector<const Candidate*> timed;
  for (const Candidate& c : cands) {
    if (c.timed) timed.push_back(&c);
  }
  if (timed.empty()) return;
  std::stable_sort(timed.begin(), timed.end(), [](const auto* a, const auto* b) { return a->time < b->time; });
  std::string line = "timed";
  for (const Candidate* c : timed) {
    char ms[32];
    std::snprintf(ms, sizeof ms, " %.3f ms ", c->time);
    line += std::string(line.size() > 5 ? "; " : " ") + (c->engine ? c->engine->name() : algo_name(pass, c->algo)) +
            ms + bytes_str(c->memory);
  }
  trace.say(line);
}

// The candidate that ran, remembered for steady state.
void remember(PassState& s, const ConvKey& key, const Candidate& cand, cudnnDataType_t compute, size_t ws_bytes) {
  s.valid = true;
  s.key = key;
  s.algo = cand.algo;
  s.compute = compute;
  s.ws = ws_bytes;
  s.engine = cand.engine;
}
}  // namespace

template <ConvPass P>
bool ConvPlan::Impl::try_engine(const ConvProblem& c, const ConvKey& key, cudnnDataType_t compute,
                                const Candidate& cand, DType dtype, PassState& s, Trace& trace) {
  graph::ConvEngine& e = *cand.engine;
  const std::string name = e.name();
  if (const char* why = refusal(P, cand, dtype)) {  // Note [Refused candidates]
    trace_refusal(trace, name, why);
    return false;
  }
  std::string why;
  if (!e.build(c.handle, why)) {
    trace.skip(name, why);
    return false;
  }
  const size_t cap = workspace_cap();
  const size_t ws_bytes = e.workspace();
  if (ws_bytes > cap) {
    trace.skip(name, "workspace " + bytes_str(ws_bytes) + " > cap " + bytes_str(cap));
    return false;
  }
  Workspace lease;  // Note [Workspaces]
  void* ws = nullptr;
  if (!take_workspace(ws_bytes, name, lease, ws, trace)) return false;
  const cudnnStatus_t st = run_engine<P>(c, e, ws, s.pack);
  trace.ran(name);
  if (st != CUDNN_STATUS_SUCCESS) {
    if (!retryable(st)) detail::throw_cudnn_error(st, "cudnnBackendExecute (selected engine)", __FILE__, __LINE__);
    trace.failed(name, st);
    return false;
  }
  remember(s, key, cand, compute, ws_bytes);
  trace.chose(name, ws_bytes);
  return true;
}

template <ConvPass P>
bool ConvPlan::Impl::try_legacy(const ConvProblem& c, const ConvKey& key, cudnnDataType_t compute,
                                const Candidate& cand, DType dtype, size_t cap, PassState& s, Trace& trace) {
  const std::string name = algo_name(P, cand.algo);
  if (const char* why = refusal(P, cand, dtype)) {  // Note [Refused candidates]
    trace_refusal(trace, name, why);
    return false;
  }
  if (cand.memory > cap) {
    trace.skip(name, "workspace " + bytes_str(cand.memory) + " > cap " + bytes_str(cap) +
                         (use_fastest() ? " (free memory)" : " (workspace_limit or free memory)"));
    return false;
  }
  const cudnnMathType_t math = default_math(dtype) == CUDNN_FMA_MATH ? CUDNN_FMA_MATH : cand.math;
  conv_desc.set_math(math);
  size_t ws_bytes = cand.memory;
  // A fixed or remembered algorithm's size was asked for these shapes; re-ask after a math change.
  if (Pass<P>::workspace(c, cand.algo, &ws_bytes) != CUDNN_STATUS_SUCCESS) {
    trace.skip(name, "not supported with this math mode");
    return false;
  }
  Workspace lease;  // Note [Workspaces]
  void* ws = nullptr;
  if (!take_workspace(ws_bytes, name, lease, ws, trace)) return false;
  const cudnnStatus_t st = Pass<P>::run(c, cand.algo, ws, ws_bytes);
  trace.ran(name);
  if (st != CUDNN_STATUS_SUCCESS) {
    if (!retryable(st)) detail::throw_cudnn_error(st, "cudnnConvolution (selected algorithm)", __FILE__, __LINE__);
    trace.failed(name, st);
    return false;
  }
  remember(s, key, cand, compute, ws_bytes);  // a legacy candidate has no engine
  s.math = math;
  if (s.once_algo < 0) s.once_algo = cand.algo;
  trace.chose(name, ws_bytes, math == CUDNN_FMA_MATH ? ", FMA math" : "");
  return true;
}

template <ConvPass P>
bool ConvPlan::Impl::try_in_order(const ConvProblem& c, const ConvKey& key, cudnnDataType_t compute,
                                  const std::vector<Candidate>& cands, DType dtype, PassState& s, Trace& trace) {
  const size_t cap = workspace_cap();  // the legacy algorithms' (an engine's is asked when it is built)
  for (const Candidate& cand : cands) {
    const bool ran = cand.engine ? try_engine<P>(c, key, compute, cand, dtype, s, trace)
                                 : try_legacy<P>(c, key, compute, cand, dtype, cap, s, trace);
    if (ran) return true;
  }
  trace.close_loop();
  return false;
}

namespace {
// "float32 x[8, 3, 32, 32] w[16, 3, 3, 3] stride 1,1 pad 1,1 dilation 1,1 groups 1", what a
// search names in verbose lines and errors.
std::string what_of(DType dtype, cudnnDataType_t compute, const PassTensors& t, const ConvSpec& g) {
  const int first = g.first();
  std::ostringstream os;
  os << tensor::name(dtype) << (compute == CUDNN_DATA_HALF ? "(f16 math)" : "") << " x"
     << tensor::shape_str(t.x_like.sizes()) << " w" << tensor::shape_str(t.w_shape) << " stride " << g.stride[first]
     << "," << g.stride[first + 1] << " pad " << g.pad[first] << "," << g.pad[first + 1] << " dilation "
     << g.dilation[first] << "," << g.dilation[first + 1] << " groups " << g.groups;
  return os.str();
}
}  // namespace

// The search of a plain pass: the candidates in order, then the last resort, then (float16
// math) everything again in float32 math.
template <ConvPass P>
bool ConvPlan::Impl::search(const PassTensors& t, const ConvSpec& g, const ConvKey& key, const AlgoSetting& setting,
                            bool timed, bool graph, double alpha, double beta, bool may_fail) {
  const DType dtype = t.a.dtype();
  PassState& s = state[static_cast<int>(P)];
  cudnnDataType_t compute = static_cast<cudnnDataType_t>(key.compute);
  for (int attempt = 0; attempt < 2; ++attempt) {
    graph::ConvGraphSpec spec;
    if (graph) spec = graph_spec_of(P, dtype, compute, t.x_like, t.w_shape, filter_of<P>(t), t.y_like, g);
    const ConvProblem c = problem<P>(t, g, compute, default_math(dtype), true, graph ? &spec : nullptr, alpha, beta);
    ConvKey cache_key = key;
    cache_key.compute = compute;
    Trace trace{.pass = P, .what = what_of(dtype, compute, t, g)};
    const std::vector<Candidate> cands = candidates<P>(c, setting, cache_key, timed, g, dtype, trace);
    s.timings = timings_of(cands);
    trace_timings(trace, P, cands);
    if (try_in_order<P>(c, key, compute, cands, dtype, s, trace)) return true;
    if (auto last = candidate_of<P>(c, last_resort(P, deterministic_only()).algo, dtype)) {
      trace.policy = "last resort";  // the algorithm that needs no workspace
      if (try_in_order<P>(c, key, compute, {*last}, dtype, s, trace)) return true;
    }
    if (compute == CUDNN_DATA_HALF) {
      trace.say("no float16-math algorithm ran (" + trace.tried + "); retrying with float32 math");
      compute = CUDNN_DATA_FLOAT;
      continue;
    }
    if (may_fail) {
      trace.say(std::string("no algorithm of ") + setting.name + " could run (" +
                (trace.tried.empty() ? std::string("none tried") : trace.tried) +
                "); taking the graph engines' guess_on_shape_change");
      return false;
    }
    throw tensor::Error(where_of(P) + "no algorithm could run for " + trace.what +
                        "; tried: " + (trace.tried.empty() ? "none" : trace.tried));
  }
  return false;
}

// Note [Fusion]
// forward_fused runs y = act(conv(x, w) + bias) as one operation graph (conv -> virtual float
// -> + bias -> virtual float -> act -> y), so the bias and activation cost no extra pass over
// y. It is the forward pass itself with an Epilogue: the same execute<Forward>, key (the
// epilogue in ConvKey::fusion), cache and try loop, under the same filters, cap and policies
// as Note [Candidates]; only the candidates differ, the fused graph's engines alone, since only
// graph engines can. When none runs the plan remembers the key and answers false, and the
// caller (the convolution twin inside a cudnn::FusedConvolution, which cudnn::fuse made) runs
// conv, bias and activation as three steps. The fused and unfused results agree to rounding
// (the epilogue adds in float).
//
// Note [Fusing a bias alone]
// cudnn::fuse also gives conv + bias to one graph operation where no activation follows (the
// convolutions before ResNet's batch norms). Its candidates are the fused graph's engines only,
// and for most shapes the best of them is slower than the plain convolution's best followed by
// our bias kernel (ResNet-50 forward as a whole: float32 8.04 -> 8.26 ms, float16 5.26 -> 6.39
// on an H100), while for others it is faster (L1 in float32: 2.60 -> 2.15 ms). So a bias alone
// fuses only in a timed search, and only where its best engine beats conv + bias timed the same
// way; otherwise the key is remembered as refused, as when no fused engine runs.

// The search of a fused forward: its engines (rank_fused), cached under the fused key even
// when there are none; when none runs the key is remembered and the caller computes apart.
bool ConvPlan::Impl::search_fused(const PassTensors& t, const ConvSpec& g, const ConvKey& key, const Epilogue& epi,
                                  bool timed) {
  constexpr ConvPass P = ConvPass::Forward;
  const DType dtype = t.a.dtype();
  const auto compute = static_cast<cudnnDataType_t>(key.compute);
  const graph::ConvGraphSpec spec =
      graph_spec_of(P, dtype, compute, t.x_like, t.w_shape, t.b, t.y_like, g, epi.bias != nullptr, epi.activation);
  ConvProblem c = problem<P>(t, g, compute, default_math(dtype), false, &spec, 1, 0);
  c.bias = epi.bias ? epi.bias->raw_data() : nullptr;
  Trace trace{.pass = P,
              .what = "fused " + what_of(dtype, compute, t, g) + (epi.bias ? " + bias" : "") +
                      (epi.activation ? " + activation" : ""),
              .policy = timed ? "fused, timed" : "fused"};
  std::vector<Candidate> cands;
  if (std::optional<std::vector<Candidate>> found = cache().find(key)) {
    cands = std::move(*found);
  } else {
    cands = rank_fused<P>(c, t, g, epi, timed, trace);
    cache().put(key, cands);
  }
  fused.timings = timings_of(cands);
  trace_timings(trace, P, cands);
  if (try_in_order<P>(c, key, compute, cands, dtype, fused, trace)) return true;
  trace.say("no fused engine ran (" + (trace.tried.empty() ? std::string("none tried") : trace.tried) +
            "); computing conv, bias and activation apart");
  fused_refused = key;
  has_refused = true;
  return false;
}

template <ConvPass P>
bool ConvPlan::Impl::execute(const PassTensors& t, const ConvSpec& g, double alpha, double beta, const Epilogue& epi) {
  const DType dtype = t.a.dtype();
  const AlgoSetting& setting = setting_of(P);
  const bool timed = setting.policy != AlgoSetting::Policy::Fixed && (setting.timed() || config().benchmark);
  if (!epi.empty()) {
    // Note [Fusion]: graph engines only, a bias alone only where timing says so
    const Tensor& bias_or_x = epi.bias ? *epi.bias : t.a;  // the buffers to align: bias when there is one
    if (!graph_eligible(setting, g, t.x_like, filter_of<P>(t), t.y_like, {&t.a, &t.b, &t.out, &bias_or_x}) ||
        (epi.bias && !epi.bias->is_contiguous()) || (!epi.activation && !timed)) {
      return false;
    }
  }
  tensor::cuda::DeviceGuard guard(t.a.device().index);
  // keyed by the requested compute type; the state records what ran
  const cudnnDataType_t requested = compute_type(dtype, precision, P);
  // Graph engines: see Note [Candidates] for when they are offered.
  const bool plain_or_dense = (alpha == 1 && beta == 0) || t.out.is_contiguous();
  const std::initializer_list<const Tensor*> buffers = {&t.a, &t.b, &t.out};
  const bool graph =
      !epi.empty() || (graph_eligible(setting, g, t.x_like, filter_of<P>(t), t.y_like, buffers) && plain_or_dense);
  ConvKey key = make_key<P>(t, g, requested, timed, graph);
  key.fusion = epi.key();
  if (!epi.empty() && has_refused && fused_refused == key) return false;
  // the remembered choice for `k`, or a search under `with` (false where may_fail and none ran)
  const auto run = [&](const ConvKey& k, bool on_graph, const AlgoSetting& with, bool timed_search, bool may_fail) {
    PassState& s = epi.empty() ? state[static_cast<int>(P)] : fused;
    if (s.valid && s.key == k) {
      graph::ConvGraphSpec spec;
      if (on_graph) spec = graph_spec_of(P, dtype, s.compute, t.x_like, t.w_shape, filter_of<P>(t), t.y_like, g);
      ConvProblem c = problem<P>(t, g, s.compute, s.math, epi.empty(), on_graph ? &spec : nullptr, alpha, beta);
      c.bias = epi.bias ? epi.bias->raw_data() : nullptr;
      run_remembered<P>(s, c);
      return true;
    }
    return epi.empty() ? search<P>(t, g, k, with, timed_search, on_graph, alpha, beta, may_fail)
                       : search_fused(t, g, k, epi, timed_search);
  };
  // Note [When no pinned algorithm runs]
  // A pinned algorithm or a *_once policy searches the legacy algorithms alone (Note
  // [Candidates]). Some layouts have none that runs: a 1x1 filter gradient over channels-last
  // tensors refused every legacy algorithm on the H100 (cuDNN 9.14), in every dtype, and the
  // pass threw "no algorithm could run", where the README promises that a pin cuDNN cannot run
  // falls back. So where the graph engines could run the call, a legacy search that finds
  // nothing hands the pass to them under guess_on_shape_change (timed under benchmark=true),
  // deterministic engines only under the pin "deterministic", said in verbose mode, and the plan
  // remembers the key so that later calls go there at once.
  const AlgoSetting guess{};
  if (graph || !epi.empty() || !plain_or_dense ||
      !graph_eligible(guess, g, t.x_like, filter_of<P>(t), t.y_like, buffers)) {
    return run(key, graph, setting, timed, false);
  }
  std::optional<ConvKey>& refused = legacy_refused[static_cast<int>(P)];
  if (!(refused && *refused == key)) {
    if (run(key, false, setting, timed, true)) return true;
    refused = key;
  }
  // a pin named "deterministic" keeps its promise there: deterministic engines only
  const bool was = deterministic_fallback;
  deterministic_fallback = was || std::string_view(setting.name) == "deterministic";
  const struct Restore {
    bool value;
    ~Restore() { deterministic_fallback = value; }
  } restore{was};
  const bool guess_timed = config().benchmark;
  return run(make_key<P>(t, g, requested, guess_timed, true), true, guess, guess_timed, false);
}

template bool ConvPlan::Impl::execute<ConvPass::Forward>(const PassTensors&, const ConvSpec&, double, double,
                                                         const Epilogue&);
template bool ConvPlan::Impl::execute<ConvPass::BackwardData>(const PassTensors&, const ConvSpec&, double, double,
                                                              const Epilogue&);
template bool ConvPlan::Impl::execute<ConvPass::BackwardFilter>(const PassTensors&, const ConvSpec&, double, double,
                                                                const Epilogue&);

void clear_algorithm_cache() { release_algorithm_cache(); }

size_t algorithm_cache_size() { return cache().size(); }

}  // namespace cudnn

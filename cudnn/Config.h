// Config.h: the flags of the cudnn backend, in one place, as Theano's dnn.* flags and
// cudnn.torch's cudnn.* switches had them. Read once from the environment variable
// CUDNN_NN_FLAGS ("key=value,key=value"), changeable at run time through config() or
// set_flags(). Keys:
//   enabled            auto | true | false | no_check   (convert(); no_check skips the version check)
//   benchmark          true/false: guess_* policies time instead (cuDNN Find), per shape, cached
//   fastest            true/false: ignore workspace_limit (never the memory actually free)
//   verbose            true/false: say on stderr which algorithm was chosen, and why
//   deterministic      true/false: deterministic algorithms only, deterministic max pooling
//   allow_tf32         true/false: float32 convolutions, GEMMs and RNNs may use TF32 tensor cores
//   workspace_limit    bytes, with an optional K/M/G suffix (default 4G)
//   conv.algo_fwd / conv.algo_bwd_filter / conv.algo_bwd_data
//                      an algorithm name (see ConvAlgorithm) or a policy: guess_once,
//                      guess_on_shape_change (default), time_once, time_on_shape_change
//   conv.precision     as_input | as_input_f32 (default) | float16 | float32 | float64
//   conv.graph         true (default) / false: convolutions also run cuDNN graph-API engines
//                      (Note [Candidates] in cudnn/ops/conv_search.cpp); false: legacy algorithms only
//   conv.heuristics    a (default) | b: the cuDNN heuristics mode that ranks a convolution's graph
//                      engines (then the fallback list): mode A, cuDNN's instant one (PyTorch's), or
//                      mode B, slower to ask (once a shape) and meant to rank more accurately
//                      (Note [Heuristics modes] in cudnn/ops/conv_search.cpp)
//   conv.cache_limit   the most entries (pass, shape, layout, dtype, flags) the process-wide
//                      cache of algorithm choices and graph plans keeps, dropping the least
//                      recently used first (default 10000, as PyTorch's plan cache; 0: no limit)
//   conv.search_workspace  a timed search (benchmark=true, time_*) tries only candidates whose
//                      workspace is at most this multiple of the pass's tensors' bytes (x, w and
//                      y), and never less than 16 MiB (default 4; 0: workspace_limit alone;
//                      fastest=true ignores it). See Note [Trial workspaces] in conv_search.cpp
//   conv.search_tolerance  a timed search runs, among the candidates within this fraction of the
//                      fastest time, the one with the smallest workspace (default 0.02; 0: the
//                      fastest). Both apply to searches made after they are set (cached choices
//                      stay until clear_algorithm_cache())
//   channels_last      true/false (default): the twins run 4-d and 5-d activations channels-last
//                      (NHWC / NDHWC), converting a row-major input once, where it enters;
//                      false: they keep the layout they are given. See Note [Channels-last twins]
//                      in cudnn/core/Layout.h
//   attention.fused    true (default) / false: cudnn::sdpa runs cuDNN's fused flash attention
//                      where cuDNN takes the problem; false: always the GEMM + softmax-kernel path
//   layernorm.engine   ours (default) | cudnn: cudnn::LayerNorm runs our kernels, or cuDNN's layer
//                      norm engines where they take the problem (cudnn/ops/layer_norm.h)
//   pool.backward      auto (default) | ours | cudnn: where max pooling's gradient runs, our
//                      channels-last kernel or cuDNN's call (cudnn/ops/pool.h)
//   groupnorm.engine   cudnn (default) | kernel: cudnn::GroupNorm and cudnn::InstanceNorm
//                      normalise on our kernels, or through cuDNN's graph-API layer norm (a group
//                      a row) where it takes the problem (cudnn/ops/group_norm.h)
//   rmsnorm.engine     kernel | cudnn (default: its forward+backward measured faster at 13 of 15
//                      shapes on an H200, docs/performance.md): cudnn::RMSNorm runs our kernels, or
//                      cuDNN's RMS norm engines where they take the problem (cudnn/ops/rms_norm.h)
//   linear.engine      auto (default) | cublas: a Linear's forward product (cudnn::Linear, the
//                      attention's projections, SwiGLU's) of 1 to 4 rows in float16 or bfloat16 runs
//                      our kernel, a decode step's (Note [A few rows' product] in
//                      cudnn/kernels/FewRowsLinear.cu); cublas: cuBLAS at every size
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "nn/ConvSpec.h"

namespace cudnn {

enum class Enabled { Auto, True, False, NoCheck };
enum class Precision { AsInput, AsInputF32, Float16, Float32, Float64 };
using nn::ConvPass;  // one enum for the CPU kernels and cuDNN (nn/ConvSpec.h)
// The values of layernorm.engine, pool.backward and groupnorm.engine, in the order of their names.
enum class LayerNormEngine { Ours, Cudnn };
enum class PoolBackward { Auto, Ours, Cudnn };
enum class GroupNormEngine { Kernel, Cudnn };
enum class RMSNormEngine { Kernel, Cudnn };  // rmsnorm.engine
enum class LinearEngine { Auto, Cublas };    // linear.engine
enum class ConvHeuristics { A, B };          // conv.heuristics

// Everything known about one legacy cuDNN convolution algorithm, one row per flag name
// (an alias repeats its algorithm; names as Theano maps them, none=IMPLICIT_GEMM, small=
// IMPLICIT_PRECOMP_GEMM, ...). The one table of them (Note [The algorithm table] in
// Config.cpp) is what the flags parse against and what ConvPlan filters its candidates and
// picks its last resort with.
struct ConvAlgorithm {
  ConvPass pass;
  const char* flag;        // the conv.algo_* value
  int algo;                // cuDNN's enum value for the pass
  const char* cudnn_name;  // "IMPLICIT_PRECOMP_GEMM", ...
  bool in_3d;              // offered for 3-D convolutions (Theano's list); a 3-D pin falls back
  bool deterministic;      // false: skipped, or refused when pinned, under deterministic=true
  bool last_resort;        // needs no workspace: tried when no ranked candidate ran
};

// The rows of `pass`, in the order the flags list them.
std::span<const ConvAlgorithm> conv_algorithms(ConvPass pass);
// The first row of `algo` for `pass`, or nullptr for an algorithm the table does not name.
const ConvAlgorithm* find_algorithm(ConvPass pass, int algo);
// The last resort of `pass`: its first last_resort row allowed under `deterministic`.
const ConvAlgorithm& last_resort(ConvPass pass, bool deterministic);

// A convolution algorithm flag, parsed: a fixed algorithm (a row of the table) or a
// selection policy. Trivially copyable; `name` is the value as given (aliases kept).
struct AlgoSetting {
  enum class Policy { Fixed, GuessOnce, GuessOnShapeChange, TimeOnce, TimeOnShapeChange };
  Policy policy = Policy::GuessOnShapeChange;
  int algo = -1;  // the cuDNN enum value when Fixed
  const char* name = "guess_on_shape_change";

  bool timed() const { return policy == Policy::TimeOnce || policy == Policy::TimeOnShapeChange; }
  bool once() const { return policy == Policy::GuessOnce || policy == Policy::TimeOnce; }
  bool operator==(const AlgoSetting& o) const {
    return policy == o.policy && algo == o.algo && std::string_view(name) == o.name;
  }
  // Parses a flag value for `pass`; throws listing the accepted names.
  static AlgoSetting parse(ConvPass pass, const std::string& name);
};

struct Config {
  Enabled enabled = Enabled::Auto;
  bool benchmark = false;
  bool fastest = false;
  bool verbose = false;
  bool deterministic = false;
  bool allow_tf32 = true;  // as PyTorch's cuDNN convolutions; tests that compare with float64 turn it off
  size_t workspace_limit = size_t(4) << 30;
  AlgoSetting algo_fwd, algo_bwd_filter, algo_bwd_data;
  Precision precision = Precision::AsInputF32;
  bool conv_graph = true;
  ConvHeuristics conv_heuristics = ConvHeuristics::A;
  size_t conv_cache_limit = 10000;
  // Note [Trial workspaces]: a multiple of the pass's tensor bytes, or kSearchWorkspaceAuto (the
  // default: 4 for float32/float64 data, 2 for 16-bit)
  static constexpr double kSearchWorkspaceAuto = -1;
  double conv_search_workspace = kSearchWorkspaceAuto;
  double conv_search_tolerance = 0.02;
  bool channels_last = false;
  bool attention_fused = true;
  LayerNormEngine layernorm_engine = LayerNormEngine::Ours;
  PoolBackward pool_backward = PoolBackward::Auto;
  // cudnn by default: its forward+backward measured faster in 8 of 12 rows on an H200 (up to
  // 1.70x, at most 1.15x slower; docs/performance.md, "Group norm's two engines")
  GroupNormEngine groupnorm_engine = GroupNormEngine::Cudnn;
  // kernel until measured against cuDNN's (samples/norm_benchmark's RMSNorm rows)
  RMSNormEngine rmsnorm_engine = RMSNormEngine::Cudnn;
  // auto: a decode step's products on our kernel (docs/performance.md, "A few rows' product")
  LinearEngine linear_engine = LinearEngine::Auto;

  const AlgoSetting& algo(ConvPass pass) const;
  // The current flags, in CUDNN_NN_FLAGS syntax (all but layernorm.engine, pool.backward and
  // groupnorm.engine, which it has never printed).
  std::string str() const;
};

// The process-wide flags (first use reads CUDNN_NN_FLAGS; a bad value there throws).
Config& config();
// Applies "key=value,..." to config(); throws naming the key and the accepted values.
void set_flags(const std::string& flags);
const char* algo_name(ConvPass pass, int algo);  // "IMPLICIT_PRECOMP_GEMM", ...
const char* pass_name(ConvPass pass);            // "fwd", "bwd_data", "bwd_filter"
// The flag value naming `engine` / `choice`: "ours", "cudnn" / "auto", "ours", "cudnn" /
// "kernel", "cudnn".
const char* layer_norm_engine_name(LayerNormEngine engine);
const char* pool_backward_name(PoolBackward choice);
const char* group_norm_engine_name(GroupNormEngine engine);
const char* rms_norm_engine_name(RMSNormEngine engine);  // "kernel", "cudnn"
const char* linear_engine_name(LinearEngine engine);     // "auto", "cublas"
const char* conv_heuristics_name(ConvHeuristics mode);   // "a", "b"

// Sets the flags for a scope and restores all of config() on exit (tests, benchmarks).
class ScopedConfig {
 public:
  explicit ScopedConfig(const std::string& flags) : saved_(config()) { set_flags(flags); }
  ~ScopedConfig() { config() = saved_; }
  ScopedConfig(const ScopedConfig&) = delete;
  ScopedConfig& operator=(const ScopedConfig&) = delete;

 private:
  Config saved_;
};

}  // namespace cudnn

// Config.h: the flags of the cudnn backend, in one place, as Theano's dnn.* flags and
// cudnn.torch's cudnn.* switches had them. Read once from the environment variable
// CUDNN_NN_FLAGS ("key=value,key=value"), changeable at run time through config() or
// set_flags(). Keys:
//   enabled            auto | true | false | no_check   (convert(); no_check skips the version check)
//   benchmark          true/false: guess_* policies time instead (cuDNN Find), per shape, cached
//   fastest            true/false: ignore workspace_limit (never the memory actually free)
//   verbose            true/false: say on stderr which algorithm was chosen, and why
//   deterministic      true/false: deterministic algorithms only, deterministic max pooling
//   allow_tf32         true/false: float32 convolutions and GEMMs may use TF32 tensor cores
//   workspace_limit    bytes, with an optional K/M/G suffix (default 4G)
//   conv.algo_fwd / conv.algo_bwd_filter / conv.algo_bwd_data
//                      an algorithm name (see AlgoSetting) or a policy: guess_once,
//                      guess_on_shape_change (default), time_once, time_on_shape_change
//   conv.precision     as_input | as_input_f32 (default) | float16 | float32 | float64
#pragma once

#include <cstddef>
#include <string>

namespace cudnn {

enum class Enabled { Auto, True, False, NoCheck };
enum class Precision { AsInput, AsInputF32, Float16, Float32, Float64 };
enum class ConvPass { Forward, BackwardData, BackwardFilter };

// A convolution algorithm flag: a fixed cuDNN algorithm or a selection policy.
// Names, as Theano maps them:
//   forward        none=IMPLICIT_GEMM small=IMPLICIT_PRECOMP_GEMM large=GEMM fft fft_tiling
//                  winograd winograd_non_fused (alias winograd_nonfused)
//   backward data  none=ALGO_0 deterministic=ALGO_1 fft fft_tiling winograd winograd_non_fused
//   backward filter none=ALGO_0 deterministic=ALGO_1 small=ALGO_3 fft fft_tiling winograd_non_fused
struct AlgoSetting {
  enum class Policy { Fixed, GuessOnce, GuessOnShapeChange, TimeOnce, TimeOnShapeChange };
  Policy policy = Policy::GuessOnShapeChange;
  int algo = -1;  // the cuDNN enum value when Fixed
  std::string name = "guess_on_shape_change";

  bool timed() const { return policy == Policy::TimeOnce || policy == Policy::TimeOnShapeChange; }
  bool once() const { return policy == Policy::GuessOnce || policy == Policy::TimeOnce; }
  // Parses a flag value for `pass`; throws listing the accepted names.
  static AlgoSetting parse(ConvPass pass, const std::string& name);
  // Whether cuDNN offers `algo` for 3-D convolutions (Theano's list); others fall back.
  static bool supported_in_3d(ConvPass pass, int algo);
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

  const AlgoSetting& algo(ConvPass pass) const;
  std::string str() const;  // the current flags, in CUDNN_NN_FLAGS syntax
};

// The process-wide flags (first use reads CUDNN_NN_FLAGS; a bad value there throws).
Config& config();
// Applies "key=value,..." to config(); throws naming the key and the accepted values.
void set_flags(const std::string& flags);
const char* algo_name(ConvPass pass, int algo);  // "IMPLICIT_PRECOMP_GEMM", ...
const char* pass_name(ConvPass pass);            // "fwd", "bwd_data", "bwd_filter"

// Sets the flags for a scope and restores the previous ones (tests, benchmarks).
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

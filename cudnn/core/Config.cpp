// Config.cpp: flag parsing.
#include "cudnn/Config.h"

#include <cudnn.h>

#include <cstdlib>
#include <iomanip>
#include <iterator>
#include <limits>
#include <sstream>
#include <string_view>
#include <utility>

#include "tensor/DType.h"

namespace cudnn {

namespace {

// Note [The algorithm table]
// One row per flag name; the passes in ConvPass order, each pass's rows in the order the
// error message lists them. Determinism as cuDNN documents it (backward ALGO_0, and the
// filter's ALGO_3, accumulate with atomics); 3-D support as Theano lists it; the last
// resorts are the algorithms that need no workspace (ALGO_0 nondeterministic, ALGO_1 when
// deterministic=true).
constexpr ConvAlgorithm kTable[] = {
    // pass, flag, algo, cudnn_name, in_3d, deterministic, last_resort
    {ConvPass::Forward, "none", CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, "IMPLICIT_GEMM", true, true, true},
    {ConvPass::Forward, "small", CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, "IMPLICIT_PRECOMP_GEMM", true, true,
     false},
    {ConvPass::Forward, "large", CUDNN_CONVOLUTION_FWD_ALGO_GEMM, "GEMM", false, true, false},
    {ConvPass::Forward, "direct", CUDNN_CONVOLUTION_FWD_ALGO_DIRECT, "DIRECT", false, true, false},
    {ConvPass::Forward, "fft", CUDNN_CONVOLUTION_FWD_ALGO_FFT, "FFT", false, true, false},
    {ConvPass::Forward, "fft_tiling", CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING, "FFT_TILING", true, true, false},
    {ConvPass::Forward, "winograd", CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD, "WINOGRAD", false, true, false},
    {ConvPass::Forward, "winograd_non_fused", CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED, "WINOGRAD_NONFUSED", false,
     true, false},
    {ConvPass::Forward, "winograd_nonfused", CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED, "WINOGRAD_NONFUSED", false,
     true, false},
    {ConvPass::BackwardData, "none", CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, "ALGO_0", true, false, true},
    {ConvPass::BackwardData, "deterministic", CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, "ALGO_1", true, true, true},
    {ConvPass::BackwardData, "fft", CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT, "FFT", false, true, false},
    {ConvPass::BackwardData, "fft_tiling", CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING, "FFT_TILING", true, true, false},
    {ConvPass::BackwardData, "winograd", CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD, "WINOGRAD", false, true, false},
    {ConvPass::BackwardData, "winograd_non_fused", CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED,
     "WINOGRAD_NONFUSED", false, true, false},
    {ConvPass::BackwardData, "winograd_nonfused", CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED,
     "WINOGRAD_NONFUSED", false, true, false},
    {ConvPass::BackwardFilter, "none", CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, "ALGO_0", true, false, true},
    {ConvPass::BackwardFilter, "deterministic", CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, "ALGO_1", false, true, true},
    {ConvPass::BackwardFilter, "small", CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3, "ALGO_3", true, false, false},
    {ConvPass::BackwardFilter, "fft", CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT, "FFT", false, true, false},
    {ConvPass::BackwardFilter, "fft_tiling", CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING, "FFT_TILING", false, true,
     false},
    {ConvPass::BackwardFilter, "winograd_non_fused", CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED,
     "WINOGRAD_NONFUSED", false, true, false},
    {ConvPass::BackwardFilter, "winograd_nonfused", CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED,
     "WINOGRAD_NONFUSED", false, true, false},
};

const char* policy_names[] = {"guess_once", "guess_on_shape_change", "time_once", "time_on_shape_change"};

// The values of layernorm.engine, pool.backward and groupnorm.engine, in their enumerations' order.
constexpr const char* kLayerNormEngineNames[] = {"ours", "cudnn"};
constexpr const char* kPoolBackwardNames[] = {"auto", "ours", "cudnn"};
constexpr const char* kGroupNormEngineNames[] = {"kernel", "cudnn"};
constexpr const char* kRMSNormEngineNames[] = {"kernel", "cudnn"};  // rmsnorm.engine
constexpr const char* kLinearEngineNames[] = {"auto", "cublas"};    // linear.engine
constexpr const char* kConvHeuristicsNames[] = {"a", "b"};          // conv.heuristics

// The enumerator of E named `v` in `names`; throws naming the key and the accepted values.
template <class E, size_t N>
E parse_choice(const std::string& key, const std::string& v, const char* const (&names)[N]) {
  for (size_t i = 0; i < N; ++i) {
    if (v == names[i]) return static_cast<E>(i);
  }
  std::string accepted;
  for (size_t i = 0; i < N; ++i) accepted += std::string(i == 0 ? "" : i + 1 == N ? " or " : ", ") + names[i];
  throw tensor::Error("cudnn flags: " + key + " expects " + accepted + ", got '" + v + "'");
}

bool parse_bool(const std::string& key, const std::string& v) {
  if (v == "true" || v == "1" || v == "True") return true;
  if (v == "false" || v == "0" || v == "False") return false;
  throw tensor::Error("cudnn flags: " + key + " expects true or false, got '" + v + "'");
}

// The number at the start of `v` (-1 and used = 0 where there is none).
double leading_number(const std::string& v, size_t& used) {
  used = 0;
  try {
    return std::stod(v, &used);
  } catch (const std::exception&) {
    used = 0;
    return -1;
  }
}

size_t parse_bytes(const std::string& key, const std::string& v) {
  size_t used = 0;
  const double n = leading_number(v, used);
  double scale = 1;
  const std::string suffix = v.substr(used);
  if (suffix == "K" || suffix == "k")
    scale = 1024.0;
  else if (suffix == "M" || suffix == "m")
    scale = 1024.0 * 1024;
  else if (suffix == "G" || suffix == "g")
    scale = 1024.0 * 1024 * 1024;
  else if (!suffix.empty())
    used = 0;
  if (used == 0 || n < 0) {
    throw tensor::Error("cudnn flags: " + key + " expects a byte count like 1073741824, 512M or 4G, got '" + v + "'");
  }
  return static_cast<size_t>(n * scale);
}

// A non-negative whole number, all of `v`.
size_t parse_count(const std::string& key, const std::string& v) {
  size_t used = 0;
  unsigned long long n = 0;
  try {
    n = std::stoull(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != v.size() || v[0] == '-' || v[0] == '+') {
    throw tensor::Error("cudnn flags: " + key + " expects a whole number of entries like 10000 (0: no limit), got '" +
                        v + "'");
  }
  return static_cast<size_t>(n);
}

// A non-negative number, all of `v` (a ratio or a fraction).
double parse_ratio(const std::string& key, const std::string& v, const char* example) {
  size_t used = 0;
  const double n = leading_number(v, used);
  if (used == 0 || used != v.size() || !(n >= 0) || n == std::numeric_limits<double>::infinity()) {
    throw tensor::Error("cudnn flags: " + key + " expects a non-negative number like " + example + ", got '" + v + "'");
  }
  return n;
}

}  // namespace

std::span<const ConvAlgorithm> conv_algorithms(ConvPass pass) {
  const ConvAlgorithm* begin = std::begin(kTable);
  while (begin != std::end(kTable) && begin->pass != pass) ++begin;
  const ConvAlgorithm* end = begin;
  while (end != std::end(kTable) && end->pass == pass) ++end;
  return {begin, end};
}

const ConvAlgorithm* find_algorithm(ConvPass pass, int algo) {
  for (const ConvAlgorithm& a : conv_algorithms(pass)) {
    if (a.algo == algo) return &a;
  }
  return nullptr;
}

const ConvAlgorithm& last_resort(ConvPass pass, bool deterministic) {
  for (const ConvAlgorithm& a : conv_algorithms(pass)) {
    if (a.last_resort && (a.deterministic || !deterministic)) return a;
  }
  return conv_algorithms(pass).front();  // not reached: every pass has a deterministic last resort
}

AlgoSetting AlgoSetting::parse(ConvPass pass, const std::string& name) {
  AlgoSetting s;
  const Policy policies[] = {Policy::GuessOnce, Policy::GuessOnShapeChange, Policy::TimeOnce,
                             Policy::TimeOnShapeChange};
  for (int i = 0; i < 4; ++i) {
    if (name == policy_names[i]) {
      s.policy = policies[i];
      s.name = policy_names[i];
      return s;
    }
  }
  for (const ConvAlgorithm& a : conv_algorithms(pass)) {
    if (name == a.flag) {
      s.policy = Policy::Fixed;
      s.algo = a.algo;
      s.name = a.flag;
      return s;
    }
  }
  std::string known;
  for (const ConvAlgorithm& a : conv_algorithms(pass)) known += std::string(a.flag) + ", ";
  for (const char* p : policy_names) known += std::string(p) + ", ";
  known.resize(known.size() - 2);
  throw tensor::Error(std::string("cudnn flags: conv.algo_") + pass_name(pass) + " has no value '" + name +
                      "' (accepted: " + known + ")");
}

const char* algo_name(ConvPass pass, int algo) {
  const ConvAlgorithm* a = find_algorithm(pass, algo);
  return a ? a->cudnn_name : "UNKNOWN";
}

const char* pass_name(ConvPass pass) {
  switch (pass) {
    case ConvPass::Forward:
      return "fwd";
    case ConvPass::BackwardData:
      return "bwd_data";
    case ConvPass::BackwardFilter:
      return "bwd_filter";
  }
  return "?";
}

const char* layer_norm_engine_name(LayerNormEngine engine) { return kLayerNormEngineNames[static_cast<int>(engine)]; }

const char* pool_backward_name(PoolBackward choice) { return kPoolBackwardNames[static_cast<int>(choice)]; }

const char* group_norm_engine_name(GroupNormEngine engine) { return kGroupNormEngineNames[static_cast<int>(engine)]; }

const char* rms_norm_engine_name(RMSNormEngine engine) { return kRMSNormEngineNames[static_cast<int>(engine)]; }

const char* linear_engine_name(LinearEngine engine) { return kLinearEngineNames[static_cast<int>(engine)]; }

const char* conv_heuristics_name(ConvHeuristics mode) { return kConvHeuristicsNames[static_cast<int>(mode)]; }

const AlgoSetting& Config::algo(ConvPass pass) const {
  switch (pass) {
    case ConvPass::Forward:
      return algo_fwd;
    case ConvPass::BackwardData:
      return algo_bwd_data;
    case ConvPass::BackwardFilter:
      return algo_bwd_filter;
  }
  return algo_fwd;
}

std::string Config::str() const {
  const char* enabled_names[] = {"auto", "true", "false", "no_check"};
  const char* precision_names[] = {"as_input", "as_input_f32", "float16", "float32", "float64"};
  auto b = [](bool v) { return v ? "true" : "false"; };
  auto number = [](double v) {  // as many digits as parse back to v
    std::ostringstream os;
    os << std::setprecision(17) << v;
    return os.str();
  };
  return std::string("enabled=") + enabled_names[static_cast<int>(enabled)] + ",benchmark=" + b(benchmark) +
         ",fastest=" + b(fastest) + ",verbose=" + b(verbose) + ",deterministic=" + b(deterministic) +
         ",allow_tf32=" + b(allow_tf32) + ",workspace_limit=" + std::to_string(workspace_limit) +
         ",conv.algo_fwd=" + algo_fwd.name + ",conv.algo_bwd_filter=" + algo_bwd_filter.name +
         ",conv.algo_bwd_data=" + algo_bwd_data.name +
         ",conv.precision=" + precision_names[static_cast<int>(precision)] + ",conv.graph=" + b(conv_graph) +
         ",conv.heuristics=" + conv_heuristics_name(conv_heuristics) +
         ",conv.cache_limit=" + std::to_string(conv_cache_limit) + ",conv.search_workspace=" +
         (conv_search_workspace == kSearchWorkspaceAuto ? std::string("auto") : number(conv_search_workspace)) +
         ",conv.search_tolerance=" + number(conv_search_tolerance) + ",channels_last=" + b(channels_last) +
         ",attention.fused=" + b(attention_fused);
}

namespace {
// The flags that are one bool field of Config each.
constexpr std::pair<std::string_view, bool Config::*> kBoolFlags[] = {
    {"benchmark", &Config::benchmark},
    {"fastest", &Config::fastest},
    {"verbose", &Config::verbose},
    {"deterministic", &Config::deterministic},
    {"allow_tf32", &Config::allow_tf32},
    {"conv.graph", &Config::conv_graph},
    {"channels_last", &Config::channels_last},
    {"attention.fused", &Config::attention_fused},
};

// key's field, or null for a key that is not a bool flag
bool Config::*bool_flag(std::string_view key) {
  for (const auto& [name, field] : kBoolFlags) {
    if (name == key) return field;
  }
  return nullptr;
}

// Parses flags into `next`; all-or-nothing for the caller, who assigns only on success.
void apply_flags(Config& next, const std::string& flags) {
  size_t start = 0;
  while (start < flags.size()) {
    size_t end = flags.find(',', start);
    if (end == std::string::npos) end = flags.size();
    const std::string item = flags.substr(start, end - start);
    start = end + 1;
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string::npos) throw tensor::Error("cudnn flags: expected key=value, got '" + item + "'");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "enabled") {
      if (value == "auto")
        next.enabled = Enabled::Auto;
      else if (value == "true" || value == "True")
        next.enabled = Enabled::True;
      else if (value == "false" || value == "False")
        next.enabled = Enabled::False;
      else if (value == "no_check")
        next.enabled = Enabled::NoCheck;
      else
        throw tensor::Error("cudnn flags: enabled expects auto, true, false or no_check, got '" + value + "'");
    } else if (bool Config::*flag = bool_flag(key)) {
      next.*flag = parse_bool(key, value);
    } else if (key == "workspace_limit") {
      next.workspace_limit = parse_bytes(key, value);
    } else if (key == "conv.algo_fwd") {
      next.algo_fwd = AlgoSetting::parse(ConvPass::Forward, value);
    } else if (key == "conv.algo_bwd_filter") {
      next.algo_bwd_filter = AlgoSetting::parse(ConvPass::BackwardFilter, value);
    } else if (key == "conv.algo_bwd_data") {
      next.algo_bwd_data = AlgoSetting::parse(ConvPass::BackwardData, value);
    } else if (key == "conv.heuristics") {
      next.conv_heuristics = parse_choice<ConvHeuristics>(key, value, kConvHeuristicsNames);
    } else if (key == "conv.cache_limit") {
      next.conv_cache_limit = parse_count(key, value);
    } else if (key == "conv.search_workspace") {
      next.conv_search_workspace = value == "auto"
                                       ? Config::kSearchWorkspaceAuto
                                       : parse_ratio(key, value, "4 or 0.5 (0: no cap but workspace_limit), or auto");
    } else if (key == "conv.search_tolerance") {
      next.conv_search_tolerance = parse_ratio(key, value, "0.02 (0: the fastest)");
    } else if (key == "layernorm.engine") {
      next.layernorm_engine = parse_choice<LayerNormEngine>(key, value, kLayerNormEngineNames);
    } else if (key == "pool.backward") {
      next.pool_backward = parse_choice<PoolBackward>(key, value, kPoolBackwardNames);
    } else if (key == "groupnorm.engine") {
      next.groupnorm_engine = parse_choice<GroupNormEngine>(key, value, kGroupNormEngineNames);
    } else if (key == "rmsnorm.engine") {
      next.rmsnorm_engine = parse_choice<RMSNormEngine>(key, value, kRMSNormEngineNames);
    } else if (key == "linear.engine") {
      next.linear_engine = parse_choice<LinearEngine>(key, value, kLinearEngineNames);
    } else if (key == "conv.precision") {
      const char* names[] = {"as_input", "as_input_f32", "float16", "float32", "float64"};
      bool found = false;
      for (int i = 0; i < 5; ++i) {
        if (value == names[i]) {
          next.precision = static_cast<Precision>(i);
          found = true;
        }
      }
      if (!found) {
        throw tensor::Error(
            "cudnn flags: conv.precision expects as_input, as_input_f32, float16, float32 or float64, got '" + value +
            "'");
      }
    } else {
      throw tensor::Error(
          "cudnn flags: unknown key '" + key +
          "' (known: enabled, benchmark, fastest, verbose, deterministic, allow_tf32, "
          "workspace_limit, conv.algo_fwd, conv.algo_bwd_filter, conv.algo_bwd_data, conv.precision, "
          "conv.graph, conv.heuristics, conv.cache_limit, conv.search_workspace, conv.search_tolerance, channels_last, "
          "attention.fused, layernorm.engine, pool.backward, rmsnorm.engine, groupnorm.engine, "
          "linear.engine)");
    }
  }
}
}  // namespace

void set_flags(const std::string& flags) {
  Config next = config();
  apply_flags(next, flags);
  config() = next;
}

Config& config() {
  static Config cfg = [] {
    Config c;
    if (const char* env = std::getenv("CUDNN_NN_FLAGS")) apply_flags(c, env);
    return c;
  }();
  return cfg;
}

}  // namespace cudnn

// Config.cpp: flag parsing.
#include "cudnn/core/Config.h"

#include <cudnn.h>

#include <cstdlib>
#include <vector>

#include "tensor/DType.h"

namespace cudnn {

namespace {

struct AlgoName {
  const char* flag;
  int algo;
  const char* cudnn_name;
};

const std::vector<AlgoName>& names(ConvPass pass) {
  static const std::vector<AlgoName> fwd = {
      {"none", CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, "IMPLICIT_GEMM"},
      {"small", CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, "IMPLICIT_PRECOMP_GEMM"},
      {"large", CUDNN_CONVOLUTION_FWD_ALGO_GEMM, "GEMM"},
      {"direct", CUDNN_CONVOLUTION_FWD_ALGO_DIRECT, "DIRECT"},
      {"fft", CUDNN_CONVOLUTION_FWD_ALGO_FFT, "FFT"},
      {"fft_tiling", CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING, "FFT_TILING"},
      {"winograd", CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD, "WINOGRAD"},
      {"winograd_non_fused", CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED, "WINOGRAD_NONFUSED"},
      {"winograd_nonfused", CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED, "WINOGRAD_NONFUSED"},
  };
  static const std::vector<AlgoName> bwd_data = {
      {"none", CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, "ALGO_0"},
      {"deterministic", CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, "ALGO_1"},
      {"fft", CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT, "FFT"},
      {"fft_tiling", CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING, "FFT_TILING"},
      {"winograd", CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD, "WINOGRAD"},
      {"winograd_non_fused", CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED, "WINOGRAD_NONFUSED"},
      {"winograd_nonfused", CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED, "WINOGRAD_NONFUSED"},
  };
  static const std::vector<AlgoName> bwd_filter = {
      {"none", CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, "ALGO_0"},
      {"deterministic", CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, "ALGO_1"},
      {"small", CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3, "ALGO_3"},
      {"fft", CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT, "FFT"},
      {"fft_tiling", CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING, "FFT_TILING"},
      {"winograd_non_fused", CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED, "WINOGRAD_NONFUSED"},
      {"winograd_nonfused", CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED, "WINOGRAD_NONFUSED"},
  };
  switch (pass) {
    case ConvPass::Forward: return fwd;
    case ConvPass::BackwardData: return bwd_data;
    case ConvPass::BackwardFilter: return bwd_filter;
  }
  return fwd;
}

const char* policy_names[] = {"guess_once", "guess_on_shape_change", "time_once", "time_on_shape_change"};

bool parse_bool(const std::string& key, const std::string& v) {
  if (v == "true" || v == "1" || v == "True") return true;
  if (v == "false" || v == "0" || v == "False") return false;
  throw tensor::Error("cudnn flags: " + key + " expects true or false, got '" + v + "'");
}

size_t parse_bytes(const std::string& key, const std::string& v) {
  size_t used = 0;
  double n = -1;
  try {
    n = std::stod(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  double scale = 1;
  const std::string suffix = v.substr(used);
  if (suffix == "K" || suffix == "k") scale = 1024.0;
  else if (suffix == "M" || suffix == "m") scale = 1024.0 * 1024;
  else if (suffix == "G" || suffix == "g") scale = 1024.0 * 1024 * 1024;
  else if (!suffix.empty()) used = 0;
  if (used == 0 || n < 0) {
    throw tensor::Error("cudnn flags: " + key + " expects a byte count like 1073741824, 512M or 4G, got '" + v + "'");
  }
  return static_cast<size_t>(n * scale);
}

}  // namespace

AlgoSetting AlgoSetting::parse(ConvPass pass, const std::string& name) {
  AlgoSetting s;
  s.name = name;
  const Policy policies[] = {Policy::GuessOnce, Policy::GuessOnShapeChange, Policy::TimeOnce, Policy::TimeOnShapeChange};
  for (int i = 0; i < 4; ++i) {
    if (name == policy_names[i]) {
      s.policy = policies[i];
      return s;
    }
  }
  for (const auto& n : names(pass)) {
    if (name == n.flag) {
      s.policy = Policy::Fixed;
      s.algo = n.algo;
      return s;
    }
  }
  std::string known;
  for (const auto& n : names(pass)) known += std::string(n.flag) + ", ";
  for (const char* p : policy_names) known += std::string(p) + ", ";
  known.resize(known.size() - 2);
  throw tensor::Error(std::string("cudnn flags: conv.algo_") + pass_name(pass) + " has no value '" + name +
                      "' (accepted: " + known + ")");
}

bool AlgoSetting::supported_in_3d(ConvPass pass, int algo) {
  switch (pass) {
    case ConvPass::Forward:
      return algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM || algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM ||
             algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING;
    case ConvPass::BackwardFilter:
      return algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0 || algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3;
    case ConvPass::BackwardData:
      return algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_0 || algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_1 ||
             algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING;
  }
  return false;
}

const char* algo_name(ConvPass pass, int algo) {
  for (const auto& n : names(pass)) {
    if (n.algo == algo) return n.cudnn_name;
  }
  return "UNKNOWN";
}

const char* pass_name(ConvPass pass) {
  switch (pass) {
    case ConvPass::Forward: return "fwd";
    case ConvPass::BackwardData: return "bwd_data";
    case ConvPass::BackwardFilter: return "bwd_filter";
  }
  return "?";
}

const AlgoSetting& Config::algo(ConvPass pass) const {
  switch (pass) {
    case ConvPass::Forward: return algo_fwd;
    case ConvPass::BackwardData: return algo_bwd_data;
    case ConvPass::BackwardFilter: return algo_bwd_filter;
  }
  return algo_fwd;
}

std::string Config::str() const {
  const char* enabled_names[] = {"auto", "true", "false", "no_check"};
  const char* precision_names[] = {"as_input", "as_input_f32", "float16", "float32", "float64"};
  auto b = [](bool v) { return v ? "true" : "false"; };
  return std::string("enabled=") + enabled_names[static_cast<int>(enabled)] + ",benchmark=" + b(benchmark) +
         ",fastest=" + b(fastest) + ",verbose=" + b(verbose) + ",deterministic=" + b(deterministic) +
         ",allow_tf32=" + b(allow_tf32) + ",workspace_limit=" + std::to_string(workspace_limit) +
         ",conv.algo_fwd=" + algo_fwd.name + ",conv.algo_bwd_filter=" + algo_bwd_filter.name +
         ",conv.algo_bwd_data=" + algo_bwd_data.name + ",conv.precision=" + precision_names[static_cast<int>(precision)];
}

namespace {
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
      if (value == "auto") next.enabled = Enabled::Auto;
      else if (value == "true" || value == "True") next.enabled = Enabled::True;
      else if (value == "false" || value == "False") next.enabled = Enabled::False;
      else if (value == "no_check") next.enabled = Enabled::NoCheck;
      else throw tensor::Error("cudnn flags: enabled expects auto, true, false or no_check, got '" + value + "'");
    } else if (key == "benchmark") {
      next.benchmark = parse_bool(key, value);
    } else if (key == "fastest") {
      next.fastest = parse_bool(key, value);
    } else if (key == "verbose") {
      next.verbose = parse_bool(key, value);
    } else if (key == "deterministic") {
      next.deterministic = parse_bool(key, value);
    } else if (key == "allow_tf32") {
      next.allow_tf32 = parse_bool(key, value);
    } else if (key == "workspace_limit") {
      next.workspace_limit = parse_bytes(key, value);
    } else if (key == "conv.algo_fwd") {
      next.algo_fwd = AlgoSetting::parse(ConvPass::Forward, value);
    } else if (key == "conv.algo_bwd_filter") {
      next.algo_bwd_filter = AlgoSetting::parse(ConvPass::BackwardFilter, value);
    } else if (key == "conv.algo_bwd_data") {
      next.algo_bwd_data = AlgoSetting::parse(ConvPass::BackwardData, value);
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
        throw tensor::Error("cudnn flags: conv.precision expects as_input, as_input_f32, float16, float32 or float64, got '" +
                            value + "'");
      }
    } else {
      throw tensor::Error("cudnn flags: unknown key '" + key +
                          "' (known: enabled, benchmark, fastest, verbose, deterministic, allow_tf32, "
                          "workspace_limit, conv.algo_fwd, conv.algo_bwd_filter, conv.algo_bwd_data, conv.precision)");
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

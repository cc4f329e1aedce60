// conv_graph.cpp: convolution passes as cuDNN operation graphs (the backend API).
#include "cudnn/ops/conv_graph.h"

#include <algorithm>
#include <deque>
#include <map>
#include <set>

namespace cudnn::graph {

// The descriptors an engine configuration was derived from. cuDNN copies what it needs
// when an attribute is set, but keeping them alive as long as the engines costs nothing and
// does not lean on that.
struct GraphObjects {
  std::deque<BackendDescriptor> keep;  // a deque: references stay valid as it grows
};

namespace {

// y = mode(x) or y = mode(x, b), computed in float.
BackendDescriptor pointwise(cudnnPointwiseMode_t mode, const BackendDescriptor& x, const BackendDescriptor* b,
                            const BackendDescriptor& y, std::deque<BackendDescriptor>& keep) {
  BackendDescriptor pw(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  pw.set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
  pw.set_data_type(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_DATA_FLOAT);
  // relu(NaN) = NaN as nn's (Note [NaN and Inf]); engines otherwise may clamp NaN to 0
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  const cudnnNanPropagation_t nan = CUDNN_PROPAGATE_NAN;
  pw.set(CUDNN_ATTR_POINTWISE_NAN_PROPAGATION, CUDNN_TYPE_NAN_PROPOGATION, 1, &nan);
#pragma GCC diagnostic pop
  pw.finalize("pointwise");
  BackendDescriptor op(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  op.set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw);
  op.set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x);
  if (b) op.set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, *b);
  op.set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y);
  op.finalize("pointwise operation");
  keep.push_back(std::move(pw));
  return op;
}

BackendDescriptor conv_desc(const ConvSpec& g, cudnnDataType_t compute) {
  BackendDescriptor d(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  d.set_data_type(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, compute);
  const cudnnConvolutionMode_t mode = g.cross_correlation ? CUDNN_CROSS_CORRELATION : CUDNN_CONVOLUTION;
  d.set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
  d.set_int64(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, g.nd);
  std::vector<int64_t> dilation, stride, pad;
  for (int i = g.first(); i < 3; ++i) {
    dilation.push_back(g.dilation[i]);
    stride.push_back(g.stride[i]);
    pad.push_back(g.pad[i]);
  }
  d.set_int64s(CUDNN_ATTR_CONVOLUTION_DILATIONS, dilation);
  d.set_int64s(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, stride);
  d.set_int64s(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, pad);
  d.set_int64s(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, pad);
  d.finalize("convolution");
  return d;
}

// The pass's operation: which attribute takes which tensor; alpha 1 and beta 0.
BackendDescriptor operation(const ConvGraphSpec& s, const BackendDescriptor& x, const BackendDescriptor& w,
                            const BackendDescriptor& y, const BackendDescriptor& conv) {
  struct Attrs {
    cudnnBackendDescriptorType_t type;
    cudnnBackendAttributeName_t x, w, y, conv, alpha, beta;
  };
  static const Attrs table[] = {
      {CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
       CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
       CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
       CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA},
      {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA},
      {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA},
  };
  const Attrs& a = table[static_cast<int>(s.pass)];  // indexed by ConvPass
  BackendDescriptor op(a.type);
  op.set_descriptor(a.x, x);
  op.set_descriptor(a.w, w);
  op.set_descriptor(a.y, y);
  op.set_descriptor(a.conv, conv);
  // cuDNN reads double factors for double data, float otherwise (as the legacy calls)
  if (s.data == CUDNN_DATA_DOUBLE) {
    const double alpha = 1, beta = 0;
    op.set(a.alpha, CUDNN_TYPE_DOUBLE, 1, &alpha);
    op.set(a.beta, CUDNN_TYPE_DOUBLE, 1, &beta);
  } else {
    const float alpha = 1, beta = 0;
    op.set(a.alpha, CUDNN_TYPE_FLOAT, 1, &alpha);
    op.set(a.beta, CUDNN_TYPE_FLOAT, 1, &beta);
  }
  op.finalize("convolution operation");
  return op;
}

const char* note_name(cudnnBackendNumericalNote_t n) {
  switch (n) {
    case CUDNN_NUMERICAL_NOTE_TENSOR_CORE:
      return "tensor_core";
    case CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS:
      return "down_convert";
    case CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION:
      return "reduced_precision";
    case CUDNN_NUMERICAL_NOTE_FFT:
      return "fft";
    case CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC:
      return "nondeterministic";
    case CUDNN_NUMERICAL_NOTE_WINOGRAD:
      return "winograd";
    default:
      return nullptr;
  }
}

}  // namespace

ConvEngine::ConvEngine(std::shared_ptr<GraphObjects> graph, BackendDescriptor config, int64_t global_index,
                       int config_rank, std::vector<cudnnBackendNumericalNote_t> notes, bool runtime_compiled)
    : graph_(std::move(graph)),
      config_(std::move(config)),
      global_index_(global_index),
      config_rank_(config_rank),
      notes_(std::move(notes)),
      runtime_compiled_(runtime_compiled) {}

bool ConvEngine::has_note(cudnnBackendNumericalNote_t n) const {
  return std::find(notes_.begin(), notes_.end(), n) != notes_.end();
}

std::string ConvEngine::name() const {
  std::string s = "graph engine " + std::to_string(global_index_);
  if (config_rank_ > 0) s += " (config " + std::to_string(config_rank_ + 1) + ")";
  std::string tags;
  for (auto n : notes_) {
    if (const char* t = note_name(n)) tags += std::string(tags.empty() ? "" : ",") + t;
  }
  return tags.empty() ? s : s + " [" + tags + "]";
}

bool ConvEngine::build(cudnnHandle_t h, std::string& why) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (built_) {
    why = failed_;
    return plan_.has_value();
  }
  built_ = true;
  try {
    BackendDescriptor plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    plan.set_handle(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, h);
    plan.set_descriptor(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, config_);
    const cudnnStatus_t st = plan.try_finalize();
    if (st != CUDNN_STATUS_SUCCESS) {
      failed_ = std::string("no execution plan (") + cudnnGetErrorString(st) + ")";
    } else {
      workspace_ = static_cast<size_t>(plan.get_int64(CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE));
      plan_.emplace(std::move(plan));
    }
  } catch (const tensor::Error& e) {
    failed_ = std::string("no execution plan (") + e.what() + ")";
  }
  why = failed_;
  return plan_.has_value();
}

cudnnStatus_t ConvEngine::run(cudnnHandle_t h, void* x, void* w, void* y, void* ws, VariantPackCache& cache,
                              void* bias) const {
  const VariantPackCache::Tensor tensors[4] = {{kX, x}, {kW, w}, {kY, y}, {kB, bias}};
  return cache.execute(h, plan_->get(), tensors, bias ? 4 : 3, nullptr, 0, ws);
}

namespace {
// A forward with an epilogue (Note [Fusion] in conv_search.cpp): the convolution into a
// virtual float tensor, then + bias and the activation, the last writing y (keep[2]); keep
// holds x, w, y and the convolution descriptor first.
void add_fused_operations(const ConvGraphSpec& s, std::deque<BackendDescriptor>& keep,
                          std::vector<cudnnBackendDescriptor_t>& ops) {
  // conv -> (virtual, float) [+ bias -> (virtual, float)] [act ->] y
  int64_t next_uid = kVirtual;
  BackendDescriptor conv_out = tensor_descriptor(next_uid++, CUDNN_DATA_FLOAT, s.y_sizes, s.y_strides, true);
  BackendDescriptor conv_op = operation(s, keep[0], keep[1], conv_out, keep[3]);
  ops.push_back(conv_op.get());
  keep.push_back(std::move(conv_op));
  keep.push_back(std::move(conv_out));
  const BackendDescriptor* last = &keep.back();
  if (s.bias) {
    Shape b_sizes(s.y_sizes.size(), 1), b_strides(s.y_sizes.size(), 1);
    b_sizes[1] = s.y_sizes[1];
    keep.push_back(tensor_descriptor(kB, s.data, b_sizes, b_strides));
    const BackendDescriptor& b = keep.back();
    const BackendDescriptor* sum = &keep[2];
    if (s.activation) {
      keep.push_back(tensor_descriptor(next_uid++, CUDNN_DATA_FLOAT, s.y_sizes, s.y_strides, true));
      sum = &keep.back();
    }
    BackendDescriptor add = pointwise(CUDNN_POINTWISE_ADD, *last, &b, *sum, keep);
    ops.push_back(add.get());
    keep.push_back(std::move(add));
    last = sum;
  }
  if (s.activation) {
    BackendDescriptor act = pointwise(*s.activation, *last, nullptr, keep[2], keep);
    ops.push_back(act.get());
    keep.push_back(std::move(act));
  }
}
}  // namespace

std::vector<std::shared_ptr<ConvEngine>> conv_engines(const ConvGraphSpec& s, cudnnHandle_t h, size_t max,
                                                      int per_engine, std::string& why, bool mode_b) {
  std::vector<std::shared_ptr<ConvEngine>> out;
  try {
    auto objects = std::make_shared<GraphObjects>();
    auto& keep = objects->keep;
    const bool epilogue = s.pass == ConvPass::Forward && (s.bias || s.activation);
    keep.push_back(tensor_descriptor(kX, s.data, s.x_sizes, s.x_strides));
    keep.push_back(tensor_descriptor(kW, s.data, s.w_sizes, s.w_strides));
    keep.push_back(tensor_descriptor(kY, s.data, s.y_sizes, s.y_strides));
    keep.push_back(conv_desc(s.geometry, s.compute));
    std::vector<cudnnBackendDescriptor_t> ops;
    if (!epilogue) {
      keep.push_back(operation(s, keep[0], keep[1], keep[2], keep[3]));
      ops.push_back(keep.back().get());
    } else {
      add_fused_operations(s, keep, ops);
    }
    const cudnnBackendDescriptor_t graph_raw = operation_graph(ops, h, "convolution", keep, why);
    if (!graph_raw) return out;

    std::map<int64_t, int> seen;  // configurations taken per engine
    std::string heuristics_failed;
    // mode B's ranking first where asked, then A's for the engines B left out, then the fallback
    std::vector<cudnnBackendHeurMode_t> modes = {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK};
    if (mode_b) modes.insert(modes.begin(), CUDNN_HEUR_MODE_B);
    for (cudnnBackendHeurMode_t mode : modes) {
      HeuristicResults ranked = heuristic_configs(graph_raw, mode, heuristics_failed);
      std::vector<BackendDescriptor>& configs = ranked.configs;
      const int64_t got = static_cast<int64_t>(configs.size());
      for (int64_t i = 0; i < got && out.size() < max; ++i) {
        BackendDescriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
        cudnnBackendDescriptor_t engine_raw = engine.get();
        configs[i].get(CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &engine_raw);
        const int64_t index = engine.get_int64(CUDNN_ATTR_ENGINE_GLOBAL_INDEX);
        const int rank = seen[index];
        if (rank >= per_engine) continue;  // the engine's best-ranked configurations only
        cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
        const int64_t n_notes = engine.get(CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                           CUDNN_NUMERICAL_NOTE_TYPE_COUNT, notes);
        cudnnBackendBehaviorNote_t behaviour[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
        const int64_t n_behaviour = engine.get(CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                                               CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, behaviour);
        std::vector<cudnnBackendNumericalNote_t> note_list(notes, notes + n_notes);
        // Inputs rounded to a narrower type would change the answer: never a candidate.
        if (std::find(note_list.begin(), note_list.end(), CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS) !=
            note_list.end()) {
          continue;
        }
        const bool runtime_compiled = std::find(behaviour, behaviour + n_behaviour,
                                                CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION) != behaviour + n_behaviour;
        ++seen[index];
        out.push_back(std::make_shared<ConvEngine>(objects, std::move(configs[i]), index, rank, std::move(note_list),
                                                   runtime_compiled));
      }
      if (ranked.heuristics) keep.push_back(std::move(*ranked.heuristics));
    }
    if (out.empty()) why = heuristics_failed.empty() ? "the heuristics offered no engine" : heuristics_failed;
  } catch (const tensor::Error& e) {
    // A graph the backend API refuses to describe leaves the legacy algorithms: not an error.
    out.clear();
    why = e.what();
  }
  return out;
}

}  // namespace cudnn::graph

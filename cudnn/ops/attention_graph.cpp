// attention_graph.cpp: see attention_graph.h and Note [The attention graph] there.
#include "cudnn/ops/attention_graph.h"

#include <deque>
#include <limits>
#include <set>
#include <utility>

#include "cudnn/core/BackendDescriptor.h"
#include "cudnn/ops/graph_plan.h"

namespace cudnn::graph {

struct SdpaPlan::Objects {
  std::deque<BackendDescriptor> keep;  // a deque: references stay valid as it grows
  std::set<int64_t> used;              // the uids of the graph's real tensors
};

namespace {

using tensor::Shape;

Shape contiguous_strides(const Shape& dims) {
  Shape s(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * dims[i + 1];
  return s;
}

Shape swap_last(Shape s) {
  std::swap(s[2], s[3]);
  return s;
}

// Builds one operation graph: tensors, operations, and the list of operations in order.
class GraphBuilder {
 public:
  explicit GraphBuilder(SdpaPlan::Objects& o) : keep_(o.keep), used_(o.used) {}

  const BackendDescriptor& tensor(int64_t uid, cudnnDataType_t type, const Shape& dims, const Shape& strides,
                                  bool is_virtual = false, bool by_value = false) {
    keep_.push_back(tensor_descriptor(uid, type, dims, strides, is_virtual, by_value));
    if (!is_virtual) used_.insert(uid);
    return keep_.back();
  }
  // A virtual intermediate of `type`, contiguous unless `strides` are given.
  const BackendDescriptor& virt(cudnnDataType_t type, const Shape& dims, const Shape& strides = {}) {
    return tensor(next_uid_++, type, dims, strides.empty() ? contiguous_strides(dims) : strides, true);
  }
  const BackendDescriptor& scalar(int64_t uid) {
    return tensor(uid, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true);
  }

  // y = mode(x [, b] [, t]); `axis` for GEN_INDEX.
  void pointwise(cudnnPointwiseMode_t mode, cudnnDataType_t math, const BackendDescriptor& x,
                 const BackendDescriptor* b, const BackendDescriptor* t, const BackendDescriptor& y,
                 int64_t axis = -1) {
    BackendDescriptor pw(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    pw.set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
    pw.set_data_type(CUDNN_ATTR_POINTWISE_MATH_PREC, math);
    if (axis >= 0) pw.set_int64(CUDNN_ATTR_POINTWISE_AXIS, axis);
    pw.finalize("pointwise");
    BackendDescriptor op(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    op.set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw);
    op.set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x);
    if (b) op.set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, *b);
    if (t) op.set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_TDESC, *t);
    op.set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y);
    op.finalize("pointwise operation");
    keep_.push_back(std::move(pw));
    add(std::move(op));
  }
  // A float pointwise of one or two operands into a new virtual float tensor of `dims`.
  const BackendDescriptor& pw(cudnnPointwiseMode_t mode, const BackendDescriptor& x, const BackendDescriptor* b,
                              const Shape& dims, cudnnDataType_t out = CUDNN_DATA_FLOAT) {
    const BackendDescriptor& y = virt(out, dims);
    pointwise(mode, CUDNN_DATA_FLOAT, x, b, nullptr, y);
    return y;
  }

  void reduction(cudnnReduceTensorOp_t mode, const BackendDescriptor& x, const BackendDescriptor& y) {
    BackendDescriptor r(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
    r.set(CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &mode);
    r.set_data_type(CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_DATA_FLOAT);
    r.finalize("reduction");
    BackendDescriptor op(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
    op.set_descriptor(CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x);
    op.set_descriptor(CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y);
    op.set_descriptor(CUDNN_ATTR_OPERATION_REDUCTION_DESC, r);
    op.finalize("reduction operation");
    keep_.push_back(std::move(r));
    add(std::move(op));
  }

  // c = a b (batched over the first two dims), float compute; the overrides bound the rows,
  // columns or inner size per batch (padding), with `padding` as the value past them.
  void matmul(const BackendDescriptor& a, const BackendDescriptor& b, const BackendDescriptor& c,
              const BackendDescriptor* m = nullptr, const BackendDescriptor* n = nullptr,
              const BackendDescriptor* k = nullptr) {
    BackendDescriptor mm(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    mm.set_data_type(CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_DATA_FLOAT);
    if (m || n || k) {
      const double zero = 0;
      mm.set(CUDNN_ATTR_MATMUL_PADDING_VALUE, CUDNN_TYPE_DOUBLE, 1, &zero);
    }
    mm.finalize("matmul");
    BackendDescriptor op(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
    op.set_descriptor(CUDNN_ATTR_OPERATION_MATMUL_ADESC, a);
    op.set_descriptor(CUDNN_ATTR_OPERATION_MATMUL_BDESC, b);
    op.set_descriptor(CUDNN_ATTR_OPERATION_MATMUL_CDESC, c);
    op.set_descriptor(CUDNN_ATTR_OPERATION_MATMUL_DESC, mm);
    if (m) op.set_descriptor(CUDNN_ATTR_OPERATION_MATMUL_GEMM_M_OVERRIDE_DESC, *m);
    if (n) op.set_descriptor(CUDNN_ATTR_OPERATION_MATMUL_GEMM_N_OVERRIDE_DESC, *n);
    if (k) op.set_descriptor(CUDNN_ATTR_OPERATION_MATMUL_GEMM_K_OVERRIDE_DESC, *k);
    op.finalize("matmul operation");
    keep_.push_back(std::move(mm));
    add(std::move(op));
  }

  void reshape(const BackendDescriptor& x, const BackendDescriptor& y) {
    BackendDescriptor op(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR);
    op.set_descriptor(CUDNN_ATTR_OPERATION_RESHAPE_XDESC, x);
    op.set_descriptor(CUDNN_ATTR_OPERATION_RESHAPE_YDESC, y);
    op.finalize("reshape operation");
    add(std::move(op));
  }

  // s with -inf where (row, col) is masked: keys at or past the batch's length (padding) or
  // after the query (causal, top-left aligned as PyTorch's is_causal).
  const BackendDescriptor& mask(const BackendDescriptor& s, const Shape& dims, bool padding, bool causal,
                                const BackendDescriptor* seq_q, const BackendDescriptor* seq_kv,
                                const BackendDescriptor* neg_inf) {
    const BackendDescriptor* last = &s;
    if (padding) {
      const auto [row, col] = positions(*last, dims, CUDNN_DATA_INT32);
      const BackendDescriptor& row_ok = compare(CUDNN_POINTWISE_CMP_LT, row, seq_q, dims);
      const BackendDescriptor& col_ok = compare(CUDNN_POINTWISE_CMP_LT, col, seq_kv, dims);
      last = &kept(*last, compare(CUDNN_POINTWISE_LOGICAL_AND, row_ok, &col_ok, dims), dims, neg_inf);
    }
    if (causal) {
      const auto [row, col] = positions(*last, dims, CUDNN_DATA_FLOAT);
      last = &kept(*last, compare(CUDNN_POINTWISE_CMP_GE, row, &col, dims), dims, neg_inf);
    }
    return *last;
  }

  // The (row, col) positions of s's elements, int32 (GEN_INDEX along the query and key dims,
  // computed in `math`).
  std::pair<const BackendDescriptor&, const BackendDescriptor&> positions(const BackendDescriptor& s, const Shape& dims,
                                                                          cudnnDataType_t math) {
    const BackendDescriptor& row = virt(CUDNN_DATA_INT32, dims);
    pointwise(CUDNN_POINTWISE_GEN_INDEX, math, s, nullptr, nullptr, row, 2);
    const BackendDescriptor& col = virt(CUDNN_DATA_INT32, dims);
    pointwise(CUDNN_POINTWISE_GEN_INDEX, math, s, nullptr, nullptr, col, 3);
    return {row, col};
  }
  // A boolean `mode` (a comparison, a logical and) of a and b into a new virtual tensor.
  const BackendDescriptor& compare(cudnnPointwiseMode_t mode, const BackendDescriptor& a, const BackendDescriptor* b,
                                   const Shape& dims) {
    const BackendDescriptor& y = virt(CUDNN_DATA_BOOLEAN, dims);
    pointwise(mode, CUDNN_DATA_BOOLEAN, a, b, nullptr, y);
    return y;
  }
  // s where keep is true, -inf elsewhere.
  const BackendDescriptor& kept(const BackendDescriptor& s, const BackendDescriptor& keep, const Shape& dims,
                                const BackendDescriptor* neg_inf) {
    const BackendDescriptor& out = virt(CUDNN_DATA_FLOAT, dims);
    pointwise(CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT, s, neg_inf, &keep, out);
    return out;
  }

  const std::vector<cudnnBackendDescriptor_t>& ops() const { return ops_; }

 private:
  void add(BackendDescriptor op) {
    keep_.push_back(std::move(op));
    ops_.push_back(keep_.back().get());
  }
  std::deque<BackendDescriptor>& keep_;
  std::set<int64_t>& used_;
  std::vector<cudnnBackendDescriptor_t> ops_;
  int64_t next_uid_ = kFirstVirtual;
};

// The scaled scores plus the bias, where the spec has one.
const BackendDescriptor& biased(const SdpaGraphSpec& s, GraphBuilder& g, const BackendDescriptor& scaled,
                                const Shape& scores) {
  if (s.biasB == 0) return scaled;
  const Shape dims{s.biasB, s.biasH, s.sq, s.sk};
  const auto& bias = g.tensor(kBias, s.data, dims, contiguous_strides(dims));
  return g.pw(CUDNN_POINTWISE_ADD, scaled, &bias, scores);
}

// A gradient of k or v: straight into `out` without groups; else per query head into a
// virtual [b, h, sk, n] tensor of the data type, summed over each group into `out`.
void grouped_matmul(const SdpaGraphSpec& s, GraphBuilder& g, const BackendDescriptor& a, const BackendDescriptor& b,
                    const BackendDescriptor& out, int64_t n, const BackendDescriptor* m_override,
                    const BackendDescriptor* k_override) {
  if (s.kv_heads() == s.h) {
    g.matmul(a, b, out, m_override, nullptr, k_override);
    return;
  }
  const auto& full = g.virt(s.data, {s.b, s.h, s.sk, n});
  g.matmul(a, b, full, m_override, nullptr, k_override);
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, full, out);
}

void build_forward(const SdpaGraphSpec& s, GraphBuilder& g) {
  const Shape scores{s.b, s.h, s.sq, s.sk}, rows{s.b, s.h, s.sq, 1};
  const Shape rows_strides{s.h * s.sq, s.sq, 1, 1};
  const int64_t hkv = s.kv_heads();
  const auto& q = g.tensor(kQ, s.data, {s.b, s.h, s.sq, s.d}, s.q);
  const auto& kt = g.tensor(kK, s.data, {s.b, hkv, s.d, s.sk}, swap_last(s.k));
  const auto& v = g.tensor(kV, s.data, {s.b, hkv, s.sk, s.dv}, s.v);
  const auto& o = g.tensor(kO, s.data, {s.b, s.h, s.sq, s.dv}, s.o);
  const auto& stats = g.tensor(kStats, CUDNN_DATA_FLOAT, rows, rows_strides);
  const auto& scale = g.scalar(kScale);
  const BackendDescriptor *seq_q = nullptr, *seq_kv = nullptr, *neg_inf = nullptr;
  if (s.padding || s.causal) neg_inf = &g.scalar(kNegInf);
  if (s.padding) {
    seq_q = &g.tensor(kSeqQ, CUDNN_DATA_INT32, {s.b, 1, 1, 1}, {1, 1, 1, 1});
    seq_kv = &g.tensor(kSeqKv, CUDNN_DATA_INT32, {s.b, 1, 1, 1}, {1, 1, 1, 1});
  }
  const auto& qk = g.virt(CUDNN_DATA_FLOAT, scores);
  g.matmul(q, kt, qk, seq_q, seq_kv);
  const auto& scaled = biased(s, g, g.pw(CUDNN_POINTWISE_MUL, qk, &scale, scores), scores);
  const auto& masked = g.mask(scaled, scores, s.padding, s.causal, seq_q, seq_kv, neg_inf);
  // softmax with its statistics: Stats = max + log(sum), P = exp(S - max) / sum
  const auto& mx = g.virt(CUDNN_DATA_FLOAT, rows);
  g.reduction(CUDNN_REDUCE_TENSOR_MAX, masked, mx);
  const auto& centred = g.pw(CUDNN_POINTWISE_SUB, masked, &mx, scores);
  const auto& e = g.pw(CUDNN_POINTWISE_EXP, centred, nullptr, scores);
  const auto& sum = g.virt(CUDNN_DATA_FLOAT, rows);
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, e, sum);
  const auto& log_sum = g.pw(CUDNN_POINTWISE_LOG, sum, nullptr, rows);
  g.pointwise(CUDNN_POINTWISE_ADD, CUDNN_DATA_FLOAT, mx, &log_sum, nullptr, stats);
  const BackendDescriptor* p = nullptr;
  if (s.dropout) {
    const auto& soft = g.pw(CUDNN_POINTWISE_DIV, e, &sum, scores);
    const auto& one = g.scalar(kOne);
    const auto& scaled_p = g.pw(CUDNN_POINTWISE_MUL, soft, &one, scores);
    const auto& mask = g.tensor(kMask, s.data, scores, contiguous_strides(scores));
    p = &g.pw(CUDNN_POINTWISE_MUL, scaled_p, &mask, scores, s.data);
  } else {
    p = &g.pw(CUDNN_POINTWISE_DIV, e, &sum, scores, s.data);
  }
  g.matmul(*p, v, o, seq_q, nullptr, seq_kv);
}

void build_backward(const SdpaGraphSpec& s, GraphBuilder& g) {
  const Shape scores{s.b, s.h, s.sq, s.sk}, rows{s.b, s.h, s.sq, 1};
  const Shape rows_strides{s.h * s.sq, s.sq, 1, 1};
  const Shape transposed{s.b, s.h, s.sk, s.sq}, transposed_strides{s.h * s.sq * s.sk, s.sq * s.sk, 1, s.sk};
  const int64_t hkv = s.kv_heads();
  const auto& q = g.tensor(kQ, s.data, {s.b, s.h, s.sq, s.d}, s.q);
  const auto& kt = g.tensor(kK, s.data, {s.b, hkv, s.d, s.sk}, swap_last(s.k));
  const auto& vt = g.tensor(kV, s.data, {s.b, hkv, s.dv, s.sk}, swap_last(s.v));
  const auto& o = g.tensor(kO, s.data, {s.b, s.h, s.sq, s.dv}, s.o);
  const auto& dout = g.tensor(kDO, s.data, {s.b, s.h, s.sq, s.dv}, s.dO);
  const auto& stats = g.tensor(kStats, CUDNN_DATA_FLOAT, rows, rows_strides);
  const auto& dq = g.tensor(kDQ, s.data, {s.b, s.h, s.sq, s.d}, s.dQ);
  const auto& dk = g.tensor(kDK, s.data, {s.b, hkv, s.sk, s.d}, s.dK);
  const auto& dv = g.tensor(kDV, s.data, {s.b, hkv, s.sk, s.dv}, s.dV);
  const auto& row_dot = g.tensor(kRowDot, CUDNN_DATA_FLOAT, rows, rows_strides);
  const auto& dq_accum =
      g.tensor(kDQAccum, CUDNN_DATA_FLOAT, {s.b, s.h, s.sq, s.d}, contiguous_strides({s.b, s.h, s.sq, s.d}));
  const auto& scale = g.scalar(kScale);
  const auto& one = g.scalar(kOne);
  const BackendDescriptor *seq_q = nullptr, *seq_kv = nullptr, *mask = nullptr, *neg_inf = nullptr;
  if (s.padding || s.causal) neg_inf = &g.scalar(kNegInf);
  if (s.padding) {
    seq_q = &g.tensor(kSeqQ, CUDNN_DATA_INT32, {s.b, 1, 1, 1}, {1, 1, 1, 1});
    seq_kv = &g.tensor(kSeqKv, CUDNN_DATA_INT32, {s.b, 1, 1, 1}, {1, 1, 1, 1});
  }
  if (s.dropout) mask = &g.tensor(kMask, s.data, scores, contiguous_strides(scores));

  // rowDot = rowsum(dO * O)
  const auto& prod = g.pw(CUDNN_POINTWISE_MUL, dout, &o, {s.b, s.h, s.sq, s.dv});
  const auto& prod_sum = g.virt(CUDNN_DATA_FLOAT, rows);
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, prod, prod_sum);
  g.pointwise(CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, prod_sum, &one, nullptr, row_dot);

  // P = exp(S * scale - Stats), masked
  const auto& qk = g.virt(CUDNN_DATA_FLOAT, scores);
  g.matmul(q, kt, qk, seq_q, seq_kv);
  const auto& scaled = biased(s, g, g.pw(CUDNN_POINTWISE_MUL, qk, &scale, scores), scores);
  const auto& padded = g.mask(scaled, scores, s.padding, false, seq_q, seq_kv, neg_inf);
  const auto& centred = g.pw(CUDNN_POINTWISE_SUB, padded, &stats, scores);
  const auto& causal = g.mask(centred, scores, false, s.causal, nullptr, nullptr, neg_inf);
  const auto& p = g.pw(CUDNN_POINTWISE_EXP, causal, nullptr, scores);

  // dV = (P [* mask])^T dO
  const BackendDescriptor* p_used = &p;
  if (s.dropout) {
    const auto& masked = g.pw(CUDNN_POINTWISE_MUL, p, mask, scores);
    p_used = &g.pw(CUDNN_POINTWISE_MUL, masked, &one, scores);
  }
  const auto& pt = g.virt(s.data, transposed, transposed_strides);
  g.reshape(*p_used, pt);
  grouped_matmul(s, g, pt, dout, dv, s.dv, seq_kv, seq_q);

  // dS = (dO V^T [* mask] - rowDot) * P [* 1] * scale
  const auto& dpd = g.virt(CUDNN_DATA_FLOAT, scores);
  g.matmul(dout, vt, dpd, seq_q, seq_kv);
  const BackendDescriptor* dp = &dpd;
  if (s.dropout) dp = &g.pw(CUDNN_POINTWISE_MUL, dpd, mask, scores);
  const auto& centred_dp = g.pw(CUDNN_POINTWISE_SUB, *dp, &row_dot, scores);
  const BackendDescriptor* ds = &g.pw(CUDNN_POINTWISE_MUL, centred_dp, &p, scores);
  if (s.dropout) ds = &g.pw(CUDNN_POINTWISE_MUL, *ds, &one, scores);
  const auto& ds_scaled = g.pw(CUDNN_POINTWISE_MUL, *ds, &scale, scores);

  // dK = dS^T Q
  const auto& dst = g.virt(s.data, transposed, transposed_strides);
  g.reshape(ds_scaled, dst);
  grouped_matmul(s, g, dst, q, dk, s.d, seq_kv, seq_q);

  // dQ = dS K, accumulated in float
  const auto& k = g.virt(s.data, {s.b, hkv, s.sk, s.d}, s.k);
  g.reshape(kt, k);
  g.matmul(ds_scaled, k, dq_accum, seq_q, nullptr, seq_kv);
  g.pointwise(CUDNN_POINTWISE_IDENTITY, CUDNN_DATA_FLOAT, dq_accum, nullptr, nullptr, dq);
}

}  // namespace

SdpaKey make_key(const SdpaGraphSpec& s, uint64_t handle) {
  SdpaKey k{};  // zeros: unused strides included
  k.backward = s.backward, k.data = static_cast<int64_t>(s.data), k.b = s.b, k.h = s.h, k.hkv = s.kv_heads();
  k.sq = s.sq, k.sk = s.sk, k.d = s.d, k.dv = s.dv, k.causal = s.causal, k.padding = s.padding;
  k.dropout = s.dropout, k.biasB = s.biasB, k.biasH = s.biasH;
  const Shape bias = s.biasB > 0 ? contiguous_strides({s.biasB, s.biasH, s.sq, s.sk}) : Shape{};
  const Shape* strides[9] = {&s.q, &s.k, &s.v, &s.o, &s.dO, &s.dQ, &s.dK, &s.dV, &bias};
  for (int i = 0; i < 9; ++i) {
    for (size_t j = 0; j < strides[i]->size() && j < 4; ++j) k.strides[i][j] = (*strides[i])[j];
  }
  k.handle = handle;
  return k;
}

SdpaPlan::SdpaPlan(std::shared_ptr<Objects> objects, size_t workspace, std::string name)
    : objects_(std::move(objects)),
      workspace_(workspace),
      name_(std::move(name)),
      neg_inf_(-std::numeric_limits<float>::infinity()),
      one_(1.0f) {}

std::shared_ptr<SdpaPlan> SdpaPlan::build(const SdpaGraphSpec& spec, cudnnHandle_t h, std::string& why) {
  try {
    auto objects = std::make_shared<Objects>();
    GraphBuilder g(*objects);
    if (spec.backward)
      build_backward(spec, g);
    else
      build_forward(spec, g);
    const cudnnBackendDescriptor_t graph_raw = operation_graph(g.ops(), h, "attention", objects->keep, why);
    if (!graph_raw) return nullptr;
    std::string tried;
    PlanInfo info;
    if (first_plan(graph_raw, h, objects->keep, info, tried)) {
      return std::make_shared<SdpaPlan>(objects, info.workspace,
                                        "fused attention engine " + std::to_string(info.engine));
    }
    why = "no cuDNN engine takes the attention graph" + (tried.empty() ? std::string() : " (" + tried + ")");
  } catch (const tensor::Error& e) {
    why = e.what();  // a graph the backend API refuses to describe: the fallback runs
  }
  return nullptr;
}

cudnnStatus_t SdpaPlan::run(cudnnHandle_t h, std::vector<std::pair<int64_t, void*>> ptrs, float scale, void* ws) const {
  ptrs.emplace_back(kNegInf, const_cast<float*>(&neg_inf_));
  ptrs.emplace_back(kOne, const_cast<float*>(&one_));
  std::lock_guard<std::mutex> lock(mutex_);
  return execute(h, objects_->keep.back().get(), objects_->used, ptrs, {{kScale, scale}}, ws, packs_);
}

}  // namespace cudnn::graph

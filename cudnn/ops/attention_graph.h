// attention_graph.h: scaled dot-product attention as a cuDNN operation graph (the backend
// API), the pattern cuDNN's fused flash-attention engines take (internal to
// ops/attention.cpp, which falls back to GEMMs + softmax kernels where no engine does).
// Note [The attention graph]: cuDNN 9 recognises attention as a graph of matmuls, pointwise
// operations and reductions in one shape: forward
//   S = Q K^T * scale; [S += bias]; [padding: keys >= seq_len_kv -> -inf]; [causal: key > query -> -inf];
//   Stats = max + log(sum exp(S - max)); P = exp(S - max) / sum; [P *= 1 * mask]; O = P V
// and backward
//   rowDot = rowsum(dO * O); P = exp(S - Stats) (masked as above); dV = (P [* mask])^T dO;
//   dS = (dO V^T [* mask] - rowDot) * P * scale; dK = dS^T Q; dQ = dS K (through a float
//   buffer). The intermediates are virtual; Stats, rowDot and the dQ accumulator are real
//   float buffers. Masks come from generated row/column indices compared with the
//   per-batch lengths, as cudnn-frontend's composite SDPA nodes build them (read for the
//   pattern, not copied). Data is float16 or bfloat16 (fused engines take nothing else); the
//   head size a multiple of 8. Grouped-query attention: K and V have fewer heads (the engines
//   broadcast each over its group of query heads), and backward computes dK and dV per query
//   head (virtual) and sums each group with a reduction into the fewer-headed outputs, as
//   cudnn-frontend lays it out. The bias (an additive or converted boolean mask) is a real
//   [b|1, h|1, sq, sk] tensor added after the scale. cuDNN 9.15 and older need the padding form for backward graphs
//   whose key count is not a multiple of 128, so ops/attention.cpp asks for it there.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "cudnn/ops/graph_plan.h"
#include "tensor/Tensor.h"

namespace cudnn::graph {

struct SdpaGraphSpec {
  bool backward = false;
  cudnnDataType_t data = CUDNN_DATA_HALF;
  int64_t b = 0, h = 0, sq = 0, sk = 0, d = 0, dv = 0;
  int64_t hkv = 0;  // k's and v's heads (grouped-query attention when < h; 0 = h)
  // [b, h, s, d] strides in elements of q, k, v, o (and do, dq, dk, dv for backward); k, v, dk,
  // dv have hkv heads
  tensor::Shape q, k, v, o, dO, dQ, dK, dV;
  bool causal = false;
  bool padding = false;  // per-batch key lengths (kSeqKv) and query lengths (kSeqQ, all sq)
  bool dropout = false;  // a [b x h x sq x sk] mask of the data type (kMask)
  // an additive bias (kBias) of the data type, contiguous [biasB x biasH x sq x sk] (biasB 1
  // or b, biasH 1 or h), added to the scaled scores; 0 = none
  int64_t biasB = 0, biasH = 0;
  int64_t kv_heads() const { return hkv > 0 ? hkv : h; }
};

// Everything an attention graph depends on, as a fixed-layout key of the one plan cache
// (graph_plan.h): the spec and the handle it is built with.
struct SdpaKey {
  int64_t backward, data, b, h, hkv, sq, sk, d, dv, causal, padding, dropout, biasB, biasH;
  int64_t strides[9][4];  // q, k, v, o, dO, dQ, dK, dV, bias ([b, h, s, d]; zeros where unused)
  uint64_t handle;        // handle_serial()
};
static_assert(sizeof(SdpaKey) == 14 * 8 + 36 * 8 + 8, "SdpaKey must have no padding");
SdpaKey make_key(const SdpaGraphSpec& spec, uint64_t handle);

// The uids of the graph's real tensors; run() takes (uid, pointer) pairs for them.
enum SdpaUid : int64_t {
  kQ = 1,
  kK,
  kV,
  kO,
  kStats,
  kScale,  // float, by value (a host pointer)
  kSeqQ,   // int32 [b]
  kSeqKv,  // int32 [b]
  kMask,   // [b, h, sq, sk] of the data type
  kDO,
  kDQ,
  kDK,
  kDV,
  kRowDot,   // float [b, h, sq] buffer (backward)
  kDQAccum,  // float [b, h, sq, d] buffer (backward)
  kNegInf,   // constants the plan holds itself
  kOne,
  kBias,  // [biasB, biasH, sq, sk] of the data type
  kFirstVirtual = 100
};

class SdpaPlan {
 public:
  // The graph's first engine configuration that builds an execution plan, or nullptr with
  // `why` (cuDNN refuses the graph, no engine takes it, or no plan finalizes).
  static std::shared_ptr<SdpaPlan> build(const SdpaGraphSpec& spec, cudnnHandle_t h, std::string& why);

  size_t workspace() const { return workspace_; }
  const std::string& name() const { return name_; }
  // Executes with the pointers of the spec's real tensors and the scale (kScale, by value),
  // through the plan's own variant packs (thread-safe: one run at a time).
  cudnnStatus_t run(cudnnHandle_t h, std::vector<std::pair<int64_t, void*>> ptrs, float scale, void* ws) const;

  struct Objects;  // the descriptors the plan was built from (kept alive with it)
  SdpaPlan(std::shared_ptr<Objects> objects, size_t workspace, std::string name);

 private:
  std::shared_ptr<Objects> objects_;
  size_t workspace_;
  std::string name_;
  float neg_inf_, one_;
  mutable std::mutex mutex_;
  mutable VariantPackCache packs_;
};

}  // namespace cudnn::graph

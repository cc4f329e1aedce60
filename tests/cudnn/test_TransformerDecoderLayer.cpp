// test_TransformerDecoderLayer.cpp: cudnn.TransformerDecoderLayer (a convert()ed layer: the
// container's twin with twinned children) against nn.TransformerDecoderLayer in float64 on the
// CPU, in float32 (TF32 off), float64, float16 and bfloat16: post- and pre-norm, ReLU and GELU,
// tgt_is_causal, key padding and attn masks, the output, gradTgt, gradMemory and every parameter
// gradient; NaN and Inf parity, an empty batch, non-contiguous inputs, device errors, and the
// convert round trip.
#include <doctest/doctest.h>

#include "convert/Convert.h"
#include "cudnn/TransformerDecoderLayer.h"
#include "cudnn/core/Config.h"
#include "nn/LayerNorm.h"
#include "nn/MultiheadAttention.h"
#include "nn/TransformerDecoderLayer.h"
#include "tensor/Cuda.h"
#include "tests/support/NonContiguous.h"
#include "tests/support/TwinCheck.h"

using namespace tensor;
using namespace testing;

namespace {
const Device gpu = Device::cuda(0);
const DType kDtypes[] = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16};

double rel(const Tensor& got, const Tensor& want) {
  const Tensor g = got.to(Device::cpu(), DType::Float64), w = want.to(Device::cpu(), DType::Float64);
  const double norm = w.norm();
  return g.sub(w).norm() / (norm > 0 ? norm : 1.0);
}

// a whole layer (two attentions, three norms, the feed-forward block) in 16 bits: looser than
// one attention's bound (tests/cudnn/test_MultiheadAttention.cpp)
TwinTolerance layer_tolerance(DType dt) {
  TwinTolerance t = TwinTolerance::for_dtype(dt);
  if (dt == DType::Float16) t = {1e-2, 4e-2};
  if (dt == DType::BFloat16) t = {5e-2, 1.6e-1};
  return t;
}

const Tensor& tensor_of(const nn::Value& v) { return v.tensorOrUndefined(); }

struct Setup {
  bool causal = false, masks = false;
};

// The masks of `s` for B x T queries over S memory keys, on `device`.
void apply(nn::TransformerDecoderLayer& m, const Setup& s, int64_t T, int64_t S, int64_t B, Device device) {
  m.setTgtIsCausal(s.causal);
  if (!s.masks) return;
  std::vector<uint8_t> pad(B * S, 0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = S - b; j < S; ++j) pad[b * S + j] = 1;  // row b ignores its last b keys
  m.setMemoryKeyPaddingMask(from_vector<uint8_t>(pad, {B, S}).to(device));
  std::vector<int64_t> len;
  for (int64_t b = 0; b < B; ++b) len.push_back(T - b % T);
  m.setTgtKeyLengths(from_vector<int64_t>(len, {B}).to(device));
}

// A twin converted from a copy of `ref`, on the GPU in `dt`, with ref's state and mode.
nn::ModulePtr twin_of(nn::TransformerDecoderLayer& ref, DType dt) {
  auto copy =
      std::make_shared<nn::TransformerDecoderLayer>(ref.dModel, ref.nhead, ref.dimFeedforward, ref.dropout,
                                                    ref.activation, ref.batchFirst, ref.normFirst, ref.layerNormEps);
  nn::ModulePtr twin = nn::convert(copy, cudnn::backend);
  twin->to(gpu);
  twin->to(dt);
  twin->loadStateDict(ref.stateDict());
  if (ref.isTraining()) {
    twin->train();
  } else {
    twin->evaluate();
  }
  return twin;
}

// One forward and backward of each; the twin's output, gradTgt, gradMemory and parameter
// gradients against nn's (tgtT / memT: the twin's inputs, of any layout).
void compare(nn::TransformerDecoderLayer& ref, nn::Module& twin, const Tensor& tgt, const Tensor& mem,
             const Tensor& tgtT, const Tensor& memT, const Tensor& gy, DType dt, TwinTolerance tol) {
  ref.zeroGradParameters();
  twin.zeroGradParameters();
  const nn::Value in = nn::Table{tgt, mem}, inT = nn::Table{tgtT, memT};
  const Tensor want = tensor_of(ref.forward(in)).clone();
  const Tensor got = tensor_of(twin.forward(inT)).clone();
  CHECK(got.device() == gpu);
  CHECK(got.dtype() == dt);
  CHECK(rel(got, want) < tol.forward);
  const nn::Value g = ref.backward(in, gy);
  const nn::Value gT = twin.backward(inT, gy.to(gpu, dt));
  REQUIRE(gT.size() == 2);
  CHECK(rel(tensor_of(gT[0]), tensor_of(g[0])) < tol.backward);
  CHECK(rel(tensor_of(gT[1]), tensor_of(g[1])) < tol.backward);
  const auto want_g = ref.namedGradParameters(), got_g = twin.namedGradParameters();
  REQUIRE(want_g.size() == got_g.size());
  for (size_t i = 0; i < want_g.size(); ++i) {
    INFO(want_g[i].first);
    CHECK(got_g[i].first == want_g[i].first);
    CHECK(rel(got_g[i].second, want_g[i].second) < tol.backward);
  }
}
}  // namespace

TEST_CASE("cudnn.TransformerDecoderLayer matches nn (post- and pre-norm, ReLU and GELU, causal, masks)") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  Generator gen(7401);
  INFO("seed 7401");
  struct Case {
    bool normFirst;
    const char* act;
    bool batchFirst;
    Setup setup;
  };
  const Case cases[] = {{false, "relu", false, {}},
                        {true, "gelu", true, {true, true}},
                        {false, "gelu", false, {true, true}},
                        {true, "relu", false, {false, true}}};
  const int64_t E = 32, H = 4, F = 64, T = 10, S = 14, B = 3;
  for (const Case& c : cases) {
    for (DType dt : kDtypes) {
      INFO((c.normFirst ? "pre-norm " : "post-norm "), c.act, c.batchFirst ? " batch_first" : "",
           c.setup.causal ? " causal" : "", c.setup.masks ? " masks" : "", " ", name(dt));
      nn::TransformerDecoderLayer ref(E, H, F, 0.0, c.act, c.batchFirst, c.normFirst);
      ref.to(DType::Float64);
      nn::ModulePtr twin = twin_of(ref, dt);
      CHECK(twin->type_name() == "cudnn.TransformerDecoderLayer");
      auto& layer = dynamic_cast<nn::TransformerDecoderLayer&>(*twin);
      CHECK(layer.selfAttn().type_name() == "cudnn.MultiheadAttention");
      CHECK(layer.multiheadAttn().type_name() == "cudnn.MultiheadAttention");
      CHECK(layer.norm3().type_name() == "cudnn.LayerNorm");
      apply(ref, c.setup, T, S, B, Device::cpu());
      apply(layer, c.setup, T, S, B, gpu);
      const Shape ts = c.batchFirst ? Shape{B, T, E} : Shape{T, B, E};
      const Shape ms = c.batchFirst ? Shape{B, S, E} : Shape{S, B, E};
      const Tensor tgt = uniform(ts, -1, 1, gen, DType::Float64), mem = uniform(ms, -1, 1, gen, DType::Float64);
      const Tensor gy = uniform(ts, -1, 1, gen, DType::Float64);
      compare(ref, *twin, tgt, mem, tgt.to(gpu, dt), mem.to(gpu, dt), gy, dt, layer_tolerance(dt));
      // non-contiguous inputs: the same results
      compare(ref, *twin, tgt, mem, noncontiguous_copy(tgt.to(gpu, dt), 0, 1),
              noncontiguous_copy(mem.to(gpu, dt), 0, 1), gy, dt, layer_tolerance(dt));
    }
  }
}

TEST_CASE("cudnn.TransformerDecoderLayer: NaN and Inf where nn has them, an empty batch, device errors") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  Generator gen(7402);
  for (bool normFirst : {false, true}) {
    INFO("normFirst ", normFirst);
    nn::TransformerDecoderLayer ref(16, 2, 32, 0.0, "gelu", false, normFirst);
    ref.to(DType::Float64);
    nn::ModulePtr twin = twin_of(ref, DType::Float32);
    Tensor tgt = uniform({5, 2, 16}, -1, 1, gen, DType::Float64), mem = uniform({6, 2, 16}, -1, 1, gen, DType::Float64);
    tgt = with_nonfinite(tgt, {3, 40});          // NaN and +Inf in tgt
    mem = with_nonfinite(mem, {100, 101, 102});  // NaN, +Inf and -Inf in memory
    const Tensor gy = uniform({5, 2, 16}, -1, 1, gen, DType::Float64);
    const nn::Value in = nn::Table{tgt, mem}, inT = nn::Table{tgt.to(gpu, DType::Float32), mem.to(gpu, DType::Float32)};
    const double tol = TwinTolerance::for_dtype(DType::Float32).backward;
    expect_same_nonfinite("output", tensor_of(twin->forward(inT)), tensor_of(ref.forward(in)), tol);
    const nn::Value g = ref.backward(in, gy);
    const nn::Value gT = twin->backward(inT, gy.to(gpu, DType::Float32));
    expect_same_nonfinite("gradTgt", tensor_of(gT[0]), tensor_of(g[0]), tol);
    expect_same_nonfinite("gradMemory", tensor_of(gT[1]), tensor_of(g[1]), tol);

    // an empty batch: empty outputs and gradients, zero parameter gradients
    twin->zeroGradParameters();
    const nn::Value empty = nn::Table{zeros({5, 0, 16}).to(gpu), zeros({6, 0, 16}).to(gpu)};
    CHECK(tensor_of(twin->forward(empty)).sizes() == Shape{5, 0, 16});
    const nn::Value& ge = twin->backward(empty, zeros({5, 0, 16}).to(gpu));
    CHECK(tensor_of(ge[0]).sizes() == Shape{5, 0, 16});
    CHECK(tensor_of(ge[1]).sizes() == Shape{6, 0, 16});
    for (const auto& [name, grad] : twin->namedGradParameters()) {
      INFO(name);
      CHECK(grad.to(Device::cpu()).norm() == 0);
    }

    // CPU tensors, and memory on another device than tgt
    const Tensor cpuTgt = zeros({5, 2, 16}), cpuMem = zeros({6, 2, 16});
    CHECK_THROWS_WITH_AS(twin->forward(nn::Table{cpuTgt, cpuMem}),
                         doctest::Contains("cudnn.TransformerDecoderLayer::updateOutput: expected input on a CUDA "
                                           "device"),
                         Error);
    CHECK_THROWS_WITH_AS(twin->forward(nn::Table{cpuTgt.to(gpu), cpuMem}),
                         doctest::Contains("cudnn.TransformerDecoderLayer::updateOutput: expected memory of tgt's "
                                           "dtype and device"),
                         Error);
    const nn::Value gpuIn = nn::Table{cpuTgt.to(gpu), cpuMem.to(gpu)};
    twin->forward(gpuIn);
    CHECK_THROWS_WITH_AS(twin->backward(gpuIn, cpuTgt),
                         doctest::Contains("cudnn.TransformerDecoderLayer::backward: expected gradOutput on cuda:0"),
                         Error);
  }
}

TEST_CASE("cudnn.TransformerDecoderLayer converts both ways") {
  cudnn::ScopedConfig flags("allow_tf32=false");  // compared with the float32 CPU forward at 1e-5
  Generator gen(7403);
  auto layer = std::make_shared<nn::TransformerDecoderLayer>(16, 2, 32, 0.1, "gelu", true, true);
  layer->setTgtIsCausal(true);
  layer->evaluate();
  const nn::Value in = nn::Table{uniform({2, 6, 16}, -1, 1, gen), uniform({2, 4, 16}, -1, 1, gen)};
  const Tensor want = tensor_of(layer->forward(in)).clone();
  const auto before = layer->stateDict();
  nn::ModulePtr twin = nn::convert(layer, cudnn::backend);
  CHECK(twin->type_name() == "cudnn.TransformerDecoderLayer");
  CHECK_FALSE(twin->isTraining());
  CHECK(dynamic_cast<nn::TransformerDecoderLayer&>(*twin).tgtIsCausal());
  for (const auto& named : twin->stateDict()) CHECK(named.second.is_cuda());  // convert moves the state
  const nn::Value inT = nn::Table{tensor_of(in[0]).to(gpu), tensor_of(in[1]).to(gpu)};
  CHECK(rel(tensor_of(twin->forward(inT)), want) < 1e-5);
  nn::ModulePtr back = nn::convert(twin, nn::backend);
  CHECK(back->type_name() == "nn.TransformerDecoderLayer");
  CHECK(dynamic_cast<nn::TransformerDecoderLayer&>(*back).selfAttn().type_name() == "nn.MultiheadAttention");
  CHECK_FALSE(back->isTraining());
  for (const auto& [name, t] : back->stateDict()) {
    INFO(name);
    CHECK(t.is_cpu());
    CHECK(max_abs_diff(t, before.at(name)) == 0);
  }
  CHECK(max_abs_diff(tensor_of(back->forward(in)), want) == 0);
}

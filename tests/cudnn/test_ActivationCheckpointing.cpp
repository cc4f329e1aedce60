// test_ActivationCheckpointing.cpp (GPU): DecoderBlock's activation checkpointing over the cudnn
// twins (Note [Activation checkpointing] in nn/DecoderBlock.cpp):
// - GPT-2 and Llama with dropout, converted after the switch is set (it survives convert): every
//   block or a subset checkpointed gives the plain model's logits, gradients and generator state
//   bit for bit, in float32 (TF32 off) and bfloat16 (deterministic engines, the attention fallback:
//   cuDNN's fused attention backward may sum dQ in another order from run to run);
// - a checkpointed step captured in a CUDA graph, with and without dropout, replays as the plain
//   eager step from the same generator state; a forward that drew masks and its backward on
//   different sides of a capture is refused;
// - memory: releaseActivations gives a step's activations back, and an 8-block GPT-2's training
//   step peaks at less than half the plain step's activation memory.
#include <doctest/doctest.h>

#include "convert/Convert.h"
#include "cudnn/Config.h"
#include "nn/DecoderBlock.h"
#include "nn/DecoderLM.h"
#include "tensor/Cuda.h"
#include "tests/support/CheckpointedLM.h"
#include "tests/support/ErrorText.h"

using namespace tensor;
using namespace testing;

namespace {
const Device gpu = Device::cuda(0);
const nn::DecoderKind kKinds[] = {nn::DecoderKind::GPT2, nn::DecoderKind::Llama};

// A model of make_checkpoint_model, its blocks' switches set on the nn model, then converted.
std::shared_ptr<nn::DecoderLM> on_gpu(nn::DecoderKind kind, double dropout, DType dt, const std::vector<bool>& on) {
  auto cpu = make_checkpoint_model(kind, 11, dropout);
  cpu->setActivationCheckpointing(on);
  auto m = std::dynamic_pointer_cast<nn::DecoderLM>(nn::convert(cpu, cudnn::backend));
  REQUIRE(m);
  m->to(gpu);
  m->to(dt);
  m->train();
  return m;
}

std::map<std::string, std::vector<double>> grads_of(nn::DecoderLM& m) {
  std::map<std::string, std::vector<double>> out;
  for (const auto& [name, g] : m.namedGradParameters()) out[name] = g.to_vector<double>();
  return out;
}
}  // namespace

TEST_CASE("cudnn twins: checkpointing every block or a subset is bit-identical, with dropout, float32 and bfloat16") {
  cudnn::ScopedConfig flags("allow_tf32=false,deterministic=true,attention.fused=false");
  for (nn::DecoderKind kind : kKinds) {
    for (DType dt : {DType::Float32, DType::BFloat16}) {
      INFO(nn::decoder_kind_name(kind), " ", name(dt));
      auto ref = on_gpu(kind, 0.2, dt, {false, false, false});
      const auto batch = checkpoint_batch(*ref, 3, 7, dt, gpu);
      const auto want = lm_steps(*ref, batch.first, batch.second, 5);
      CHECK(want[0].offset > 0);
      for (const std::vector<bool>& on : {std::vector<bool>{true, true, true}, std::vector<bool>{false, true, false}}) {
        INFO("blocks ", on[0], on[1], on[2]);
        auto m = on_gpu(kind, 0.2, dt, on);
        CHECK(m->activationCheckpointing() == on);  // convert kept the blocks, and their switches
        CHECK(m->block(1).type_name() == "nn.DecoderBlock");
        CHECK(m->block(1).attn().type_name() == "cudnn.MultiheadAttention");
        check_identical(want, lm_steps(*m, batch.first, batch.second, 5));
      }
    }
  }
}

TEST_CASE("a checkpointed step captured in a CUDA graph replays as the plain eager step, with and without dropout") {
  cudnn::ScopedConfig flags("allow_tf32=false,deterministic=true,attention.fused=false");
  for (nn::DecoderKind kind : kKinds) {
    for (double dropout : {0.0, 0.2}) {
      INFO(nn::decoder_kind_name(kind), " dropout ", dropout);
      auto ref = on_gpu(kind, dropout, DType::Float32, {false, false, false});
      auto ckpt = on_gpu(kind, dropout, DType::Float32, {true, true, true});
      const auto batch = checkpoint_batch(*ref, 2, 8, DType::Float32, gpu);
      const Tensor &tokens = batch.first, &grad = batch.second;
      auto step = [&](nn::DecoderLM& m) {
        m.zeroGradParameters();
        m.forward(tokens);
        m.backward(tokens, grad);
      };
      for (int k = 0; k < 2; ++k) {  // warm-up: plans, workspaces, buffers
        step(*ref);
        step(*ckpt);
      }
      const uint64_t before = default_generator().offset();
      const cuda::Graph graph = cuda::Graph::capture([&] { step(*ckpt); });
      CHECK(default_generator().offset() == before);  // the capture drew nothing
      for (int k = 0; k < 3; ++k) {
        INFO("replay ", k);
        manual_seed(100 + k);
        graph.replay();
        const auto got = grads_of(*ckpt);
        const std::vector<double> logits = ckpt->output.to_vector<double>();
        const uint64_t offset = default_generator().offset();
        manual_seed(100 + k);
        step(*ref);
        CHECK(logits == ref->output.to_vector<double>());
        CHECK(got == grads_of(*ref));
        CHECK(offset == default_generator().offset());
        CHECK((offset > 0) == (dropout > 0));
      }
    }
  }
}

TEST_CASE("a checkpointed forward that drew masks and its backward on different sides of a capture are refused") {
  auto m = on_gpu(nn::DecoderKind::GPT2, 0.2, DType::Float32, {true, true, true});
  const auto batch = checkpoint_batch(*m, 2, 8, DType::Float32, gpu);
  const Tensor &tokens = batch.first, &grad = batch.second;
  for (int k = 0; k < 2; ++k) {  // warm-up
    m->forward(tokens);
    m->backward(tokens, grad);
  }
  m->forward(tokens);
  const std::string inCapture = error_of([&] { cuda::Graph::capture([&] { m->backward(tokens, grad); }); });
  CHECK(has(inCapture,
            "nn.DecoderBlock::backward: expected the backward of a checkpointed forward that drew random "
            "numbers (dropout) outside a CUDA graph capture"));
  cuda::Graph forwardOnly = cuda::Graph::capture([&] { m->forward(tokens); });
  CHECK(has(error_of([&] { m->backward(tokens, grad); }), "inside the CUDA graph capture its forward ran in"));
  // and eagerly again, as ever
  m->forward(tokens);
  m->backward(tokens, grad);
}

TEST_CASE("memory: releaseActivations gives a step's activations back; checkpointing halves a step's peak") {
  // GPT-2 of 8 blocks, E 256, 8 x 512 tokens, float32: one [tokens x E] tensor is X = 4 MiB. A
  // plain block keeps about 18 X (ln_1, qkv 3 X, the attention's tokens and output, the residual
  // sum, ln_2, the mlp's 4 X twice and its output, the block's output); a checkpointed one its
  // output, X, with one block's 17 X alive again during its backward. Both hold 6 X more (the
  // embeddings, their sum, the final norm, the logits 2 X), and backward's gradients and
  // workspaces add about 39 X at the peak (measured: 6 blocks peaked at 153 X plain, 68 X
  // checkpointed, on an H200), so the peaks above the step's start are about (8 + 6 + 17 + 39) X
  // against (8 * 18 + 6 + 39) X: 0.37. Checked against 0.5.
  nn::DecoderLMConfig c;
  c.vocabSize = 512;
  c.nPositions = 512;
  c.nEmbd = 256;
  c.nLayer = 8;
  c.nHead = 4;
  const int64_t B = 8, S = 512;
  const double X = static_cast<double>(B * S * c.nEmbd * 4);
  auto make = [&](bool checkpoint) {
    manual_seed(3);
    auto m = std::dynamic_pointer_cast<nn::DecoderLM>(nn::convert(nn::make_gpt2(c), cudnn::backend));
    REQUIRE(m);
    m->to(gpu);
    m->train();
    m->setFreeIntermediateGradients(true);
    m->setActivationCheckpointing(checkpoint);
    return m;
  };
  auto plain = make(false), ckpt = make(true);
  const auto batch = checkpoint_batch(*plain, B, S, DType::Float32, gpu);
  const Tensor &tokens = batch.first, &grad = batch.second;
  auto peak = [&](nn::DecoderLM& m) {
    m.zeroGradParameters();
    m.forward(tokens);
    m.backward(tokens, grad);  // warm-up: plans, workspaces
    cuda::synchronize();
    const size_t held = cuda::memory_stats(0).allocated_bytes;
    m.releaseActivations();
    const size_t start = cuda::memory_stats(0).allocated_bytes;
    cuda::reset_peak_memory_stats(0);
    m.zeroGradParameters();
    m.forward(tokens);
    m.backward(tokens, grad);
    cuda::synchronize();
    const size_t top = cuda::memory_stats(0).peak_allocated_bytes;
    const std::string kind = m.activationCheckpointing()[0] ? "checkpointed" : "plain";
    MESSAGE(kind, ": held after a step ", static_cast<double>(held - start) / X, " X, peak ",
            static_cast<double>(top - start) / X, " X");
    return std::pair<double, double>(static_cast<double>(held - start), static_cast<double>(top - start));
  };
  const auto [plainHeld, plainPeak] = peak(*plain);
  const auto [ckptHeld, ckptPeak] = peak(*ckpt);
  CHECK(plainHeld > 8 * 12 * X);  // what releaseActivations gave back: every block's state
  CHECK(ckptHeld < 18 * X);       // the block outputs and the model's own (about 14 X)
  CHECK(ckptPeak < 0.5 * plainPeak);
}

// test_ActivationCheckpointing.cpp: DecoderBlock's activation checkpointing and the modules'
// releaseActivations on the CPU: bit-identical steps with dropout, what a release lets go of,
// and the errors.
#include <doctest/doctest.h>

#include <map>

#include "convert/ModelFile.h"
#include "nn/DecoderBlock.h"
#include "nn/DecoderLM.h"
#include "nn/Dropout.h"
#include "nn/GELU.h"
#include "nn/KVCache.h"
#include "nn/LayerNorm.h"
#include "nn/Linear.h"
#include "nn/MultiheadAttention.h"
#include "nn/RMSNorm.h"
#include "nn/Sequential.h"
#include "nn/SwiGLU.h"
#include "tests/support/CheckpointedLM.h"
#include "tests/support/ErrorText.h"
#include "tests/support/GradCheck.h"
#include "tests/support/TempDir.h"

using namespace tensor;
using namespace testing;

namespace {

const nn::DecoderKind kKinds[] = {nn::DecoderKind::GPT2, nn::DecoderKind::Llama};

// The attention's and the gate's saved tensors, read from outside.
struct OpenAttention : nn::MultiheadAttention {
  using nn::MultiheadAttention::MultiheadAttention;
  std::vector<Tensor> kept() const {
    return {qkv_, kv_, attnTokens_, attn_, saved_.logsumexp, saved_.dropoutMask, gradAttnTokens_, gradQkv_};
  }
};
struct OpenSwiGLU : nn::SwiGLU {
  using nn::SwiGLU::SwiGLU;
  std::vector<Tensor> kept() const { return {gate_, up_, h_, gradH_, gradGate_, gradUp_}; }
};

// A block of open modules, with dropout 0.25 in the attention and (GPT-2) in the mlp.
struct OpenBlock {
  std::shared_ptr<OpenAttention> attn;
  std::shared_ptr<OpenSwiGLU> swiglu;  // Llama's mlp
  std::shared_ptr<nn::DecoderBlock> block;

  explicit OpenBlock(nn::DecoderKind kind) {
    manual_seed(17);
    nn::MultiheadAttentionOptions o;
    o.embedDim = 16;
    o.numHeads = 4;
    o.dropout = 0.25;
    o.batchFirst = true;
    o.causal = true;
    if (kind == nn::DecoderKind::Llama) {
      o.numKvHeads = 2;
      o.bias = false;
      o.rotary = nn::RotaryOptions{};
    }
    attn = std::make_shared<OpenAttention>(o);
    if (kind == nn::DecoderKind::GPT2) {
      auto mlp = std::make_shared<nn::Sequential>(std::initializer_list<nn::ModulePtr>{
          std::make_shared<nn::Linear>(16, 64), std::make_shared<nn::GELU>("tanh"), std::make_shared<nn::Dropout>(0.25),
          std::make_shared<nn::Linear>(64, 16)});
      block = std::make_shared<nn::DecoderBlock>(std::make_shared<nn::LayerNorm>(Shape{16}), attn,
                                                 std::make_shared<nn::LayerNorm>(Shape{16}), mlp);
    } else {
      swiglu = std::make_shared<OpenSwiGLU>(16, 24);
      block = std::make_shared<nn::DecoderBlock>(std::make_shared<nn::RMSNorm>(Shape{16}), attn,
                                                 std::make_shared<nn::RMSNorm>(Shape{16}), swiglu);
    }
  }

  // Every tensor a forward (and backward's intermediates) leaves in the children, by name.
  std::map<std::string, Tensor> kept() const {
    std::map<std::string, Tensor> out;
    int n = 0;
    block->apply([&](nn::Module& m) {
      if (&m == block.get()) return;  // the block's own output stays under checkpointing
      const std::string at = m.type_name() + "#" + std::to_string(n++);
      out[at + ".output"] = m.output;
      if (auto* ln = dynamic_cast<nn::LayerNorm*>(&m)) {
        out[at + ".saveMean"] = ln->saveMean;
        out[at + ".saveRstd"] = ln->saveRstd;
      }
      if (auto* rms = dynamic_cast<nn::RMSNorm*>(&m)) out[at + ".saveRstd"] = rms->saveRstd;
      if (auto* d = dynamic_cast<nn::Dropout*>(&m)) out[at + ".noise"] = d->noise;
    });
    const auto a = attn->kept();
    for (size_t i = 0; i < a.size(); ++i) out["attn.kept" + std::to_string(i)] = a[i];
    if (swiglu) {
      const auto s = swiglu->kept();
      for (size_t i = 0; i < s.size(); ++i) out["swiglu.kept" + std::to_string(i)] = s[i];
    }
    return out;
  }
};

Tensor block_input(uint64_t seed) {
  Generator gen(seed);
  return uniform({2, 5, 16}, -1, 1, gen);
}

}  // namespace

TEST_CASE("checkpointing every block or a subset gives bit-identical logits, gradients and generator, with dropout") {
  for (nn::DecoderKind kind : kKinds) {
    for (bool freeGrads : {false, true}) {
      INFO(nn::decoder_kind_name(kind), freeGrads ? " freeing intermediate gradients" : "");
      auto ref = make_checkpoint_model(kind, 11, 0.2);
      ref->setFreeIntermediateGradients(freeGrads);
      const auto [tokens, grad] = checkpoint_batch(*ref, 3, 7, DType::Float32, Device::cpu());
      const auto want = lm_steps(*ref, tokens, grad, 5);
      CHECK(want[0].offset > 0);                          // the masks were drawn
      CHECK(want[1].logits != want[0].logits);            // and differ from step to step
      CHECK(want[0].embeddingGrad.empty() == freeGrads);  // h's gradInput goes with the others
      for (const std::vector<bool>& on : {std::vector<bool>{true, true, true}, std::vector<bool>{true, false, true},
                                          std::vector<bool>{false, true, false}}) {
        INFO("blocks ", on[0], on[1], on[2]);
        auto lm = make_checkpoint_model(kind, 11, 0.2);
        lm->setFreeIntermediateGradients(freeGrads);
        if (on == std::vector<bool>{true, true, true}) {
          lm->setActivationCheckpointing(true);
        } else {
          lm->setActivationCheckpointing(on);
        }
        CHECK(lm->activationCheckpointing() == on);
        check_identical(want, lm_steps(*lm, tokens, grad, 5));
      }
    }
  }
}

TEST_CASE("a checkpointed block's split passes (updateGradInput, then accGradParameters) match the plain block's") {
  for (nn::DecoderKind kind : kKinds) {
    INFO(nn::decoder_kind_name(kind));
    const Tensor x = block_input(3), g = block_input(4);
    struct Out {
      std::vector<double> y, gx;
      std::map<std::string, std::vector<double>> grads;
      uint64_t offset;
    };
    auto run = [&](bool checkpoint) {
      OpenBlock b(kind);
      b.block->setActivationCheckpointing(checkpoint);
      manual_seed(9);
      Out o;
      o.y = b.block->forward(x).to_vector<double>();
      b.block->zeroGradParameters();
      o.gx = b.block->updateGradInput(x, g).to_vector<double>();
      b.block->accGradParameters(x, g, 0.5);
      for (const auto& [name, t] : b.block->namedGradParameters()) o.grads[name] = t.to_vector<double>();
      o.offset = default_generator().offset();
      return o;
    };
    const Out want = run(false), got = run(true);
    CHECK(got.y == want.y);
    CHECK(got.gx == want.gx);
    CHECK(got.grads == want.grads);
    CHECK(got.offset == want.offset);
  }
}

TEST_CASE("a checkpointed block's gradients by finite differences, GPT-2 and Llama blocks") {
  for (nn::DecoderKind kind : kKinds) {
    INFO(nn::decoder_kind_name(kind));
    auto lm = make_checkpoint_model(kind, 3, 0);
    nn::ModulePtr block = lm->blocks().get(0);
    std::dynamic_pointer_cast<nn::DecoderBlock>(block)->setActivationCheckpointing(true);
    block->to(DType::Float64);
    Generator gen(48);
    GradCheckOptions o;
    o.tolerance = 1e-5;
    expect_gradients_ok(*block, uniform({2, 3, 16}, -1, 1, gen, DType::Float64), o);
    expect_accumulation_ok(*block, uniform({2, 3, 16}, -1, 1, gen, DType::Float32).to(DType::Float64));
  }
}

TEST_CASE("releaseActivations lets go of every tensor a block's forward and backward kept") {
  for (nn::DecoderKind kind : kKinds) {
    INFO(nn::decoder_kind_name(kind));
    OpenBlock b(kind);
    const Tensor x = block_input(3), g = block_input(4);
    b.block->forward(x);
    b.block->backward(x, g);
    b.block->forward(x);  // and forward state on top of backward's intermediates
    std::map<std::string, Tensor> handles;
    for (const auto& [name, t] : b.kept()) {
      if (name == "attn.kept1") continue;  // kv_: cross-attention's
      INFO(name);
      CHECK(t.defined());
      handles[name] = t;
    }
    const Tensor gradIn = b.block->gradInput;
    b.block->releaseActivations();
    CHECK_FALSE(b.block->output.defined());
    std::map<const void*, long> holders;  // views of one storage among the handles
    for (const auto& [_, t] : handles) ++holders[t.storage().get()];
    for (const auto& [name, t] : b.kept()) {
      INFO(name);
      CHECK_FALSE(t.defined());
    }
    for (const auto& [name, t] : handles) {
      INFO(name);
      CHECK(t.storage().use_count() == holders[t.storage().get()]);  // nothing else holds it: freed with the handles
    }
    CHECK(b.block->gradInput.is_same_view(gradIn));  // gradients stay
  }
}

TEST_CASE("a checkpointed training forward keeps the block's output alone; backward leaves it so") {
  for (nn::DecoderKind kind : kKinds) {
    INFO(nn::decoder_kind_name(kind));
    OpenBlock b(kind);
    b.block->setActivationCheckpointing(true);
    CHECK(b.block->activationCheckpointing());
    const Tensor x = block_input(3), g = block_input(4);
    auto released = [&] {
      for (const auto& [name, t] : b.kept()) {
        INFO(name);
        CHECK_FALSE(t.defined());
      }
    };
    const Tensor y = b.block->forward(x).clone();
    released();
    CHECK(b.block->output.defined());
    b.block->backward(x, g);
    released();
    CHECK(b.block->gradInput.defined());
    CHECK(max_abs_diff(b.block->output, y) == 0);  // the recompute left the output alone
    b.block->evaluate();  // an evaluate() forward keeps what it computes, as without checkpointing
    b.block->forward(x);
    CHECK(b.block->modules[nn::DecoderBlock::Ln1]->output.defined());
    CHECK(b.attn->kept()[0].defined());
  }
}

TEST_CASE("after releaseActivations a backward asks for a forward, naming the module") {
  for (nn::DecoderKind kind : kKinds) {
    INFO(nn::decoder_kind_name(kind));
    OpenBlock b(kind);
    const Tensor x = block_input(3), g = block_input(4);
    b.block->forward(x);
    b.block->releaseActivations();
    CHECK(has(error_of([&] { b.block->backward(x, g); }), "nn.DecoderBlock::backward: expected a forward() of input"));
    // each child alone: its own check catches the missing state
    b.block->forward(x);
    for (size_t i = 0; i < nn::DecoderBlock::kSlots; ++i) {
      nn::Module& m = *b.block->modules[i];
      const Tensor gy = m.output.clone();  // every child's input and output are [2 x 5 x 16]
      m.releaseActivations();
      const std::string e = error_of([&] { m.backward(x, gy); });
      INFO(e);
      CHECK(has(e, m.type_name() + "::"));
      CHECK(has(e, "forward"));
    }
  }
  nn::Dropout d(0.5);
  const Tensor x = block_input(5);
  d.forward(x);
  d.releaseActivations();
  CHECK(has(error_of([&] { d.backward(x, x); }), "nn.Dropout::updateGradInput: expected a forward() in training mode"));
}

TEST_CASE("checkpointing errors: a KV cache in training, a recompute in evaluate() mode, the per-block flags") {
  auto lm = make_checkpoint_model(nn::DecoderKind::Llama, 11, 0.2);
  lm->setActivationCheckpointing(true);
  const auto batch = checkpoint_batch(*lm, 2, 4, DType::Float32, Device::cpu());
  const Tensor &tokens = batch.first, &grad = batch.second;
  CHECK(has(error_of([&] { lm->setActivationCheckpointing(std::vector<bool>{true}); }),
            "nn.DecoderLM::setActivationCheckpointing: expected one flag per block (3), got 1"));
  CHECK(lm->activationCheckpointing() == std::vector<bool>{true, true, true});  // the failed call changed nothing
  // a recompute must run as the forward did
  lm->forward(tokens);
  lm->evaluate();
  CHECK(has(error_of([&] { lm->backward(tokens, grad); }),
            "nn.DecoderBlock::backward: expected training mode for the recompute of a checkpointed forward"));
  // generation (evaluate() mode) keeps its activations: a cache works there, not in training
  const nn::DecoderLMConfig& c = lm->settings();
  auto cache = std::make_shared<nn::KVCache>(c.nLayer, 2, c.kvHeads(), 8, c.headDim(), DType::Float32, Device::cpu());
  lm->setCache(cache);
  CHECK(error_of([&] { lm->forward(tokens); }) == "(no error)");
  lm->train();
  CHECK(has(error_of([&] { lm->forward(tokens); }),
            "nn.DecoderBlock::updateOutput: expected no KV cache with activation checkpointing in training mode"));
}

TEST_CASE("checkpointing is a training switch: model files leave it out, the model runs as before") {
  TempDir dir("cudnn_nn_test_ActivationCheckpointing");
  auto lm = make_checkpoint_model(nn::DecoderKind::GPT2, 11, 0);
  lm->setActivationCheckpointing(true);
  CHECK_FALSE(lm->config().find("activation_checkpointing"));
  nn::save_model(*lm, dir / "lm");
  auto back = std::dynamic_pointer_cast<nn::DecoderLM>(nn::load_model(dir / "lm"));
  REQUIRE(back);
  CHECK(back->activationCheckpointing() == std::vector<bool>{false, false, false});
  back->train();
  const auto [tokens, grad] = checkpoint_batch(*lm, 2, 4, DType::Float32, Device::cpu());
  const auto want = lm_steps(*back, tokens, grad, 1);
  check_identical(want, lm_steps(*lm, tokens, grad, 1));
}

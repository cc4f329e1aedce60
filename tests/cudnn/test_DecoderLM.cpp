// test_DecoderLM.cpp: DecoderLM converted to cudnn twins (embeddings, norms, attention with RoPE
// and GQA, SwiGLU, Linear) on the GPU: transformers' logits in float32 with TF32 off, the cached
// forward against the full recomputation in float32 and bfloat16, greedy generation, and the
// convert round trip back to nn.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>

#include "convert/Convert.h"
#include "convert/HuggingFace.h"
#include "cudnn/Config.h"
#include "nn/DecoderLM.h"
#include "nn/Embedding.h"
#include "nn/Generation.h"
#include "nn/KVCache.h"
#include "nn/Linear.h"
#include "tensor/Safetensors.h"

using namespace tensor;

namespace {
const Device gpu = Device::cuda(0);
const char* const kModels[] = {"gpt2_tied", "gpt2_untied_sharded", "llama_gqa", "llama_tied"};

std::string hf_dir(const std::string& name) { return std::string(CUDNN_NN_TEST_DATA) + "/hf/" + name; }

std::shared_ptr<nn::DecoderLM> on_gpu(const std::string& name, DType dt = DType::Float32) {
  auto m = std::dynamic_pointer_cast<nn::DecoderLM>(nn::convert(nn::load_hf_causal_lm(hf_dir(name)), cudnn::backend));
  REQUIRE(m);
  m->to(dt);
  m->to(gpu);
  m->evaluate();
  return m;
}

double max_rel(const Tensor& got, const Tensor& want) {
  const Tensor g = got.to(Device::cpu(), DType::Float64), w = want.to(Device::cpu(), DType::Float64);
  const double scale = w.abs().max().item();
  return max_abs_diff(g, w) / (scale > 0 ? scale : 1.0);
}
}  // namespace

TEST_CASE("cudnn DecoderLM gives transformers' logits in float32 (TF32 off) and its greedy continuations") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  for (const char* name : kModels) {
    INFO(name);
    auto m = on_gpu(name);
    CHECK(m->wte().type_name() == "cudnn.Embedding");
    CHECK(m->lmHead().weight.is_cuda());
    CHECK(m->lmHead().weight.is_same_view(m->wte().weight) == m->settings().tied);
    const auto want = load_safetensors(hf_dir(name) + "/expected.safetensors").tensors;
    const Tensor logits = m->forward(want.at("ids").to(gpu));
    CHECK(logits.is_cuda());
    CHECK(max_abs_diff(logits.cpu(), want.at("logits")) < 1e-5);
    nn::GenerationOptions o;
    o.maxNewTokens = 8;
    const auto got =
        nn::generate(*m, {want.at("prompt0").to_vector<int64_t>(), want.at("prompt1").to_vector<int64_t>()}, o);
    CHECK(got[0] == want.at("greedy0").to_vector<int64_t>());
    CHECK(got[1] == want.at("greedy1").to_vector<int64_t>());
  }
}

TEST_CASE("cudnn DecoderLM: the cached forward equals the full recomputation on the GPU, float32 and bfloat16") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  for (const char* name : {"gpt2_tied", "llama_gqa"}) {
    for (DType dt : {DType::Float32, DType::BFloat16}) {
      INFO(name, " ", std::string(tensor::name(dt)));
      auto m = on_gpu(name, dt);
      const nn::DecoderLMConfig& c = m->settings();
      const std::vector<int64_t> seq = {5, 17, 42, 8, 99, 3, 61, 0};
      const Tensor all = from_vector(seq, {1, 8}).to(gpu);
      const Tensor full = m->forward(all).clone();
      auto cache = std::make_shared<nn::KVCache>(c.nLayer, 1, c.kvHeads(), 16, c.headDim(), dt, gpu);
      m->setCache(cache);
      const Tensor pre = m->forward(all.narrow(1, 0, 5)).clone();
      const double tol = dt == DType::Float32 ? 1e-5 : 3e-2;
      CHECK(max_rel(pre, full.narrow(1, 0, 5)) < tol);
      for (int64_t s = 5; s < 8; ++s) {
        INFO("position ", s);
        const Tensor step = m->forward(all.narrow(1, s, 1).contiguous());
        CHECK(max_rel(step, full.narrow(1, s, 1)) < tol);
      }
      m->setCache(nullptr);
    }
  }
}

TEST_CASE("cudnn DecoderLM forwardRows: the picked positions' logits of the full forward, float32 and bfloat16") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  for (const char* name : {"gpt2_tied", "llama_gqa"}) {
    for (DType dt : {DType::Float32, DType::BFloat16}) {
      INFO(name, " ", std::string(tensor::name(dt)));
      auto m = on_gpu(name, dt);
      const int64_t V = m->settings().vocabSize;
      const Tensor t = from_vector<int64_t>({5, 17, 42, 8, 99, 3, 61, 0}, {2, 4}).to(gpu);
      const Tensor full = m->forward(t).clone().reshape({8, V});
      const std::vector<int64_t> picks = {3, 7, 0};
      const Tensor got = m->forwardRows(t, from_vector(picks, {3}).to(gpu)).clone();
      REQUIRE(got.sizes() == Shape{3, V});
      // the head's product over 3 rows instead of 8 may take another algorithm
      const double tol = dt == DType::Float32 ? 1e-5 : 2e-2;
      for (int64_t i = 0; i < 3; ++i) CHECK(max_rel(got.select(0, i), full.select(0, picks[i])) < tol);
      CHECK_THROWS_WITH_AS(m->forwardRows(t, from_vector(picks, {3})), doctest::Contains("not on the tokens' device"),
                           std::exception);
    }
  }
}

TEST_CASE("cudnn DecoderLM saves as a Hugging Face checkpoint and converts back to nn, the tie kept") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  auto m = on_gpu("gpt2_tied");
  const Tensor ids = from_vector<int64_t>({1, 2, 3, 4}, {1, 4});
  const Tensor want = m->forward(ids.to(gpu)).cpu();
  const std::string dir = (std::filesystem::temp_directory_path() / "cudnn_nn_test_cudnn_DecoderLM").string();
  nn::save_hf_causal_lm(*m, dir);  // from the GPU
  CHECK(max_abs_diff(nn::load_hf_causal_lm(dir)->forward(ids), want) < 1e-5);
  std::filesystem::remove_all(dir);
  m->to(Device::cpu());
  m = std::dynamic_pointer_cast<nn::DecoderLM>(nn::convert(m, nn::backend));
  REQUIRE(m);
  CHECK(m->wte().type_name() == "nn.Embedding");
  CHECK(m->lmHead().weight.is_same_view(m->wte().weight));
  CHECK(max_abs_diff(m->forward(ids), want) < 1e-5);
}

TEST_CASE("cudnn generate: the decode step captured in a CUDA graph gives eager decoding's tokens") {
  // Note [Captured decode steps]: the default (cudaGraph) against every step run eagerly, on a
  // batch of prompts of different lengths, greedy and sampled, float32 (TF32 off) and bfloat16.
  cudnn::ScopedConfig flags("allow_tf32=false");
  const std::vector<std::vector<int64_t>> prompts = {{5, 17, 42}, {8, 99, 3, 61, 0, 7, 12, 30, 2}, {11, 4, 9, 1, 6}};
  for (const char* name : {"gpt2_tied", "llama_gqa"}) {
    for (DType dt : {DType::Float32, DType::BFloat16}) {
      auto m = on_gpu(name, dt);
      for (const double temperature : {0.0, 0.8}) {
        INFO(name, " ", std::string(tensor::name(dt)), " temperature ", temperature);
        nn::GenerationOptions o;
        o.maxNewTokens = 20;
        o.temperature = temperature;
        o.topK = temperature > 0 ? 20 : 0;
        o.topP = temperature > 0 ? 0.9 : 1.0;
        o.seed = 4811;
        nn::GenerationOptions eager = o;
        eager.cudaGraph = false;
        const auto want = nn::generate(*m, prompts, eager);
        const auto got = nn::generate(*m, prompts, o);
        CHECK(got == want);
        for (const auto& row : got) CHECK(row.size() == 20);
        // a stop token drawn mid-way ends its row in both
        o.stopTokens = {want[1][6]};
        eager.stopTokens = o.stopTokens;
        CHECK(nn::generate(*m, prompts, o) == nn::generate(*m, prompts, eager));
      }
      CHECK(m->cache() == nullptr);  // generate() leaves the model as it found it
    }
  }
}

TEST_CASE("cudnn generate names NaN logits as the CPU does, greedy (reduced on the GPU) and sampled") {
  auto m = on_gpu("gpt2_tied");
  m->lmHead().weight.fill_(NAN);
  for (const double temperature : {0.0, 1.0}) {
    INFO("temperature ", temperature);
    nn::GenerationOptions o;
    o.maxNewTokens = 6;
    o.temperature = temperature;
    CHECK_THROWS_WITH_AS(nn::generate(*m, {{1, 2}, {3}}, o),
                         doctest::Contains("nn.generate: expected logits that are neither NaN nor +inf, got nan for "
                                           "token 0"),
                         Error);
  }
}

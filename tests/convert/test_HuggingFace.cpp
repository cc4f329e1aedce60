// test_HuggingFace.cpp: transformers' GPT2LMHeadModel and LlamaForCausalLM checkpoints as saved
// (tests/data/hf/, from scripts/make_hf_reference.py) load into nn::DecoderLM with their logits
// and greedy continuations, save back in their layout, and bad checkpoints are refused.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "convert/HuggingFace.h"
#include "nn/DecoderLM.h"
#include "nn/Embedding.h"
#include "nn/Generation.h"
#include "tensor/Json.h"
#include "tensor/Safetensors.h"
#include "tests/support/ErrorText.h"
#include "tests/support/TempDir.h"

using namespace tensor;
using namespace testing;
namespace fs = std::filesystem;

namespace {

const char* const kModels[] = {"gpt2_tied", "gpt2_untied_sharded", "llama_gqa", "llama_tied"};

std::string hf_dir(const std::string& name) { return std::string(CUDNN_NN_TEST_DATA) + "/hf/" + name; }

std::map<std::string, Tensor> expected(const std::string& name) {
  return load_safetensors(hf_dir(name) + "/expected.safetensors").tensors;
}

std::vector<int64_t> ids_of(const Tensor& t) { return t.to_vector<int64_t>(); }

// every tensor of a checkpoint directory, through its index where it has one
std::map<std::string, Tensor> checkpoint_tensors(const std::string& dir) {
  std::map<std::string, Tensor> out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string f = entry.path().filename().string();
    if (f.rfind("model", 0) == 0 && entry.path().extension() == ".safetensors") {
      for (auto& [k, v] : load_safetensors(entry.path().string()).tensors) out[k] = v;
    }
  }
  return out;
}

std::string copy_of(const TempDir& tmp, const std::string& name) {
  const std::string dst = tmp / name;
  fs::remove_all(dst);
  fs::copy(hf_dir(name), dst);
  return dst;
}

// config.json with `key` set to `value` (added where absent)
void set_config(const std::string& dir, const std::string& key, const Json& value) {
  const std::string path = dir + "/config.json";
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Json::Object obj = Json::parse(text).as_object();
  bool found = false;
  for (auto& [k, v] : obj) {
    if (k == key) {
      v = value;
      found = true;
    }
  }
  if (!found) obj.emplace_back(key, value);
  std::ofstream(path, std::ios::trunc) << Json(obj).dump(2);
}

}  // namespace

TEST_CASE("Hugging Face GPT-2 and Llama checkpoints give transformers' logits and greedy continuations") {
  for (const char* name : kModels) {
    INFO(name);
    auto model = nn::load_hf_causal_lm(hf_dir(name));
    const auto want = expected(name);
    const Tensor logits = model->forward(want.at("ids"));
    REQUIRE(logits.sizes() == want.at("logits").sizes());
    // float32 as transformers computes it, the products' sums in the BLAS's order (1.3e-5 apart
    // with OpenBLAS's Zen kernels, less with its Intel ones)
    CHECK(max_abs_diff(logits, want.at("logits")) < 3e-5);
    // both prompts in one batch (5 and 3 tokens), right-padded into one prefill
    nn::GenerationOptions o;
    o.maxNewTokens = 8;
    const auto got = nn::generate(*model, {ids_of(want.at("prompt0")), ids_of(want.at("prompt1"))}, o);
    CHECK(got[0] == ids_of(want.at("greedy0")));
    CHECK(got[1] == ids_of(want.at("greedy1")));
    CHECK(model->settings().tied == (std::string(name).find("tied") != std::string::npos &&
                                     std::string(name).find("untied") == std::string::npos));
  }
}

TEST_CASE("save_hf_causal_lm writes transformers' names and layouts: the files re-read as the originals") {
  TempDir tmp("cudnn_nn_test_HuggingFace_save");
  for (const char* name : kModels) {
    for (int64_t shard : {int64_t{0}, int64_t{20000}}) {
      INFO(name, " shard limit ", shard);
      auto model = nn::load_hf_causal_lm(hf_dir(name));
      const std::string out = tmp / (std::string(name) + "_" + std::to_string(shard));
      nn::HFSaveOptions so;
      so.maxShardBytes = shard;
      nn::save_hf_causal_lm(*model, out, so);
      CHECK(fs::exists(out + "/config.json"));
      CHECK(fs::exists(out + "/model.safetensors") == (shard == 0));
      CHECK(fs::exists(out + "/model.safetensors.index.json") == (shard != 0));
      // the same tensors as transformers saved, bit for bit, by name
      const auto theirs = checkpoint_tensors(hf_dir(name));
      const auto ours = checkpoint_tensors(out);
      REQUIRE(ours.size() == theirs.size());
      for (const auto& [k, t] : theirs) {
        INFO(k);
        REQUIRE(ours.count(k) == 1);
        CHECK(ours.at(k).sizes() == t.sizes());
        CHECK(ours.at(k).dtype() == t.dtype());
        CHECK(max_abs_diff(ours.at(k), t) == 0);
      }
      // and our own save loads back to the same model
      auto back = nn::load_hf_causal_lm(out);
      const Tensor ids = expected(name).at("ids");
      CHECK(max_abs_diff(back->forward(ids), model->forward(ids)) == 0);
    }
  }
}

TEST_CASE("bad checkpoints are refused naming the file and the field or tensor; nothing is loaded") {
  TempDir tmp("cudnn_nn_test_HuggingFace_bad");
  auto expect_error = [](const std::string& dir, std::initializer_list<std::string> parts) {
    std::shared_ptr<nn::DecoderLM> m;
    const std::string e = error_of([&] { m = nn::load_hf_causal_lm(dir); });
    INFO(e);
    CHECK(has(e, "nn::load_hf_causal_lm: "));
    for (const auto& p : parts) CHECK(has(e, p));
    CHECK(m == nullptr);
  };
  SUBCASE("unknown architecture") {
    const std::string d = copy_of(tmp, "gpt2_tied");
    set_config(d, "architectures", Json::Array{"GPTNeoXForCausalLM"});
    expect_error(d, {"config.json: architectures: expected", "GPTNeoXForCausalLM"});
  }
  SUBCASE("unsupported settings") {
    const std::string d = copy_of(tmp, "llama_gqa");
    set_config(d, "rope_scaling", Json::Object{{"rope_type", "linear"}, {"factor", 2.0}});
    expect_error(d, {"config.json: rope_scaling: expected null"});
    const std::string d2 = copy_of(tmp, "llama_tied");
    set_config(d2, "attention_bias", true);
    expect_error(d2, {"config.json: attention_bias: expected false, got true"});
    const std::string d3 = copy_of(tmp, "gpt2_tied");
    set_config(d3, "activation_function", "relu");
    expect_error(d3, {"config.json: activation_function: expected \"gelu_new\"", "relu"});
    const std::string d4 = copy_of(tmp, "gpt2_tied");
    set_config(d4, "n_head", 5);
    expect_error(d4, {"config.json: expected n_embd divisible by n_head"});
  }
  SUBCASE("a truncated shard") {
    const std::string d = copy_of(tmp, "gpt2_untied_sharded");
    const std::string shard = d + "/model-00003-of-00009.safetensors";
    fs::resize_file(shard, fs::file_size(shard) - 100);
    expect_error(d, {"model-00003-of-00009.safetensors"});
  }
  SUBCASE("a missing shard") {
    const std::string d = copy_of(tmp, "gpt2_untied_sharded");
    fs::remove(d + "/model-00005-of-00009.safetensors");
    expect_error(d, {"model-00005-of-00009.safetensors", "no such file"});
  }
  SUBCASE("a wrong shape, a wrong dtype, a missing and an unexpected tensor: every one named") {
    const std::string d = copy_of(tmp, "llama_gqa");
    auto st = load_safetensors(d + "/model.safetensors").tensors;
    st["model.layers.1.self_attn.k_proj.weight"] = zeros({8, 32});
    st["model.norm.weight"] = zeros({32}, DType::Int64);
    st.erase("model.layers.0.mlp.up_proj.weight");
    st["model.layers.0.extra"] = zeros({2});
    save_safetensors(d + "/model.safetensors", st, {{"format", "pt"}});
    expect_error(d, {"'model.layers.1.self_attn.k_proj.weight': expected [16 x 32], got [8 x 32]",
                     "'model.norm.weight': expected a floating dtype, got int64",
                     "'model.layers.0.mlp.up_proj.weight': expected [64 x 32], got no such tensor",
                     "'model.layers.0.extra': unexpected", "4 mismatches"});
  }
  SUBCASE("no weights at all") {
    const std::string d = copy_of(tmp, "llama_tied");
    fs::remove(d + "/model.safetensors");
    expect_error(d, {"expected model.safetensors or model.safetensors.index.json"});
    expect_error(tmp / "nowhere", {"config.json"});
  }
}

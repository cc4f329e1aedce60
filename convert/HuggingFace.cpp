// HuggingFace.cpp: config.json <-> DecoderLMConfig, and the table of tensor names and layouts
// between transformers' state dicts and DecoderLM's.
#include "convert/HuggingFace.h"

#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include "nn/DecoderLM.h"
#include "tensor/FileIO.h"
#include "tensor/Json.h"
#include "tensor/Safetensors.h"

namespace nn {

// Note [Hugging Face checkpoints]
// save_pretrained writes the state dict under the transformers module paths, float32 (or the
// model's dtype), with tied tensors once: a tied lm_head.weight is left out (it is the
// embedding's). GPT-2's projections are Conv1D modules, whose weight is [in x out] (x W + b),
// so each is the transpose of our Linear's and MultiheadAttention's [out x in]; its c_attn is
// the q, k and v projections fused along out, which are the rows of in_proj_weight in that
// order. Llama keeps q_proj [H D x E], k_proj and v_proj [Hkv D x E] apart: stacked they are
// in_proj_weight's rows. Llama's rotary embedding is HF's rotate_half (RotaryStyle::Half) with
// rope_theta (transformers 5 writes it under rope_parameters). A tensor of ours is one entry
// of the table below, or several row ranges of it (Llama's q, k, v). Loading checks every
// name, shape and dtype of every shard against the table before it builds the model;
// transformers' non-persistent GPT-2 buffers (attn.bias, attn.masked_bias), which older files
// hold, are skipped.

namespace {

constexpr const char* kLoad = "nn::load_hf_causal_lm: ";
constexpr const char* kSave = "nn::save_hf_causal_lm: ";

// One tensor of the checkpoint: its name and shape there, and where it goes in ours (rows
// [rowBegin, rowBegin + hfShape[0]) of `ours`, or the whole; transposed for Conv1D weights).
struct Entry {
  std::string hf;
  Shape hfShape;
  std::string ours;
  bool transpose = false;
  bool rowSlice = false;
  int64_t rowBegin = 0;
};

std::vector<Entry> tensor_table(const DecoderLMConfig& c) {
  std::vector<Entry> t;
  const int64_t E = c.nEmbd, F = c.hidden(), V = c.vocabSize, D = c.headDim();
  auto add = [&](std::string hf, Shape shape, std::string ours, bool transpose = false) {
    t.push_back({std::move(hf), std::move(shape), std::move(ours), transpose});
  };
  if (c.kind == DecoderKind::GPT2) {
    add("transformer.wte.weight", {V, E}, "wte.weight");
    add("transformer.wpe.weight", {c.nPositions, E}, "wpe.weight");
    for (int64_t i = 0; i < c.nLayer; ++i) {
      const std::string hf = "transformer.h." + std::to_string(i) + ".", o = "h." + std::to_string(i) + ".";
      add(hf + "ln_1.weight", {E}, o + "ln_1.weight");
      add(hf + "ln_1.bias", {E}, o + "ln_1.bias");
      add(hf + "attn.c_attn.weight", {E, 3 * E}, o + "attn.in_proj_weight", true);
      add(hf + "attn.c_attn.bias", {3 * E}, o + "attn.in_proj_bias");
      add(hf + "attn.c_proj.weight", {E, E}, o + "attn.out_proj.weight", true);
      add(hf + "attn.c_proj.bias", {E}, o + "attn.out_proj.bias");
      add(hf + "ln_2.weight", {E}, o + "ln_2.weight");
      add(hf + "ln_2.bias", {E}, o + "ln_2.bias");
      add(hf + "mlp.c_fc.weight", {E, F}, o + "mlp.0.weight", true);
      add(hf + "mlp.c_fc.bias", {F}, o + "mlp.0.bias");
      add(hf + "mlp.c_proj.weight", {F, E}, o + "mlp.2.weight", true);
      add(hf + "mlp.c_proj.bias", {E}, o + "mlp.2.bias");
    }
    add("transformer.ln_f.weight", {E}, "ln_f.weight");
    add("transformer.ln_f.bias", {E}, "ln_f.bias");
  } else {
    const int64_t H = c.nHead, Hkv = c.kvHeads();
    add("model.embed_tokens.weight", {V, E}, "wte.weight");
    for (int64_t i = 0; i < c.nLayer; ++i) {
      const std::string hf = "model.layers." + std::to_string(i) + ".", o = "h." + std::to_string(i) + ".";
      add(hf + "input_layernorm.weight", {E}, o + "ln_1.weight");
      const int64_t rows[] = {H * D, Hkv * D, Hkv * D};
      const char* names[] = {"q_proj", "k_proj", "v_proj"};
      int64_t begin = 0;
      for (int p = 0; p < 3; ++p) {
        t.push_back(
            {hf + "self_attn." + names[p] + ".weight", {rows[p], E}, o + "attn.in_proj_weight", false, true, begin});
        begin += rows[p];
      }
      add(hf + "self_attn.o_proj.weight", {E, H * D}, o + "attn.out_proj.weight");
      add(hf + "post_attention_layernorm.weight", {E}, o + "ln_2.weight");
      add(hf + "mlp.gate_proj.weight", {F, E}, o + "mlp.gate_proj.weight");
      add(hf + "mlp.up_proj.weight", {F, E}, o + "mlp.up_proj.weight");
      add(hf + "mlp.down_proj.weight", {E, F}, o + "mlp.down_proj.weight");
    }
    add("model.norm.weight", {E}, "ln_f.weight");
  }
  if (!c.tied) add("lm_head.weight", {V, E}, "lm_head.weight");
  return t;
}

// ---- config.json ----

// Reads config.json's fields, naming the file and the field in every error.
struct ConfigFile {
  tensor::Json json;
  std::string path;

  const tensor::Json* find(const std::string& key) const {
    const tensor::Json* v = json.find(key);
    return v && !v->is_null() ? v : nullptr;
  }
  [[noreturn]] void fail(const std::string& key, const std::string& expected, const std::string& got) const {
    throw Error(std::string(kLoad) + path + ": " + key + ": expected " + expected + ", got " + got);
  }
  int64_t integer(const std::string& key) const {
    const tensor::Json* v = find(key);
    if (!v) fail(key, "an integer", "nothing (the field is missing)");
    if (!v->is_integer()) fail(key, "an integer", v->dump());
    return v->as_int();
  }
  int64_t integer(const std::string& key, int64_t fallback) const { return find(key) ? integer(key) : fallback; }
  double number(const std::string& key, double fallback) const {
    const tensor::Json* v = find(key);
    if (!v) return fallback;
    if (!v->is_number()) fail(key, "a number", v->dump());
    return v->as_number();
  }
  bool flag(const std::string& key, bool fallback) const {
    const tensor::Json* v = find(key);
    if (!v) return fallback;
    if (!v->is_bool()) fail(key, "true or false", v->dump());
    return v->as_bool();
  }
  std::string string(const std::string& key, const std::string& fallback) const {
    const tensor::Json* v = find(key);
    if (!v) return fallback;
    if (!v->is_string()) fail(key, "a string", v->dump());
    return v->as_string();
  }
  // A setting we do not implement must keep the value that means "off".
  void require_flag(const std::string& key, bool fallback, bool supported) const {
    if (flag(key, fallback) != supported) fail(key, supported ? "true" : "false", supported ? "false" : "true");
  }
};

std::string read_text(const std::string& path) {
  const std::vector<uint8_t> bytes = tensor::read_file(path, "nn::load_hf_causal_lm");
  return std::string(bytes.begin(), bytes.end());
}

DecoderLMConfig read_config(const std::string& dir) {
  ConfigFile f;
  f.path = (std::filesystem::path(dir) / "config.json").string();
  if (!std::filesystem::exists(f.path)) {
    throw Error(std::string(kLoad) + "expected a model directory with config.json, got none at " + f.path);
  }
  f.json = tensor::Json::parse(read_text(f.path), f.path);
  if (!f.json.is_object()) f.fail("(document)", "a JSON object", f.json.dump());
  const tensor::Json* archs = f.find("architectures");
  if (!archs || !archs->is_array() || archs->as_array().size() != 1 || !archs->as_array()[0].is_string()) {
    f.fail("architectures", "[\"GPT2LMHeadModel\"] or [\"LlamaForCausalLM\"]", archs ? archs->dump() : "nothing");
  }
  const std::string arch = archs->as_array()[0].as_string();
  DecoderLMConfig c;
  if (arch == "GPT2LMHeadModel") {
    c.kind = DecoderKind::GPT2;
    c.vocabSize = f.integer("vocab_size");
    c.nPositions = f.integer("n_positions");
    c.nEmbd = f.integer("n_embd");
    c.nLayer = f.integer("n_layer");
    c.nHead = f.integer("n_head");
    c.intermediateSize = f.integer("n_inner", 0);
    c.normEps = f.number("layer_norm_epsilon", 1e-5);
    c.tied = f.flag("tie_word_embeddings", true);
    const std::string act = f.string("activation_function", "gelu_new");
    if (act != "gelu_new" && act != "gelu_pytorch_tanh") {
      f.fail("activation_function", "\"gelu_new\" (GELU's tanh form)", "\"" + act + "\"");
    }
    f.require_flag("scale_attn_weights", true, true);
    f.require_flag("scale_attn_by_inverse_layer_idx", false, false);
    f.require_flag("add_cross_attention", false, false);
  } else if (arch == "LlamaForCausalLM") {
    c.kind = DecoderKind::Llama;
    c.vocabSize = f.integer("vocab_size");
    c.nPositions = f.integer("max_position_embeddings", 2048);
    c.nEmbd = f.integer("hidden_size");
    c.nLayer = f.integer("num_hidden_layers");
    c.nHead = f.integer("num_attention_heads");
    c.nKvHead = f.integer("num_key_value_heads", c.nHead);
    c.intermediateSize = f.integer("intermediate_size");
    c.normEps = f.number("rms_norm_eps", 1e-6);
    c.tied = f.flag("tie_word_embeddings", false);
    const std::string act = f.string("hidden_act", "silu");
    if (act != "silu") f.fail("hidden_act", "\"silu\"", "\"" + act + "\"");
    f.require_flag("attention_bias", false, false);
    f.require_flag("mlp_bias", false, false);
    if (const tensor::Json* s = f.find("rope_scaling")) f.fail("rope_scaling", "null (no rope scaling)", s->dump());
    c.ropeTheta = f.number("rope_theta", 10000);
    if (const tensor::Json* p = f.find("rope_parameters")) {
      if (!p->is_object()) f.fail("rope_parameters", "an object", p->dump());
      const tensor::Json* type = p->find("rope_type");
      if (type && !(type->is_string() && type->as_string() == "default")) {
        f.fail("rope_parameters.rope_type", "\"default\" (no rope scaling)", type->dump());
      }
      for (const auto& [key, value] : p->as_object()) {
        if (key == "rope_type") continue;
        if (key != "rope_theta") f.fail("rope_parameters." + key, "rope_type and rope_theta alone", value.dump());
        if (!value.is_number()) f.fail("rope_parameters.rope_theta", "a number", value.dump());
        c.ropeTheta = value.as_number();
      }
    }
    if (c.nHead > 0 && c.nEmbd % c.nHead == 0) {
      const int64_t headDim = f.integer("head_dim", c.nEmbd / c.nHead);
      if (headDim != c.nEmbd / c.nHead) {
        f.fail("head_dim", "hidden_size / num_attention_heads = " + std::to_string(c.nEmbd / c.nHead),
               std::to_string(headDim));
      }
    }
  } else {
    f.fail("architectures", "[\"GPT2LMHeadModel\"] or [\"LlamaForCausalLM\"]", archs->dump());
  }
  c.check(std::string(kLoad) + f.path + ": ");
  return c;
}

// ---- weights ----

// name -> the file holding it, from the index or the one file
std::map<std::string, std::string> weight_files(const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path single = fs::path(dir) / "model.safetensors";
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  std::map<std::string, std::string> out;
  if (fs::exists(single)) return out;  // empty: the one file, whose own names are read
  if (!fs::exists(index)) {
    throw Error(std::string(kLoad) + "expected model.safetensors or model.safetensors.index.json in " + dir +
                ", got neither");
  }
  const std::string what = index.string();
  const tensor::Json j = tensor::Json::parse(read_text(what), what);
  const tensor::Json* map = j.is_object() ? j.find("weight_map") : nullptr;
  if (!map || !map->is_object()) {
    throw Error(std::string(kLoad) + what + ": weight_map: expected an object of tensor names, got " +
                (map ? map->dump() : std::string("nothing")));
  }
  for (const auto& [name, file] : map->as_object()) {
    if (!file.is_string() || file.as_string().empty() || file.as_string().find('/') != std::string::npos ||
        file.as_string().find('\\') != std::string::npos || file.as_string() == "..") {
      throw Error(std::string(kLoad) + what + ": weight_map." + name + ": expected a file name in " + dir + ", got " +
                  file.dump());
    }
    out[name] = file.as_string();
  }
  return out;
}

tensor::Tensor gather(const std::vector<const Entry*>& parts, const std::map<std::string, tensor::Tensor>& file,
                      tensor::DType dtype) {
  std::vector<tensor::Tensor> pieces;
  for (const Entry* e : parts) {
    tensor::Tensor t = file.at(e->hf).to(dtype);
    pieces.push_back(e->transpose ? t.t().contiguous() : t);
  }
  return pieces.size() == 1 ? pieces.front().contiguous() : tensor::cat(pieces, 0);
}

std::string torch_dtype(tensor::DType t) { return tensor::name(t); }

}  // namespace

std::shared_ptr<DecoderLM> load_hf_causal_lm(const std::string& dir, const HFLoadOptions& options) {
  namespace fs = std::filesystem;
  if (!tensor::is_floating(options.dtype)) {
    throw Error(std::string(kLoad) + "expected a floating dtype, got " + tensor::name(options.dtype));
  }
  const DecoderLMConfig config = read_config(dir);
  const std::vector<Entry> table = tensor_table(config);

  // every file read and every tensor checked before the model exists
  const std::map<std::string, std::string> where = weight_files(dir);
  std::map<std::string, tensor::Tensor> tensors;  // hf name -> tensor
  std::map<std::string, std::string> fileOf;      // hf name -> the file that holds it
  std::vector<std::string> files;
  if (where.empty()) {
    files.push_back("model.safetensors");
  } else {
    std::set<std::string> seen;
    for (const auto& [_, f] : where) {
      if (seen.insert(f).second) files.push_back(f);
    }
  }
  for (const std::string& f : files) {
    const std::string path = (fs::path(dir) / f).string();
    if (!fs::exists(path)) {
      throw Error(std::string(kLoad) + path + ": expected the shard that model.safetensors.index.json names, got " +
                  "no such file");
    }
    tensor::SafetensorsFile sf;
    try {
      sf = tensor::load_safetensors(path);
    } catch (const Error& e) {
      throw Error(std::string(kLoad) + e.what());
    }
    for (auto& [name, t] : sf.tensors) {
      if (!where.empty()) {
        auto it = where.find(name);
        if (it == where.end() || it->second != f) {
          throw Error(std::string(kLoad) + path + ": tensor '" + name + "': expected only the tensors the index " +
                      "assigns to this shard, got one it " +
                      (it == where.end() ? std::string("does not list") : "puts in " + it->second));
        }
      }
      fileOf[name] = path;
      tensors[name] = std::move(t);
    }
  }
  for (const auto& [name, f] : where) {
    if (!tensors.count(name)) {
      throw Error(std::string(kLoad) + (fs::path(dir) / f).string() + ": tensor '" + name +
                  "': expected it (model.safetensors.index.json lists it here), got no such tensor");
    }
  }
  const std::string source = where.empty() ? (fs::path(dir) / "model.safetensors").string() : dir;
  std::vector<std::string> problems;
  // a shard's name where there are shards (the message names the one file otherwise)
  auto in = [&](const std::string& name) { return where.empty() ? std::string() : fileOf[name] + ": "; };
  std::set<std::string> known;
  for (const Entry& e : table) {
    known.insert(e.hf);
    auto it = tensors.find(e.hf);
    if (it == tensors.end()) {
      problems.push_back("tensor '" + e.hf + "': expected " + tensor::shape_str(e.hfShape) + ", got no such tensor");
      continue;
    }
    const tensor::Tensor& t = it->second;
    if (!tensor::is_floating(t.dtype())) {
      problems.push_back(in(e.hf) + "tensor '" + e.hf + "': expected a floating dtype, got " + tensor::name(t.dtype()));
    } else if (t.sizes() != e.hfShape) {
      problems.push_back(in(e.hf) + "tensor '" + e.hf + "': expected " + tensor::shape_str(e.hfShape) + ", got " +
                         tensor::shape_str(t.sizes()));
    }
  }
  for (const auto& [name, t] : tensors) {
    if (known.count(name)) continue;
    const bool gpt2Buffer =
        config.kind == DecoderKind::GPT2 && (name.ends_with(".attn.bias") || name.ends_with(".attn.masked_bias"));
    const bool tiedHead = config.tied && name == "lm_head.weight" &&
                          t.sizes() == Shape{config.vocabSize, config.nEmbd};  // the embedding again
    if (!gpt2Buffer && !tiedHead) problems.push_back(in(name) + "tensor '" + name + "': unexpected");
  }
  if (!problems.empty()) {
    std::string msg = std::string(kLoad) + source + ": expected the tensors of the config's model, got " +
                      std::to_string(problems.size()) + " mismatch" + (problems.size() > 1 ? "es" : "") + ": ";
    for (size_t i = 0; i < problems.size(); ++i) msg += (i ? "; " : "") + problems[i];
    throw Error(msg);
  }

  // ours: each tensor from its entries (in table order: q, k, v rows in order)
  std::map<std::string, std::vector<const Entry*>> parts;
  for (const Entry& e : table) parts[e.ours].push_back(&e);
  std::map<std::string, tensor::Tensor> state;
  for (const auto& [ours, ps] : parts) state[ours] = gather(ps, tensors, options.dtype);
  if (config.tied) state["lm_head.weight"] = state.at("wte.weight");

  auto model = config.kind == DecoderKind::GPT2 ? make_gpt2(config) : make_llama(config);
  model->to(options.dtype);
  model->loadStateDict(state, true);
  model->evaluate();
  return model;
}

void save_hf_causal_lm(DecoderLM& model, const std::string& dir, const HFSaveOptions& options) {
  namespace fs = std::filesystem;
  if (options.maxShardBytes < 0) {
    throw Error(std::string(kSave) + "expected maxShardBytes >= 0 (0: one file), got " +
                std::to_string(options.maxShardBytes));
  }
  const DecoderLMConfig& c = model.settings();
  const std::vector<Entry> table = tensor_table(c);
  std::map<std::string, tensor::Tensor> ours = model.stateDict();
  tensor::DType dtype = tensor::DType::Float32;
  bool first = true;
  std::map<std::string, tensor::Tensor> out;
  for (const Entry& e : table) {
    auto it = ours.find(e.ours);
    if (it == ours.end()) throw Error(std::string(kSave) + "expected the model's tensor '" + e.ours + "', got none");
    tensor::Tensor t = it->second.cpu();
    if (first) dtype = t.dtype();
    first = false;
    if (e.rowSlice) t = t.narrow(0, e.rowBegin, e.hfShape[0]);
    if (e.transpose) t = t.t();
    t = t.contiguous();
    if (t.sizes() != e.hfShape) {
      throw Error(std::string(kSave) + "expected " + e.ours + " to give " + e.hf + " of " +
                  tensor::shape_str(e.hfShape) + ", got " + tensor::shape_str(t.sizes()));
    }
    out[e.hf] = t.to(dtype).clone();
  }

  // config.json as transformers writes it (the fields its config class reads)
  tensor::Json::Object j;
  if (c.kind == DecoderKind::GPT2) {
    j = {{"architectures", tensor::Json::Array{"GPT2LMHeadModel"}},
         {"model_type", "gpt2"},
         {"activation_function", "gelu_new"},
         {"attn_pdrop", 0.0},
         {"embd_pdrop", 0.0},
         {"resid_pdrop", 0.0},
         {"bos_token_id", nullptr},
         {"eos_token_id", nullptr},
         {"layer_norm_epsilon", c.normEps},
         {"n_embd", c.nEmbd},
         {"n_head", c.nHead},
         {"n_inner", c.intermediateSize == 0 ? tensor::Json(nullptr) : tensor::Json(c.intermediateSize)},
         {"n_layer", c.nLayer},
         {"n_positions", c.nPositions},
         {"scale_attn_weights", true},
         {"scale_attn_by_inverse_layer_idx", false},
         {"reorder_and_upcast_attn", false},
         {"tie_word_embeddings", c.tied},
         {"vocab_size", c.vocabSize}};
  } else {
    j = {{"architectures", tensor::Json::Array{"LlamaForCausalLM"}},
         {"model_type", "llama"},
         {"attention_bias", false},
         {"attention_dropout", 0.0},
         {"bos_token_id", nullptr},
         {"eos_token_id", nullptr},
         {"head_dim", c.headDim()},
         {"hidden_act", "silu"},
         {"hidden_size", c.nEmbd},
         {"intermediate_size", c.hidden()},
         {"max_position_embeddings", c.nPositions},
         {"mlp_bias", false},
         {"num_attention_heads", c.nHead},
         {"num_hidden_layers", c.nLayer},
         {"num_key_value_heads", c.kvHeads()},
         {"rms_norm_eps", c.normEps},
         {"rope_scaling", nullptr},
         {"rope_theta", c.ropeTheta},
         {"tie_word_embeddings", c.tied},
         {"vocab_size", c.vocabSize}};
  }
  j.emplace_back("dtype", torch_dtype(dtype));
  j.emplace_back("torch_dtype", torch_dtype(dtype));  // transformers before 5
  const std::string configText = tensor::Json(j).dump(2) + "\n";

  // shards: tensors in name order, each shard up to the limit (a larger tensor alone)
  std::vector<std::map<std::string, tensor::Tensor>> shards(1);
  int64_t shardBytes = 0, total = 0;
  for (const auto& [name, t] : out) {
    const int64_t n = static_cast<int64_t>(t.nbytes());
    total += n;
    if (options.maxShardBytes > 0 && shardBytes > 0 && shardBytes + n > options.maxShardBytes) {
      shards.emplace_back();
      shardBytes = 0;
    }
    shards.back()[name] = t;
    shardBytes += n;
  }
  const std::map<std::string, std::string> metadata{{"format", "pt"}};
  fs::create_directories(dir);
  const std::string configPath = (fs::path(dir) / "config.json").string();
  tensor::write_file_atomic(configPath, configText.data(), configText.size(), "nn::save_hf_causal_lm");
  const fs::path single = fs::path(dir) / "model.safetensors";
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  if (shards.size() == 1) {
    tensor::save_safetensors(single.string(), shards[0], metadata);
    fs::remove(index);  // transformers would read a stale index otherwise
    return;
  }
  tensor::Json::Object weightMap;
  const size_t n = shards.size();
  auto shardName = [&](size_t i) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "model-%05zu-of-%05zu.safetensors", i + 1, n);
    return std::string(buf);
  };
  for (size_t i = 0; i < n; ++i) {
    tensor::save_safetensors((fs::path(dir) / shardName(i)).string(), shards[i], metadata);
    for (const auto& [name, _] : shards[i]) weightMap.emplace_back(name, shardName(i));
  }
  const tensor::Json indexJson(
      tensor::Json::Object{{"metadata", tensor::Json::Object{{"total_size", total}}}, {"weight_map", weightMap}});
  const std::string indexText = indexJson.dump(2) + "\n";
  tensor::write_file_atomic(index.string(), indexText.data(), indexText.size(), "nn::save_hf_causal_lm");
  fs::remove(single);  // transformers prefers model.safetensors where both are present
}

}  // namespace nn

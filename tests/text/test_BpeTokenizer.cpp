// test_BpeTokenizer.cpp: text::BpeTokenizer against Hugging Face's `tokenizers`
// (scripts/make_tokenizer_reference.py wrote tests/data/text/): encodes and decodes of a
// tokenizer trained on /usr/share/common-licenses, in every file form, and of transformers'
// GPT2TokenizerFast file; training, saving, and the refusals.
#include <doctest/doctest.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include "tensor/DType.h"
#include "tensor/FileIO.h"
#include "tensor/Json.h"
#include "tests/support/TempDir.h"
#include "text/BpeTokenizer.h"

namespace {

using tensor::Error;
using tensor::Json;
using text::BpeTokenizer;

const std::string kDir = std::string(CUDNN_NN_TEST_DATA) + "/text/";

std::string read_text(const std::string& path) {
  auto raw = tensor::read_file(path, "test");
  return std::string(reinterpret_cast<const char*>(raw.data()), raw.size());
}

const Json& reference() {
  static const Json ref = Json::parse(read_text(kDir + "reference.json"), "reference.json");
  return ref;
}

std::vector<int64_t> ids_of(const Json& j) {
  std::vector<int64_t> out;
  for (const auto& v : j.as_array()) out.push_back(v.as_int());
  return out;
}

// Every case of reference.json through `t`, against what `tokenizers` gave for `key`.
void check_cases(const BpeTokenizer& t, const std::string& key) {
  for (const auto& c : reference().at("cases").as_array()) {
    const std::string& name = c.at("name").as_string();
    const std::string& text = c.at("text").as_string();
    CAPTURE(key);
    CAPTURE(name);
    const Json* ids = c.at("ids").find(key);  // absent: the same as tokenizer.json's
    const auto expected = ids_of(ids ? *ids : c.at("ids").at("tokenizer.json"));
    const auto got = t.encode(text);
    CHECK(got == expected);
    const Json* decoded = c.at("decoded").find(key);  // absent: the text itself
    CHECK(t.decode(expected) == (decoded ? decoded->as_string() : text));
  }
}

void write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// tokenizer.json with `edit` applied to its text (a plain substring replacement).
std::string edited(const std::string& from, const std::string& to) {
  std::string text = read_text(kDir + "tokenizer.json");
  size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("BpeTokenizer: tokenizer.json encodes and decodes as tokenizers") {
  for (const std::string key : {"tokenizer.json", "tokenizer_str.json", "tokenizer_prefix.json"}) {
    const auto t = BpeTokenizer::from_tokenizer_json(kDir + key);
    CHECK(t.vocab_size() == 1000);
    check_cases(t, key);
  }
}

TEST_CASE("BpeTokenizer: transformers' GPT2TokenizerFast file") {
  const auto t = BpeTokenizer::from_tokenizer_json(kDir + "gpt2_fast/tokenizer.json");
  check_cases(t, "gpt2_fast/tokenizer.json");
}

TEST_CASE("BpeTokenizer: vocab.json + merges.txt") {
  const auto t = BpeTokenizer::from_vocab_merges(kDir + "vocab.json", kDir + "merges.txt", {"<|endoftext|>"});
  check_cases(t, "tokenizer.json");
  CHECK(t.token_to_id("<|endoftext|>") == 0);
  CHECK(t.token_to_id("Ġthe") >= 0);
  CHECK(t.id_to_token(t.token_to_id("Ġthe")) == "Ġthe");
  CHECK(t.token_to_id("not a token") == -1);
}

TEST_CASE("BpeTokenizer: invalid UTF-8 decodes to U+FFFD as tokenizers") {
  const auto t = BpeTokenizer::from_tokenizer_json(kDir + "tokenizer.json");
  for (const auto& d : reference().at("decodes").as_array()) {
    const auto ids = ids_of(d.at("ids"));
    CAPTURE(d.at("ids").dump());
    CHECK(t.decode(ids) == d.at("decoded").as_string());
  }
}

TEST_CASE("BpeTokenizer: a few MB encode fast (merges cached per pre-token)") {
  const auto t = BpeTokenizer::from_tokenizer_json(kDir + "tokenizer.json");
  std::string big;
  for (const auto& c : reference().at("cases").as_array())
    if (c.at("name").as_string().rfind("file_", 0) == 0) big += c.at("text").as_string();
  const std::string corpus = big;
  while (big.size() < (2u << 20)) big += corpus;
  const auto start = std::chrono::steady_clock::now();
  const auto ids = t.encode(big);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(t.decode(ids) == big);
  MESSAGE("encoded " << big.size() << " bytes to " << ids.size() << " ids in " << seconds << " s");
  CHECK(seconds < 20);
}

TEST_CASE("BpeTokenizer: training") {
  std::vector<std::string> texts;
  for (const std::string name : {"file_GPL-3", "file_Apache-2.0", "file_MPL-2.0", "file_LGPL-2.1"})
    for (const auto& c : reference().at("cases").as_array())
      if (c.at("name").as_string() == name) texts.push_back(c.at("text").as_string());
  REQUIRE(texts.size() == 4);
  const auto trained = BpeTokenizer::train(texts, 1000, {"<|endoftext|>"});
  CHECK(trained.vocab_size() == 1000);
  CHECK(trained.token_to_id("<|endoftext|>") == 0);

  SUBCASE("deterministic, and the merges tokenizers' BpeTrainer made") {
    const auto again = BpeTokenizer::train(texts, 1000, {"<|endoftext|>"});
    CHECK(again.merges() == trained.merges());
    const auto hf = BpeTokenizer::from_tokenizer_json(kDir + "tokenizer.json");
    CHECK(trained.merges() == hf.merges());
    for (int64_t id = 0; id < hf.vocab_size(); ++id) CHECK(trained.id_to_token(id) == hf.id_to_token(id));
  }
  SUBCASE("round trip") {
    for (const auto& c : reference().at("cases").as_array()) {
      const std::string& text = c.at("text").as_string();
      CAPTURE(c.at("name").as_string());
      CHECK(trained.decode(trained.encode(text)) == text);
    }
  }
  SUBCASE("saved, loaded back") {
    testing::TempDir dir("cudnn_nn_test_bpe");
    trained.save_tokenizer_json(dir / "tokenizer.json");
    const auto loaded = BpeTokenizer::from_tokenizer_json(dir / "tokenizer.json");
    CHECK(loaded.merges() == trained.merges());
    for (const auto& c : reference().at("cases").as_array())
      CHECK(loaded.encode(c.at("text").as_string()) == trained.encode(c.at("text").as_string()));
  }
  SUBCASE("small vocabularies, and a text of one repeated byte") {
    const auto tiny = BpeTokenizer::train({"aaaaaaa aaa aa"}, 260, {});
    CHECK(tiny.vocab_size() <= 260);
    CHECK(tiny.decode(tiny.encode("aaaa aaaaa")) == "aaaa aaaaa");
    CHECK(tiny.merges().front() == std::make_pair(std::string("a"), std::string("a")));
  }
  CHECK_THROWS_WITH_AS(BpeTokenizer::train(texts, 100, {}),
                       doctest::Contains("text.BpeTokenizer::train: expected vocabSize in [256"), Error);
  CHECK_THROWS_WITH_AS(BpeTokenizer::train(texts, 1000, {"<s>", "<s>"}),
                       doctest::Contains("expected distinct non-empty special tokens, got \"<s>\" twice"), Error);
}

TEST_CASE("BpeTokenizer: bad input is refused, naming the file and the field") {
  testing::TempDir dir("cudnn_nn_test_bpe_bad");
  const std::string path = dir / "tokenizer.json";
  auto refused = [&](const std::string& text, const std::string& message) {
    write(path, text);
    CAPTURE(message);
    CHECK_THROWS_WITH_AS(BpeTokenizer::from_tokenizer_json(path), doctest::Contains(message.c_str()), Error);
  };
  const std::string who = "text.BpeTokenizer::from_tokenizer_json: " + path + ": ";
  refused(edited("\"type\": \"BPE\"", "\"type\": \"WordPiece\""),
          who + "expected model.type \"BPE\", got \"WordPiece\"");
  refused(edited("\"normalizer\": null", "\"normalizer\": {\"type\": \"NFC\"}"),
          who + "expected normalizer null, got \"NFC\" (not supported)");
  refused(edited("\"merges\"", "\"mergez\""), who + "expected model.merges present, got no such field");
  refused(edited("\"decoder\": {\n    \"type\": \"ByteLevel\"", "\"decoder\": {\n    \"type\": \"WordPiece\""),
          who + "expected decoder.type \"ByteLevel\", got \"WordPiece\"");
  refused(
      edited("\"pre_tokenizer\": {\n    \"type\": \"ByteLevel\"", "\"pre_tokenizer\": {\n    \"type\": \"Whitespace\""),
      who + "expected pre_tokenizer.type \"ByteLevel\", got \"Whitespace\"");
  refused(edited("\"lstrip\": false", "\"lstrip\": true"), who + "expected added_tokens[0].lstrip false, got true");
  refused(edited("\"byte_fallback\": false", "\"byte_fallback\": true"), who + "expected model.byte_fallback false");
  refused(
      edited("\"post_processor\": {\n    \"type\": \"ByteLevel\"",
             "\"post_processor\": {\n    \"type\": \"BertProcessing\""),
      who +
          "expected post_processor null, ByteLevel or a TemplateProcessing that adds no token, got \"BertProcessing\"");
  refused(edited("\"pre_tokenizer\": {\n    \"type\": \"ByteLevel\",\n    \"add_prefix_space\": false,\n    "
                 "\"trim_offsets\": true,\n    \"use_regex\": true\n  }",
                 "\"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Digits\"}, {\"type\": "
                 "\"ByteLevel\"}]}"),
          who + "expected pre_tokenizer.pretokenizers one ByteLevel, got 2 entries");
  refused("{\"model\": ", who + "expected JSON, got");
  refused(edited("\"Ġ\": 221", "\"Ġ\": -3"), who + "expected model.vocab[\"Ġ\"] an id in [0, 2^31), got");
  CHECK_THROWS_WITH_AS(BpeTokenizer::from_tokenizer_json(dir / "missing.json"),
                       doctest::Contains("text.BpeTokenizer::from_tokenizer_json"), Error);
  write(dir / "vocab.json", "{\"a\": 0}");
  write(dir / "merges.txt", "#version: 0.2\n");
  CHECK_THROWS_WITH_AS(BpeTokenizer::from_vocab_merges(dir / "vocab.json", dir / "merges.txt"),
                       doctest::Contains("expected model.vocab to hold every byte-level symbol, got none for byte 0x0"),
                       Error);

  const auto t = BpeTokenizer::from_tokenizer_json(kDir + "tokenizer.json");
  CHECK_THROWS_WITH_AS(
      t.decode({5, 1000}),
      doctest::Contains("text.BpeTokenizer::decode: expected ids in the vocabulary [0, 1000), got 1000 at position 1"),
      Error);
  CHECK_THROWS_WITH_AS(t.decode({-1}), doctest::Contains("got -1 at position 0"), Error);
  CHECK_THROWS_WITH_AS(t.id_to_token(4000), doctest::Contains("got 4000"), Error);
  CHECK_THROWS_WITH_AS(t.encode("ab\xff"),
                       doctest::Contains("text.BpeTokenizer::encode: expected valid UTF-8, got byte 0xff at offset 2"),
                       Error);
}

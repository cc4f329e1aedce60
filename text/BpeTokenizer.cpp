#include "text/BpeTokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <limits>
#include <mutex>
#include <set>
#include <sstream>
#include <unordered_set>

#include "tensor/DType.h"
#include "tensor/FileIO.h"
#include "tensor/Json.h"
#include "tensor/LruCache.h"

namespace text {

namespace {

using tensor::Json;

constexpr const char* kName = "text.BpeTokenizer";

// GPT-2's pre-tokenizer, as `tokenizers`' ByteLevel has it: contractions, letters, numbers and
// other symbols each with at most one leading space, and whitespace runs, the last space of a run
// left to the word after it.
constexpr const char* kPattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

[[noreturn]] void fail(const std::string& message) { throw tensor::Error(message); }

std::string who_of(const char* method) { return std::string(kName) + "::" + method; }

// Note [Byte-level symbols]: GPT-2 gives each of the 256 bytes a printable character so that a
// vocabulary of strings holds any byte sequence: the printable Latin-1 bytes ('!'..'~',
// U+00A1..U+00AC, U+00AE..U+00FF) stand for themselves, the other 68 for U+0100, U+0101, ... in
// byte order. Tokens are strings of these characters, UTF-8 encoded.
struct ByteTable {
  std::string byte_char[256];
  std::unordered_map<uint32_t, uint8_t> char_byte;
  ByteTable() {
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      uint32_t cp = printable ? static_cast<uint32_t>(b) : static_cast<uint32_t>(256 + n++);
      std::string s;
      if (cp < 0x80) {
        s += static_cast<char>(cp);
      } else {
        s += static_cast<char>(0xC0 | (cp >> 6));
        s += static_cast<char>(0x80 | (cp & 0x3F));
      }
      byte_char[b] = s;
      char_byte[cp] = static_cast<uint8_t>(b);
    }
  }
};
const ByteTable& bytes() {
  static const ByteTable table;
  return table;
}

// The length of the valid UTF-8 sequence at s[i] (>= 1), or 0 with `bad` set to the length of
// its maximal valid prefix (>= 1), the bytes one U+FFFD replaces (Unicode's "maximal subpart"
// practice, which Rust's from_utf8_lossy follows).
size_t utf8_at(std::string_view s, size_t i, size_t& bad) {
  auto b = static_cast<uint8_t>(s[i]);
  if (b < 0x80) return 1;
  size_t len = 0;
  uint8_t lo = 0x80, hi = 0xBF;
  if (b >= 0xC2 && b <= 0xDF) {
    len = 2;
  } else if (b >= 0xE0 && b <= 0xEF) {
    len = 3;
    if (b == 0xE0) lo = 0xA0;
    if (b == 0xED) hi = 0x9F;
  } else if (b >= 0xF0 && b <= 0xF4) {
    len = 4;
    if (b == 0xF0) lo = 0x90;
    if (b == 0xF4) hi = 0x8F;
  } else {
    bad = 1;
    return 0;
  }
  for (size_t k = 1; k < len; ++k) {
    if (i + k >= s.size()) {
      bad = k;
      return 0;
    }
    auto c = static_cast<uint8_t>(s[i + k]);
    uint8_t l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
    if (c < l || c > h) {
      bad = k;
      return 0;
    }
  }
  return len;
}

uint32_t code_point(std::string_view s, size_t i, size_t len) {
  auto b = static_cast<uint8_t>(s[i]);
  uint32_t cp = len == 1 ? b : len == 2 ? (b & 0x1F) : len == 3 ? (b & 0x0F) : (b & 0x07);
  for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<uint8_t>(s[i + k]) & 0x3F);
  return cp;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

uint64_t pair_key(int64_t a, int64_t b) { return (static_cast<uint64_t>(a) << 32) | static_cast<uint64_t>(b); }

// Reading tokenizer.json: every error names the file and the field.
struct Reader {
  std::string who, path;
  [[noreturn]] void bad(const std::string& field, const std::string& expected, const std::string& got) const {
    fail(who + ": " + path + ": expected " + field + " " + expected + ", got " + got);
  }
  static std::string kind_of(const Json& j) {
    switch (j.kind()) {
      case Json::Kind::Null:
        return "null";
      case Json::Kind::Bool:
        return j.as_bool() ? "true" : "false";
      case Json::Kind::Number:
        return "a number";
      case Json::Kind::String:
        return "\"" + j.as_string() + "\"";
      case Json::Kind::Array:
        return "an array";
      case Json::Kind::Object:
        return "an object";
    }
    return "?";
  }
  const Json& need(const Json& obj, const std::string& key, const std::string& field) const {
    const Json* j = obj.find(key);
    if (!j) bad(field, "present", "no such field");
    return *j;
  }
  const std::string& str(const Json& j, const std::string& field) const {
    if (!j.is_string()) bad(field, "a string", kind_of(j));
    return j.as_string();
  }
  bool flag(const Json& obj, const std::string& key, const std::string& field, bool dflt) const {
    const Json* j = obj.find(key);
    if (!j || j->is_null()) return dflt;
    if (!j->is_bool()) bad(field, "true or false", kind_of(*j));
    return j->as_bool();
  }
  int64_t id(const Json& j, const std::string& field) const {
    if (!j.is_integer() || j.as_int() < 0 || j.as_int() > std::numeric_limits<int32_t>::max())
      bad(field, "an id in [0, 2^31)", j.is_number() ? std::to_string(j.as_number()) : kind_of(j));
    return j.as_int();
  }
  // A string field that must be null/absent or one of `allowed`.
  void only(const Json& obj, const std::string& key, const std::string& field,
            const std::vector<std::string>& allowed) const {
    const Json* j = obj.find(key);
    if (!j || j->is_null()) return;
    if (j->is_string() && std::find(allowed.begin(), allowed.end(), j->as_string()) != allowed.end()) return;
    bad(field, "null", kind_of(*j) + " (not supported)");
  }
};

}  // namespace

struct BpeTokenizer::Regex {
  pcre2_code* code = nullptr;
  ~Regex() { pcre2_code_free(code); }
};

struct BpeTokenizer::Cache {
  std::mutex mutex;
  tensor::LruCache<std::string, std::vector<int64_t>> words{1 << 16};
};

BpeTokenizer::BpeTokenizer() : cache_(std::make_unique<Cache>()) {}
BpeTokenizer::BpeTokenizer(BpeTokenizer&&) noexcept = default;
BpeTokenizer& BpeTokenizer::operator=(BpeTokenizer&&) noexcept = default;
BpeTokenizer::~BpeTokenizer() = default;

void BpeTokenizer::finish(const std::string& who) {
  const ByteTable& table = bytes();
  for (int b = 0; b < 256; ++b) {
    auto it = vocab_.find(table.byte_char[b]);
    if (it == vocab_.end()) {
      std::ostringstream os;
      os << who << ": expected model.vocab to hold every byte-level symbol, got none for byte 0x" << std::hex << b;
      fail(os.str());
    }
    byte_ids_[b] = it->second;
  }
  int64_t size = 0;
  for (const auto& [token, id] : vocab_) size = std::max(size, id + 1);
  for (const auto& a : added_) size = std::max(size, a.id + 1);
  tokens_.assign(static_cast<size_t>(size), std::string());
  for (const auto& [token, id] : vocab_) {
    if (!tokens_[id].empty())
      fail(who + ": expected model.vocab ids to be unique, got " + std::to_string(id) + " twice");
    tokens_[id] = token;
  }
  for (const auto& a : added_) {
    if (!tokens_[a.id].empty() && tokens_[a.id] != a.content)
      fail(who + ": expected added token \"" + a.content + "\" to have an id of its own, got " + std::to_string(a.id) +
           " (\"" + tokens_[a.id] + "\")");
    if (a.content.empty()) fail(who + ": expected added tokens to be non-empty, got \"\"");
    tokens_[a.id] = a.content;
  }
  ranks_.clear();
  for (size_t r = 0; r < merges_.size(); ++r) {
    const auto& [a, b] = merges_[r];
    auto ia = vocab_.find(a), ib = vocab_.find(b), im = vocab_.find(a + b);
    if (ia == vocab_.end() || ib == vocab_.end() || im == vocab_.end())
      fail(who + ": expected model.merges[" + std::to_string(r) + "] (\"" + a + "\", \"" + b +
           "\") and its result in model.vocab, got " +
           (ia == vocab_.end()   ? "\"" + a + "\""
            : ib == vocab_.end() ? "\"" + b + "\""
                                 : "\"" + a + b + "\"") +
           " missing");
    ranks_.emplace(pair_key(ia->second, ib->second), std::make_pair(static_cast<int64_t>(r), im->second));
  }
  int error = 0;
  PCRE2_SIZE offset = 0;
  auto regex = std::make_unique<Regex>();
  regex->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(kPattern), PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP,
                              &error, &offset, nullptr);
  if (!regex->code)
    fail(who + ": expected PCRE2 to compile the pre-tokenizer pattern, got error " + std::to_string(error));
  pcre2_jit_compile(regex->code, PCRE2_JIT_COMPLETE);  // optional: matching works without it
  regex_ = std::move(regex);
  cache_ = std::make_unique<Cache>();
}

BpeTokenizer BpeTokenizer::from_tokenizer_json(const std::string& path) {
  const std::string who = who_of("from_tokenizer_json");
  auto raw = tensor::read_file(path, who.c_str());
  Json root;
  try {
    root = Json::parse(std::string_view(reinterpret_cast<const char*>(raw.data()), raw.size()), path);
  } catch (const tensor::Error& e) {
    fail(who + ": " + path + ": expected JSON, got " + e.what());
  }
  Reader r{who, path};
  if (!root.is_object()) r.bad("the top level", "an object", Reader::kind_of(root));
  BpeTokenizer t;

  const Json& model = r.need(root, "model", "model");
  if (!model.is_object()) r.bad("model", "an object", Reader::kind_of(model));
  const Json* type = model.find("type");
  if (type && (!type->is_string() || type->as_string() != "BPE"))
    r.bad("model.type", "\"BPE\"", Reader::kind_of(*type));
  if (!type && !model.find("merges")) r.bad("model.type", "\"BPE\"", "no such field");
  if (const Json* d = model.find("dropout"); d && !d->is_null() && !(d->is_number() && d->as_number() == 0))
    r.bad("model.dropout", "null", Reader::kind_of(*d) + " (not supported)");
  r.only(model, "continuing_subword_prefix", "model.continuing_subword_prefix", {""});
  r.only(model, "end_of_word_suffix", "model.end_of_word_suffix", {""});
  if (r.flag(model, "byte_fallback", "model.byte_fallback", false))
    r.bad("model.byte_fallback", "false", "true (not supported)");
  r.flag(model, "fuse_unk", "model.fuse_unk", false);
  t.ignore_merges_ = r.flag(model, "ignore_merges", "model.ignore_merges", false);

  const Json& vocab = r.need(model, "vocab", "model.vocab");
  if (!vocab.is_object()) r.bad("model.vocab", "an object", Reader::kind_of(vocab));
  for (const auto& [token, id] : vocab.as_object()) t.vocab_[token] = r.id(id, "model.vocab[\"" + token + "\"]");
  const Json& merges = r.need(model, "merges", "model.merges");
  if (!merges.is_array()) r.bad("model.merges", "an array", Reader::kind_of(merges));
  for (size_t i = 0; i < merges.as_array().size(); ++i) {
    const Json& m = merges.as_array()[i];
    std::string field = "model.merges[" + std::to_string(i) + "]";
    if (m.is_string()) {
      const std::string& s = m.as_string();
      size_t space = s.find(' ');
      if (space == std::string::npos || space == 0 || space + 1 == s.size() ||
          s.find(' ', space + 1) != std::string::npos)
        r.bad(field, "\"a b\"", Reader::kind_of(m));
      t.merges_.emplace_back(s.substr(0, space), s.substr(space + 1));
    } else if (m.is_array() && m.as_array().size() == 2) {
      t.merges_.emplace_back(r.str(m.as_array()[0], field + "[0]"), r.str(m.as_array()[1], field + "[1]"));
    } else {
      r.bad(field, "\"a b\" or [a, b]", Reader::kind_of(m));
    }
  }

  if (const Json* n = root.find("normalizer"); n && !n->is_null())
    r.bad("normalizer", "null",
          (n->is_object() && n->find("type") ? Reader::kind_of(*n->find("type")) : Reader::kind_of(*n)) +
              " (not supported)");
  for (const char* key : {"truncation", "padding"})
    if (const Json* n = root.find(key); n && !n->is_null())
      r.bad(key, "null", Reader::kind_of(*n) + " (not supported)");

  // pre_tokenizer: ByteLevel, or a Sequence holding one ByteLevel.
  const Json& pre = r.need(root, "pre_tokenizer", "pre_tokenizer");
  const Json* level = &pre;
  std::string pre_field = "pre_tokenizer";
  if (!pre.is_object()) r.bad("pre_tokenizer.type", "\"ByteLevel\"", Reader::kind_of(pre));
  if (const Json* ty = pre.find("type"); ty && ty->is_string() && ty->as_string() == "Sequence") {
    const Json& list = r.need(pre, "pretokenizers", "pre_tokenizer.pretokenizers");
    if (!list.is_array() || list.as_array().size() != 1)
      r.bad("pre_tokenizer.pretokenizers", "one ByteLevel",
            list.is_array() ? std::to_string(list.as_array().size()) + " entries" : Reader::kind_of(list));
    level = &list.as_array()[0];
    pre_field = "pre_tokenizer.pretokenizers[0]";
  }
  if (!level->is_object() || !level->find("type") || !level->find("type")->is_string() ||
      level->find("type")->as_string() != "ByteLevel")
    r.bad(pre_field + ".type", "\"ByteLevel\"",
          level->is_object() && level->find("type") ? Reader::kind_of(*level->find("type")) : Reader::kind_of(*level));
  t.add_prefix_space_ = r.flag(*level, "add_prefix_space", pre_field + ".add_prefix_space", true);
  t.use_regex_ = r.flag(*level, "use_regex", pre_field + ".use_regex", true);

  const Json& dec = r.need(root, "decoder", "decoder");
  if (!dec.is_object() || !dec.find("type") || !dec.find("type")->is_string() ||
      dec.find("type")->as_string() != "ByteLevel")
    r.bad("decoder.type", "\"ByteLevel\"",
          dec.is_object() && dec.find("type") ? Reader::kind_of(*dec.find("type")) : Reader::kind_of(dec));

  // post_processor: none that adds tokens (ByteLevel only trims offsets).
  if (const Json* post = root.find("post_processor"); post && !post->is_null()) {
    const Json* ty = post->is_object() ? post->find("type") : nullptr;
    std::string kind = ty && ty->is_string() ? ty->as_string() : "";
    bool plain = kind == "ByteLevel";
    if (kind == "TemplateProcessing") {
      const Json* single = post->find("single");
      const Json* specials = post->find("special_tokens");
      plain = single && single->is_array() && single->as_array().size() == 1 && single->as_array()[0].is_object() &&
              single->as_array()[0].find("Sequence") && specials && specials->is_object() &&
              specials->as_object().empty();
    }
    if (!plain)
      r.bad("post_processor", "null, ByteLevel or a TemplateProcessing that adds no token",
            (ty ? Reader::kind_of(*ty) : Reader::kind_of(*post)) + " (not supported)");
  }

  if (const Json* added = root.find("added_tokens"); added && !added->is_null()) {
    if (!added->is_array()) r.bad("added_tokens", "an array", Reader::kind_of(*added));
    for (size_t i = 0; i < added->as_array().size(); ++i) {
      const Json& a = added->as_array()[i];
      std::string field = "added_tokens[" + std::to_string(i) + "]";
      if (!a.is_object()) r.bad(field, "an object", Reader::kind_of(a));
      for (const char* key : {"single_word", "lstrip", "rstrip"})
        if (r.flag(a, key, field + "." + key, false)) r.bad(field + "." + key, "false", "true (not supported)");
      AddedToken tok{r.str(r.need(a, "content", field + ".content"), field + ".content"),
                     r.id(r.need(a, "id", field + ".id"), field + ".id"),
                     r.flag(a, "special", field + ".special", false)};
      if (tok.content.empty()) r.bad(field + ".content", "a non-empty string", "\"\"");
      t.added_.push_back(std::move(tok));
    }
  }
  t.finish(who + ": " + path);
  return t;
}

BpeTokenizer BpeTokenizer::from_vocab_merges(const std::string& vocabPath, const std::string& mergesPath,
                                             const std::vector<std::string>& specialTokens) {
  const std::string who = who_of("from_vocab_merges");
  auto raw = tensor::read_file(vocabPath, who.c_str());
  auto rawMerges = tensor::read_file(mergesPath, who.c_str());
  Json vocab;
  try {
    vocab = Json::parse(std::string_view(reinterpret_cast<const char*>(raw.data()), raw.size()), vocabPath);
  } catch (const tensor::Error& e) {
    fail(who + ": " + vocabPath + ": expected JSON, got " + e.what());
  }
  Reader r{who, vocabPath};
  if (!vocab.is_object()) r.bad("the top level", "an object of token: id", Reader::kind_of(vocab));
  BpeTokenizer t;
  t.add_prefix_space_ = false;
  for (const auto& [token, id] : vocab.as_object()) t.vocab_[token] = r.id(id, "[\"" + token + "\"]");
  std::string text(reinterpret_cast<const char*>(rawMerges.data()), rawMerges.size());
  std::istringstream lines(text);
  std::string line;
  for (size_t number = 1; std::getline(lines, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (number == 1 && line.rfind("#version", 0) == 0)) continue;
    size_t space = line.find(' ');
    if (space == std::string::npos || space == 0 || space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string::npos)
      fail(who + ": " + mergesPath + ": expected line " + std::to_string(number) + " to be \"a b\", got \"" + line +
           "\"");
    t.merges_.emplace_back(line.substr(0, space), line.substr(space + 1));
  }
  for (const auto& s : specialTokens) {
    auto it = t.vocab_.find(s);
    if (it == t.vocab_.end())
      fail(who + ": " + vocabPath + ": expected special token \"" + s + "\" in the vocabulary, got none");
    t.added_.push_back({s, it->second, true});
  }
  t.finish(who + ": " + vocabPath);
  return t;
}

int64_t BpeTokenizer::token_to_id(const std::string& token) const {
  for (const auto& a : added_)
    if (a.content == token) return a.id;
  auto it = vocab_.find(token);
  return it == vocab_.end() ? -1 : it->second;
}

const std::string& BpeTokenizer::id_to_token(int64_t id) const {
  if (id < 0 || id >= vocab_size() || tokens_[id].empty())
    fail(who_of("id_to_token") + ": expected an id in the vocabulary [0, " + std::to_string(vocab_size()) + "), got " +
         std::to_string(id));
  return tokens_[id];
}

void BpeTokenizer::encode_word(const std::string& word, std::vector<int64_t>& out) const {
  // word: raw bytes of one pre-token
  std::string mapped;
  if (ignore_merges_ || word.size() > 256) {
    for (unsigned char c : word) mapped += bytes().byte_char[c];
  }
  if (ignore_merges_) {
    if (auto it = vocab_.find(mapped); it != vocab_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  const bool cacheable = word.size() <= 256;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_->mutex);
    if (auto* hit = cache_->words.find(word)) {
      out.insert(out.end(), hit->begin(), hit->end());
      return;
    }
  }
  std::vector<int64_t> symbols;
  symbols.reserve(word.size());
  for (unsigned char c : word) symbols.push_back(byte_ids_[c]);
  // Note [BPE merge order]: the adjacent pair of lowest merge rank is merged first, the leftmost of
  // equal pairs first (`tokenizers` pops (rank, position) from a min-heap; "a a a" -> "aa a").
  while (symbols.size() > 1) {
    int64_t best = std::numeric_limits<int64_t>::max(), merged = -1;
    size_t at = 0;
    for (size_t i = 0; i + 1 < symbols.size(); ++i) {
      auto it = ranks_.find(pair_key(symbols[i], symbols[i + 1]));
      if (it != ranks_.end() && it->second.first < best) {
        best = it->second.first;
        merged = it->second.second;
        at = i;
      }
    }
    if (merged < 0) break;
    symbols[at] = merged;
    symbols.erase(symbols.begin() + static_cast<std::ptrdiff_t>(at) + 1);
  }
  out.insert(out.end(), symbols.begin(), symbols.end());
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_->mutex);
    cache_->words.put(word, std::move(symbols));
  }
}

void BpeTokenizer::encode_segment(std::string_view segment, std::vector<int64_t>& out) const {
  std::string prefixed;
  if (add_prefix_space_ && !segment.empty() && segment[0] != ' ') {
    prefixed = " " + std::string(segment);
    segment = prefixed;
  }
  if (segment.empty()) return;
  if (!use_regex_) {
    encode_word(std::string(segment), out);
    return;
  }
  pcre2_match_data* match = pcre2_match_data_create_from_pattern(regex_->code, nullptr);
  size_t pos = 0;
  auto subject = reinterpret_cast<PCRE2_SPTR>(segment.data());
  while (pos < segment.size()) {
    int rc = pcre2_match(regex_->code, subject, segment.size(), pos, PCRE2_NO_UTF_CHECK, match, nullptr);
    if (rc < 0) {  // no match in the rest: it is one piece (Split's Isolated behaviour)
      encode_word(std::string(segment.substr(pos)), out);
      break;
    }
    PCRE2_SIZE* ov = pcre2_get_ovector_pointer(match);
    size_t start = ov[0], end = ov[1];
    if (start > pos) encode_word(std::string(segment.substr(pos, start - pos)), out);
    if (end == start) {  // cannot happen with this pattern (every branch consumes), kept safe
      size_t bad = 0, len = utf8_at(segment, start, bad);
      end = start + std::max<size_t>(len, 1);
    }
    encode_word(std::string(segment.substr(start, end - start)), out);
    pos = end;
  }
  pcre2_match_data_free(match);
}

std::vector<int64_t> BpeTokenizer::encode(std::string_view utf8) const {
  for (size_t i = 0, bad = 0; i < utf8.size();) {
    size_t len = utf8_at(utf8, i, bad);
    if (len == 0) {
      std::ostringstream os;
      os << who_of("encode") << ": expected valid UTF-8, got byte 0x" << std::hex
         << static_cast<int>(static_cast<uint8_t>(utf8[i])) << std::dec << " at offset " << i << " not a character";
      fail(os.str());
    }
    i += len;
  }
  std::vector<int64_t> out;
  out.reserve(utf8.size() / 3 + 1);
  // Added tokens split the text first, leftmost match first, the longest of those at one place.
  size_t pos = 0;
  while (pos <= utf8.size()) {
    size_t best = std::string_view::npos, best_len = 0;
    int64_t best_id = -1;
    for (const auto& a : added_) {
      size_t at = utf8.find(a.content, pos);
      if (at == std::string_view::npos) continue;
      if (at < best || (at == best && a.content.size() > best_len)) {
        best = at;
        best_len = a.content.size();
        best_id = a.id;
      }
    }
    if (best == std::string_view::npos) {
      encode_segment(utf8.substr(pos), out);
      break;
    }
    encode_segment(utf8.substr(pos, best - pos), out);
    out.push_back(best_id);
    pos = best + best_len;
  }
  return out;
}

std::string BpeTokenizer::decode(const std::vector<int64_t>& ids) const {
  const ByteTable& table = bytes();
  std::string raw;
  for (size_t k = 0; k < ids.size(); ++k) {
    int64_t id = ids[k];
    if (id < 0 || id >= vocab_size() || tokens_[id].empty())
      fail(who_of("decode") + ": expected ids in the vocabulary [0, " + std::to_string(vocab_size()) + "), got " +
           std::to_string(id) + " at position " + std::to_string(k));
    const std::string& token = tokens_[id];
    size_t bad = 0;
    for (size_t i = 0; i < token.size();) {
      size_t len = utf8_at(token, i, bad);
      if (len == 0) {  // not from a JSON file; pass the byte through
        raw += token[i++];
        continue;
      }
      auto it = table.char_byte.find(code_point(token, i, len));
      if (it != table.char_byte.end()) {
        raw += static_cast<char>(it->second);
      } else {
        raw.append(token, i, len);  // a character outside the byte alphabet (an added token's) as itself
      }
      i += len;
    }
  }
  std::string out;
  out.reserve(raw.size());
  for (size_t i = 0, bad = 0; i < raw.size();) {
    size_t len = utf8_at(raw, i, bad);
    if (len == 0) {
      append_utf8(out, 0xFFFD);
      i += bad;
    } else {
      out.append(raw, i, len);
      i += len;
    }
  }
  return out;
}

void BpeTokenizer::save_tokenizer_json(const std::string& path) const {
  Json::Array added;
  for (const auto& a : added_)
    added.push_back(Json(Json::Object{{"id", Json(a.id)},
                                      {"content", Json(a.content)},
                                      {"single_word", Json(false)},
                                      {"lstrip", Json(false)},
                                      {"rstrip", Json(false)},
                                      {"normalized", Json(!a.special)},
                                      {"special", Json(a.special)}}));
  auto level = [&](bool prefix, bool trim) {
    return Json(Json::Object{{"type", Json("ByteLevel")},
                             {"add_prefix_space", Json(prefix)},
                             {"trim_offsets", Json(trim)},
                             {"use_regex", Json(use_regex_)}});
  };
  std::vector<std::pair<int64_t, std::string>> by_id;
  for (const auto& [token, id] : vocab_) by_id.emplace_back(id, token);
  std::sort(by_id.begin(), by_id.end());
  Json::Object vocab;
  for (const auto& [id, token] : by_id) vocab.emplace_back(token, Json(id));
  Json::Array merges;
  for (const auto& [a, b] : merges_) merges.push_back(Json(Json::Array{Json(a), Json(b)}));
  Json model(Json::Object{{"type", Json("BPE")},
                          {"dropout", Json()},
                          {"unk_token", Json()},
                          {"continuing_subword_prefix", Json()},
                          {"end_of_word_suffix", Json()},
                          {"fuse_unk", Json(false)},
                          {"byte_fallback", Json(false)},
                          {"ignore_merges", Json(ignore_merges_)},
                          {"vocab", Json(std::move(vocab))},
                          {"merges", Json(std::move(merges))}});
  Json root(Json::Object{{"version", Json("1.0")},
                         {"truncation", Json()},
                         {"padding", Json()},
                         {"added_tokens", Json(std::move(added))},
                         {"normalizer", Json()},
                         {"pre_tokenizer", level(add_prefix_space_, true)},
                         {"post_processor", level(true, false)},
                         {"decoder", level(true, true)},
                         {"model", std::move(model)}});
  std::string text = root.dump(2);
  text += '\n';
  tensor::write_file_atomic(path, text.data(), text.size(), who_of("save_tokenizer_json").c_str());
}

// Note [BPE training ties]: as `tokenizers`' BpeTrainer with the ByteLevel alphabet. Words are the
// ByteLevel pre-tokens of every text, counted; the vocabulary starts with the special tokens (ids
// 0.. in the order given), then the 256 byte symbols in the order of their characters' code points
// (U+0021 '!' first, U+0143 last). Each step merges the adjacent pair with the highest count over
// all words (a word's pairs counted once per occurrence, times the word's count); a tie goes to
// the pair of smallest (left id, right id), the order of BpeTrainer's heap. A pair is merged
// left to right without overlap inside each word ("a a a" -> "aa a"). Training stops at vocabSize
// or when no pair is left. Deterministic; the result equals tokenizers' on the test corpus.
BpeTokenizer BpeTokenizer::train(const std::vector<std::string>& texts, int64_t vocabSize,
                                 const std::vector<std::string>& specialTokens) {
  const std::string who = who_of("train");
  const int64_t minimum = 256 + static_cast<int64_t>(specialTokens.size());
  if (vocabSize < minimum || vocabSize > std::numeric_limits<int32_t>::max())
    fail(who + ": expected vocabSize in [" + std::to_string(minimum) + " (256 bytes + special tokens), 2^31), got " +
         std::to_string(vocabSize));
  std::set<std::string> seen;
  for (const auto& s : specialTokens) {
    if (s.empty() || !seen.insert(s).second)
      fail(who + ": expected distinct non-empty special tokens, got \"" + s + "\"" + (s.empty() ? "" : " twice"));
  }
  BpeTokenizer t;
  t.add_prefix_space_ = false;
  std::vector<std::string> id_token;
  for (const auto& s : specialTokens) {
    t.added_.push_back({s, static_cast<int64_t>(id_token.size()), true});
    t.vocab_[s] = static_cast<int64_t>(id_token.size());
    id_token.push_back(s);
  }
  const ByteTable& table = bytes();
  std::vector<std::pair<uint32_t, int>> alphabet;
  for (int b = 0; b < 256; ++b) alphabet.emplace_back(code_point(table.byte_char[b], 0, table.byte_char[b].size()), b);
  std::sort(alphabet.begin(), alphabet.end());
  for (const auto& [cp, b] : alphabet) {
    t.vocab_[table.byte_char[b]] = static_cast<int64_t>(id_token.size());
    id_token.push_back(table.byte_char[b]);
  }
  // the pre-tokenizer (needs the regex and byte ids: a finish() on the alphabet alone)
  t.finish(who);

  std::map<std::string, int64_t> counted;  // ordered: the words' order is deterministic
  for (const auto& text : texts) {
    for (size_t i = 0, bad = 0; i < text.size();) {
      size_t len = utf8_at(text, i, bad);
      if (len == 0) fail(who + ": expected valid UTF-8 texts, got an invalid byte at offset " + std::to_string(i));
      i += len;
    }
    pcre2_match_data* match = pcre2_match_data_create_from_pattern(t.regex_->code, nullptr);
    auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    for (size_t pos = 0; pos < text.size();) {
      int rc = pcre2_match(t.regex_->code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, match, nullptr);
      size_t start = text.size(), end = text.size();
      if (rc >= 0) {
        start = pcre2_get_ovector_pointer(match)[0];
        end = pcre2_get_ovector_pointer(match)[1];
      }
      if (start > pos) ++counted[text.substr(pos, start - pos)];
      if (end > start) ++counted[text.substr(start, end - start)];
      pos = std::max(end, start + 1);
    }
    pcre2_match_data_free(match);
  }
  std::vector<std::vector<int64_t>> words;
  std::vector<int64_t> counts;
  for (const auto& [word, count] : counted) {
    std::vector<int64_t> symbols;
    for (unsigned char c : word) symbols.push_back(t.byte_ids_[c]);
    words.push_back(std::move(symbols));
    counts.push_back(count);
  }

  std::unordered_map<uint64_t, int64_t> pair_count;
  std::unordered_map<uint64_t, std::vector<size_t>> pair_words;
  std::set<std::pair<int64_t, uint64_t>> order;  // (-count, pair): the first is merged next
  auto adjust = [&](uint64_t key, int64_t delta) {
    int64_t& c = pair_count[key];
    if (c > 0) order.erase({-c, key});
    c += delta;
    if (c > 0) order.insert({-c, key});
  };
  for (size_t w = 0; w < words.size(); ++w) {
    for (size_t i = 0; i + 1 < words[w].size(); ++i) {
      uint64_t key = pair_key(words[w][i], words[w][i + 1]);
      adjust(key, counts[w]);
      pair_words[key].push_back(w);
    }
  }
  while (static_cast<int64_t>(id_token.size()) < vocabSize && !order.empty()) {
    uint64_t key = order.begin()->second;
    int64_t a = static_cast<int64_t>(key >> 32), b = static_cast<int64_t>(key & 0xFFFFFFFFu);
    std::string merged = id_token[a] + id_token[b];
    int64_t id;
    if (auto it = t.vocab_.find(merged); it != t.vocab_.end()) {
      id = it->second;
    } else {
      id = static_cast<int64_t>(id_token.size());
      t.vocab_[merged] = id;
      id_token.push_back(merged);
    }
    t.merges_.emplace_back(id_token[a], id_token[b]);
    std::vector<size_t> affected = std::move(pair_words[key]);
    pair_words.erase(key);
    std::sort(affected.begin(), affected.end());
    affected.erase(std::unique(affected.begin(), affected.end()), affected.end());
    for (size_t w : affected) {
      auto& s = words[w];
      for (size_t i = 0; i + 1 < s.size(); ++i) adjust(pair_key(s[i], s[i + 1]), -counts[w]);
      std::vector<int64_t> next;
      next.reserve(s.size());
      for (size_t i = 0; i < s.size(); ++i) {
        if (i + 1 < s.size() && s[i] == a && s[i + 1] == b) {
          next.push_back(id);
          ++i;
        } else {
          next.push_back(s[i]);
        }
      }
      s = std::move(next);
      for (size_t i = 0; i + 1 < s.size(); ++i) {
        uint64_t k = pair_key(s[i], s[i + 1]);
        adjust(k, counts[w]);
        if (k != key) pair_words[k].push_back(w);
      }
    }
    if (auto it = pair_count.find(key); it != pair_count.end() && it->second > 0) {
      order.erase({-it->second, key});  // cannot be left (every occurrence merged); kept safe
      it->second = 0;
    }
  }
  t.finish(who);
  return t;
}

}  // namespace text

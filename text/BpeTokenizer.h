// BpeTokenizer.h: GPT-2's byte-level BPE tokenizer, encoding and decoding as Hugging Face's
// `tokenizers` does (model BPE, pre-tokenizer and decoder ByteLevel, added tokens), read from
// and written to its tokenizer.json, or read from a vocab.json + merges.txt pair, and trained
// from texts as its BpeTrainer trains.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace text {

class BpeTokenizer {
 public:
  static constexpr std::string_view kTypeName = "text.BpeTokenizer";

  // A tokenizer.json as `tokenizers` saves it: model.type "BPE" (merges as "a b" strings or
  // [a, b] pairs), pre_tokenizer ByteLevel (alone or inside a Sequence), decoder ByteLevel or
  // null, normalizer null, added_tokens. Anything else is refused, naming the file and field.
  static BpeTokenizer from_tokenizer_json(const std::string& path);
  // GPT-2's vocab.json + merges.txt (the "#version" line skipped), ByteLevel without a prefix
  // space; each of `specialTokens` must be in the vocabulary and becomes an added special token.
  static BpeTokenizer from_vocab_merges(const std::string& vocabPath, const std::string& mergesPath,
                                        const std::vector<std::string>& specialTokens = {});
  // Byte-level BPE training (See Note [BPE training ties]): the 256 byte symbols and the
  // special tokens (ids 0.. in the order given) first, then merges until vocabSize.
  static BpeTokenizer train(const std::vector<std::string>& texts, int64_t vocabSize,
                            const std::vector<std::string>& specialTokens = {});

  // Ids of valid UTF-8 text (added tokens matched first, leftmost-longest; the rest split by
  // GPT-2's pattern, each piece's bytes merged by rank: See Note [BPE merge order]).
  std::vector<int64_t> encode(std::string_view utf8) const;
  // The text of ids, special tokens included; bytes that are not valid UTF-8 become U+FFFD
  // as Rust's String::from_utf8_lossy makes them. Throws naming an id outside the vocabulary.
  std::string decode(const std::vector<int64_t>& ids) const;

  // -1 when the token is not in the vocabulary (nor an added token).
  int64_t token_to_id(const std::string& token) const;
  const std::string& id_to_token(int64_t id) const;
  // One past the largest id (added tokens included).
  int64_t vocab_size() const { return static_cast<int64_t>(tokens_.size()); }
  const std::vector<std::pair<std::string, std::string>>& merges() const { return merges_; }

  // A tokenizer.json that `tokenizers` (and this class) loads; atomic.
  void save_tokenizer_json(const std::string& path) const;

  BpeTokenizer(BpeTokenizer&&) noexcept;
  BpeTokenizer& operator=(BpeTokenizer&&) noexcept;
  ~BpeTokenizer();

 private:
  struct Regex;
  struct Cache;
  struct AddedToken {
    std::string content;
    int64_t id;
    bool special;
  };
  BpeTokenizer();
  // Builds the tables; throws tensor::Error prefixed with `who`.
  void finish(const std::string& who);
  void encode_segment(std::string_view segment, std::vector<int64_t>& out) const;
  void encode_word(const std::string& word, std::vector<int64_t>& out) const;

  std::vector<std::string> tokens_;  // id -> token ("" for a hole)
  std::unordered_map<std::string, int64_t> vocab_;
  std::vector<std::pair<std::string, std::string>> merges_;
  std::unordered_map<uint64_t, std::pair<int64_t, int64_t>> ranks_;  // (a << 32 | b) -> (rank, merged id)
  std::vector<AddedToken> added_;
  int64_t byte_ids_[256] = {};  // byte -> the id of its symbol (See Note [Byte-level symbols])
  bool add_prefix_space_ = false;
  bool use_regex_ = true;
  bool ignore_merges_ = false;
  std::unique_ptr<Regex> regex_;
  std::unique_ptr<Cache> cache_;
};

}  // namespace text

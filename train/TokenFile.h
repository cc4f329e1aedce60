// TokenFile.h: a language model's training tokens, memory-mapped: the uint16 token ids
// (little-endian) of nanoGPT's train.bin / val.bin (raw, no header: np.memmap(dtype=uint16))
// or of llm.c's .bin files (a header of 256 int32: magic 20240520, version 1, the number of
// tokens, then the tokens). The file is mapped read-only, so a file larger than memory is
// fine: the pages a batch reads are the ones loaded. Errors are tensor::Error naming the
// class and the file: a missing or unreadable file, a header cut short, a wrong magic or
// version, a size that is not the header's token count (or, raw, not a whole number of
// uint16), and a file with fewer tokens than one example needs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tensor/Tensor.h"
#include "train/Data.h"

namespace nn {

class TokenFile {
 public:
  // Auto: llm.c's when the file starts with its magic number, raw otherwise.
  enum class Format { Auto, Raw, LlmC };
  static constexpr int32_t kLlmCMagic = 20240520;
  static constexpr int32_t kLlmCVersion = 1;  // uint16 tokens (llm.c's GPT-2 files)
  static constexpr int64_t kLlmCHeaderBytes = 256 * 4;

  explicit TokenFile(const std::string& path, Format format = Format::Auto);
  ~TokenFile();
  TokenFile(const TokenFile&) = delete;
  TokenFile& operator=(const TokenFile&) = delete;

  int64_t size() const { return size_; }  // tokens
  Format format() const { return format_; }
  const std::string& path() const { return path_; }
  // Token i (0 <= i < size()).
  uint16_t operator[](int64_t i) const;
  // Tokens [begin, begin + count) as Int64 [count], or into out[0, count).
  Tensor slice(int64_t begin, int64_t count) const;
  void read(int64_t begin, int64_t count, int64_t* out) const;

 private:
  std::string path_;
  Format format_ = Format::Raw;
  void* map_ = nullptr;  // the whole file
  size_t mapBytes_ = 0;
  const uint8_t* tokens_ = nullptr;  // little-endian uint16
  int64_t size_ = 0;
};

// Next-token examples from a token file: example i is the window starting at i * stride,
// batch() gives the inputs tokens[s, s + context) and the targets tokens[s + 1, s + context + 1),
// Int64 [B x context] each (nanoGPT's get_batch at fixed offsets; a shuffling DataLoader
// draws them in random order). stride 0: context (windows that do not overlap).
class TokenDataset : public Dataset {
 public:
  TokenDataset(std::shared_ptr<const TokenFile> tokens, int64_t context, int64_t stride = 0);
  int64_t size() const override { return n_; }
  std::vector<Tensor> batch(const std::vector<int64_t>& indices) const override;
  int64_t context() const { return context_; }
  const TokenFile& tokens() const { return *tokens_; }

 private:
  std::shared_ptr<const TokenFile> tokens_;
  int64_t context_, stride_, n_ = 0;
};

}  // namespace nn

// TokenFile.cpp: token files mapped with mmap (train/TokenFile.h).
#include "train/TokenFile.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace nn {

using tensor::Error;

namespace {
uint32_t le32(const uint8_t* p) {
  return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
}
uint16_t le16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
}  // namespace

TokenFile::TokenFile(const std::string& path, Format format) : path_(path) {
  const std::string who = "nn.TokenFile: " + path;
  int fd = -1;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) throw Error(who + ": cannot open it: " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw Error(who + ": cannot stat it: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    throw Error(who + ": expected a regular file, got " + (S_ISDIR(st.st_mode) ? "a directory" : "something else"));
  const auto bytes = static_cast<uint64_t>(st.st_size);
  const uint8_t* data = nullptr;
  if (bytes > 0) {
    void* map = ::mmap(nullptr, static_cast<size_t>(bytes), PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) throw Error(who + ": cannot map it: " + std::strerror(errno));
    map_ = map;
    mapBytes_ = static_cast<size_t>(bytes);
    data = static_cast<const uint8_t*>(map);
  }
  try {
    if (format == Format::Auto) {
      format = bytes >= 4 && static_cast<int32_t>(le32(data)) == kLlmCMagic ? Format::LlmC : Format::Raw;
    }
    format_ = format;
    if (format == Format::LlmC) {
      if (bytes < static_cast<uint64_t>(kLlmCHeaderBytes)) {
        throw Error(who + ": expected llm.c's header of 256 int32 (1024 bytes), got a file of " +
                    std::to_string(bytes) + " bytes (a truncated file)");
      }
      const auto magic = static_cast<int32_t>(le32(data)), version = static_cast<int32_t>(le32(data + 4));
      const auto count = static_cast<int32_t>(le32(data + 8));
      if (magic != kLlmCMagic) {
        throw Error(who + ": expected llm.c's magic number " + std::to_string(kLlmCMagic) + ", got " +
                    std::to_string(magic) + " (a raw uint16 file, nanoGPT's: Format::Raw)");
      }
      if (version != kLlmCVersion) {
        throw Error(who + ": expected llm.c's version " + std::to_string(kLlmCVersion) + " (uint16 tokens), got " +
                    std::to_string(version));
      }
      const uint64_t want = static_cast<uint64_t>(kLlmCHeaderBytes) + 2 * static_cast<uint64_t>(count < 0 ? 0 : count);
      if (count < 0 || want != bytes) {
        throw Error(who + ": expected " +
                    (count < 0 ? std::string("a token count >= 0") : std::to_string(want) + " bytes") +
                    " (the header's " + std::to_string(count) + " tokens of 2 bytes after 1024 header bytes), got " +
                    std::to_string(bytes) + " bytes" +
                    (count < 0      ? ""
                     : bytes < want ? " (a truncated file)"
                                    : " (bytes after the tokens)"));
      }
      tokens_ = data + kLlmCHeaderBytes;
      size_ = count;
    } else {
      if (bytes % 2 != 0) {
        throw Error(who + ": expected a whole number of uint16 tokens (an even size), got " + std::to_string(bytes) +
                    " bytes (a truncated file)");
      }
      tokens_ = data;
      size_ = static_cast<int64_t>(bytes / 2);
    }
  } catch (...) {
    if (map_) ::munmap(map_, mapBytes_);
    map_ = nullptr;
    throw;
  }
}

TokenFile::~TokenFile() {
  if (map_) ::munmap(map_, mapBytes_);
}

uint16_t TokenFile::operator[](int64_t i) const {
  if (i < 0 || i >= size_) {
    throw Error("nn.TokenFile: " + path_ + ": expected a token index in [0, " + std::to_string(size_) + "), got " +
                std::to_string(i));
  }
  return le16(tokens_ + 2 * i);
}

void TokenFile::read(int64_t begin, int64_t count, int64_t* out) const {
  if (begin < 0 || count < 0 || begin > size_ || count > size_ - begin) {
    throw Error("nn.TokenFile::read: " + path_ + ": expected tokens within [0, " + std::to_string(size_) + "), got " +
                std::to_string(count) + " from " + std::to_string(begin));
  }
  const uint8_t* p = tokens_ + 2 * begin;
  for (int64_t i = 0; i < count; ++i) out[i] = le16(p + 2 * i);
}

Tensor TokenFile::slice(int64_t begin, int64_t count) const {
  Tensor t = tensor::empty({count < 0 ? 0 : count}, tensor::DType::Int64);
  read(begin, count, t.data<int64_t>());
  return t;
}

TokenDataset::TokenDataset(std::shared_ptr<const TokenFile> tokens, int64_t context, int64_t stride)
    : tokens_(std::move(tokens)), context_(context), stride_(stride == 0 ? context : stride) {
  if (!tokens_) throw Error("nn.TokenDataset: expected a token file, got none");
  if (context <= 0 || stride < 0) {
    throw Error("nn.TokenDataset: " + tokens_->path() + ": expected context > 0 and stride >= 0, got context " +
                std::to_string(context) + " and stride " + std::to_string(stride));
  }
  const int64_t n = tokens_->size();
  if (n <= context) {
    throw Error("nn.TokenDataset: " + tokens_->path() + ": expected more than " + std::to_string(context) +
                " tokens (one example of context " + std::to_string(context) + " and its next token), got " +
                std::to_string(n));
  }
  n_ = (n - context - 1) / stride_ + 1;  // the last window's target ends at token n - 1
}

std::vector<Tensor> TokenDataset::batch(const std::vector<int64_t>& indices) const {
  const auto b = static_cast<int64_t>(indices.size());
  Tensor x = tensor::empty({b, context_}, tensor::DType::Int64), y = tensor::empty({b, context_}, tensor::DType::Int64);
  int64_t* px = x.data<int64_t>();
  int64_t* py = y.data<int64_t>();
  for (int64_t r = 0; r < b; ++r) {
    const int64_t i = indices[static_cast<size_t>(r)];
    if (i < 0 || i >= n_) {
      throw Error("nn.TokenDataset::batch: expected indices in [0, " + std::to_string(n_) + "), got " +
                  std::to_string(i));
    }
    // the target is the input shifted by one: read once, copy shifted
    tokens_->read(i * stride_, context_, px + r * context_);
    std::copy(px + r * context_ + 1, px + (r + 1) * context_, py + r * context_);
    tokens_->read(i * stride_ + context_, 1, py + (r + 1) * context_ - 1);
  }
  return {x, y};
}

}  // namespace nn

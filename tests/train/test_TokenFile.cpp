// test_TokenFile.cpp: memory-mapped token files (train/TokenFile.h): nanoGPT's raw uint16
// files and llm.c's (256-int32 header, magic 20240520, version 1), detected or named; windows
// of a context as next-token examples through a DataLoader; bad files (missing, truncated
// headers and data, wrong magic and version, odd sizes, too few tokens) are errors naming the
// class and the file.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tensor/Tensor.h"
#include "tests/support/TempDir.h"
#include "train/Data.h"
#include "train/TokenFile.h"

using namespace tensor;
namespace fs = std::filesystem;

namespace {

struct TempDir : testing::TempDir {
  TempDir() : testing::TempDir("cudnn_nn_test_tokens") {}
};

void le(std::vector<uint8_t>& b, uint32_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

// nanoGPT's layout (np.array(ids, dtype=np.uint16).tofile(path)).
std::vector<uint8_t> raw(const std::vector<uint16_t>& tokens) {
  std::vector<uint8_t> b;
  for (uint16_t t : tokens) le(b, t, 2);
  return b;
}

// llm.c's write_datafile: header[0] magic, [1] version, [2] the token count, 253 zeros.
std::vector<uint8_t> llmc(const std::vector<uint16_t>& tokens, int32_t magic = 20240520, int32_t version = 1,
                          int64_t count = -1) {
  std::vector<uint8_t> b;
  le(b, static_cast<uint32_t>(magic), 4);
  le(b, static_cast<uint32_t>(version), 4);
  le(b, static_cast<uint32_t>(count < 0 ? static_cast<int64_t>(tokens.size()) : count), 4);
  b.resize(1024, 0);
  const auto t = raw(tokens);
  b.insert(b.end(), t.begin(), t.end());
  return b;
}

void write(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

std::vector<uint16_t> iota(int n) {
  std::vector<uint16_t> out;
  for (int i = 0; i < n; ++i) out.push_back(static_cast<uint16_t>(i * 1000 % 65536));
  return out;
}

}  // namespace

TEST_CASE("TokenFile: nanoGPT's raw uint16 and llm.c's headed files, detected or named") {
  TempDir d;
  const std::vector<uint16_t> tokens = {0, 1, 50256, 65535, 42};
  write(d / "raw.bin", raw(tokens));
  write(d / "llmc.bin", llmc(tokens));
  for (const std::string name : {"raw.bin", "llmc.bin"}) {
    INFO(name);
    const nn::TokenFile f(d / name);
    CHECK(f.format() == (name == "raw.bin" ? nn::TokenFile::Format::Raw : nn::TokenFile::Format::LlmC));
    CHECK(f.size() == 5);
    CHECK(f[2] == 50256);
    CHECK(f[3] == 65535);
    const Tensor s = f.slice(1, 3);
    CHECK(s.dtype() == DType::Int64);
    CHECK(s.to_vector<double>() == std::vector<double>{1, 50256, 65535});
    CHECK_THROWS_WITH_AS(f[5], doctest::Contains("expected a token index in [0, 5), got 5"), Error);
    CHECK_THROWS_WITH_AS(f.slice(3, 3), doctest::Contains("expected tokens within [0, 5), got 3 from 3"), Error);
  }
  // the headed file read as raw: its header's bytes are tokens
  CHECK(nn::TokenFile(d / "llmc.bin", nn::TokenFile::Format::Raw).size() == 512 + 5);
  write(d / "empty.bin", {});
  CHECK(nn::TokenFile(d / "empty.bin").size() == 0);
}

TEST_CASE("TokenFile: bad files are errors naming the file") {
  TempDir d;
  auto fails = [&](const std::string& name, const std::string& message,
                   nn::TokenFile::Format format = nn::TokenFile::Format::Auto) {
    INFO(name);
    const std::string path = d / name;
    CHECK_THROWS_WITH_AS(nn::TokenFile(path, format), doctest::Contains(("nn.TokenFile: " + path + ": ").c_str()),
                         Error);
    CHECK_THROWS_WITH_AS(nn::TokenFile(path, format), doctest::Contains(message.c_str()), Error);
  };
  fails("missing.bin", "cannot open it: No such file or directory");
  fs::create_directories(d / "dir.bin");
  fails("dir.bin", "expected a regular file, got a directory");
  write(d / "odd.bin", {1, 2, 3});
  fails("odd.bin", "expected a whole number of uint16 tokens (an even size), got 3 bytes (a truncated file)");
  std::vector<uint8_t> header = llmc({});
  header.resize(100);
  write(d / "header.bin", header);
  fails("header.bin", "expected llm.c's header of 256 int32 (1024 bytes), got a file of 100 bytes (a truncated file)");
  write(d / "magic.bin", llmc({1, 2}, 20240521));
  fails("magic.bin", "expected llm.c's magic number 20240520, got 20240521", nn::TokenFile::Format::LlmC);
  write(d / "version.bin", llmc({1, 2}, 20240520, 7));
  fails("version.bin", "expected llm.c's version 1 (uint16 tokens), got 7");
  write(d / "short.bin", llmc({1, 2, 3}, 20240520, 1, 4));
  fails("short.bin",
        "expected 1032 bytes (the header's 4 tokens of 2 bytes after 1024 header bytes), got 1030 bytes "
        "(a truncated file)");
  write(d / "long.bin", llmc({1, 2, 3}, 20240520, 1, 2));
  fails("long.bin", "got 1030 bytes (bytes after the tokens)");
  write(d / "negative.bin", llmc({1, 2, 3}, 20240520, 1, 0xffffffff));
  fails("negative.bin", "expected a token count >= 0");
}

TEST_CASE("TokenDataset: next-token windows, through a shuffling DataLoader") {
  TempDir d;
  const auto tokens = iota(23);
  write(d / "train.bin", llmc(tokens));
  auto file = std::make_shared<const nn::TokenFile>(d / "train.bin");
  const nn::TokenDataset windows(file, 5);  // 23 tokens: windows at 0, 5, 10, 15 (17 needs token 22: 17 + 5 = 22)
  CHECK(windows.size() == 4);
  const auto b = windows.batch({3, 0});
  REQUIRE(b.size() == 2);
  CHECK(b[0].sizes() == Shape{2, 5});
  std::vector<double> x, y;
  for (int64_t s : {15, 0}) {
    for (int64_t k = 0; k < 5; ++k) {
      x.push_back(tokens[static_cast<size_t>(s + k)]);
      y.push_back(tokens[static_cast<size_t>(s + k + 1)]);
    }
  }
  CHECK(b[0].to_vector<double>() == x);
  CHECK(b[1].to_vector<double>() == y);
  CHECK(nn::TokenDataset(file, 5, 1).size() == 18);  // every offset: 0 .. 17
  CHECK_THROWS_WITH_AS(windows.batch({4}),
                       doctest::Contains("nn.TokenDataset::batch: expected indices in [0, 4), got 4"), Error);

  nn::DataLoader loader(std::make_shared<nn::TokenDataset>(file, 4, 2), {.batchSize = 3, .shuffle = true, .seed = 1});
  std::vector<Tensor> batch;
  int64_t seen = 0;
  while (loader.next(batch)) {
    for (int64_t r = 0; r < batch[0].size(0); ++r) {
      CHECK(batch[1].get({r, 0}) == batch[0].get({r, 1}));  // shifted by one
    }
    seen += batch[0].size(0);
  }
  CHECK(seen == (23 - 4 - 1) / 2 + 1);

  CHECK_THROWS_WITH_AS(nn::TokenDataset(file, 23),
                       doctest::Contains(("nn.TokenDataset: " + d / "train.bin" +
                                          ": expected more than 23 tokens (one example of context 23 and its next "
                                          "token), got 23")
                                             .c_str()),
                       Error);
  CHECK_THROWS_WITH_AS(nn::TokenDataset(file, 0), doctest::Contains("expected context > 0 and stride >= 0"), Error);
}

// test_Idx.cpp: IDX files (train/Idx.h): every type code, plain and gzip-compressed; MNIST's
// directory layout as a dataset; bad files (missing, truncated, corrupt gzip, bad magic, sizes
// that disagree, labels out of range) are errors naming the function and the file; and the
// Fashion-MNIST files Debian installs, where they are.
#include <doctest/doctest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tensor/Tensor.h"
#include "tests/support/TempDir.h"
#include "train/Idx.h"

using namespace tensor;
namespace fs = std::filesystem;

namespace {

struct TempDir : testing::TempDir {
  TempDir() : testing::TempDir("cudnn_nn_test_idx") {}
};

void write(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

void write_gz(const std::string& path, const std::vector<uint8_t>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f);
  REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) == static_cast<int>(bytes.size()));
  REQUIRE(gzclose(f) == Z_OK);
}

std::vector<uint8_t> read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// An IDX header: type code, dimensions.
std::vector<uint8_t> header(uint8_t type, const std::vector<uint32_t>& dims) {
  std::vector<uint8_t> b = {0, 0, type, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims) {
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<uint8_t>(d >> s));
  }
  return b;
}

void be(std::vector<uint8_t>& b, uint64_t v, int bytes) {
  for (int s = 8 * (bytes - 1); s >= 0; s -= 8) b.push_back(static_cast<uint8_t>(v >> s));
}

// MNIST's four files of n images of h x w: image i's pixels are i + pixel index, label i % 10.
void mnist(const TempDir& d, const std::string& split, uint32_t n, uint32_t h, uint32_t w, bool gz) {
  std::vector<uint8_t> images = header(0x08, {n, h, w}), labels = header(0x08, {n});
  for (uint32_t i = 0; i < n; ++i) {
    for (uint32_t p = 0; p < h * w; ++p) images.push_back(static_cast<uint8_t>(i + p));
    labels.push_back(static_cast<uint8_t>(i % 10));
  }
  const std::string img = d / (split + "-images-idx3-ubyte"), lab = d / (split + "-labels-idx1-ubyte");
  if (gz) {
    write_gz(img + ".gz", images);
    write_gz(lab + ".gz", labels);
  } else {
    write(img, images);
    write(lab, labels);
  }
}

}  // namespace

TEST_CASE("load_idx: every type code, big-endian, plain and gzip") {
  TempDir d;
  std::vector<uint8_t> u8 = header(0x08, {2, 3});
  for (int i = 0; i < 6; ++i) u8.push_back(static_cast<uint8_t>(250 + i));
  write(d / "u8", u8);
  write_gz(d / "u8.gz", u8);
  for (const std::string name : {"u8", "u8.gz"}) {
    INFO(name);
    const Tensor t = nn::load_idx(d / name);
    CHECK(t.dtype() == DType::UInt8);
    CHECK(t.sizes() == Shape{2, 3});
    CHECK(t.to(DType::Float64).to_vector<double>() == std::vector<double>{250, 251, 252, 253, 254, 255});
  }
  std::vector<uint8_t> i8 = header(0x09, {3}), i16 = header(0x0B, {2}), i32 = header(0x0C, {2}),
                       f32 = header(0x0D, {2}), f64 = header(0x0E, {1, 2});
  for (uint8_t v : {uint8_t(0xff), uint8_t(0x80), uint8_t(0x7f)}) i8.push_back(v);
  be(i16, 0xfffe, 2);  // -2
  be(i16, 0x0102, 2);
  be(i32, 0xffffff00, 4);  // -256
  be(i32, 70000, 4);
  float fv[2] = {1.5f, -0.25f};
  double dv[2] = {3.0e100, -1.0 / 3};
  for (float v : fv) {
    uint32_t u = 0;
    std::memcpy(&u, &v, 4);
    be(f32, u, 4);
  }
  for (double v : dv) {
    uint64_t u = 0;
    std::memcpy(&u, &v, 8);
    be(f64, u, 8);
  }
  write(d / "i8", i8);
  write(d / "i16", i16);
  write(d / "i32", i32);
  write(d / "f32", f32);
  write(d / "f64", f64);
  CHECK(nn::load_idx(d / "i8").dtype() == DType::Int64);
  CHECK(nn::load_idx(d / "i8").to_vector<double>() == std::vector<double>{-1, -128, 127});
  CHECK(nn::load_idx(d / "i16").to_vector<double>() == std::vector<double>{-2, 258});
  CHECK(nn::load_idx(d / "i32").to_vector<double>() == std::vector<double>{-256, 70000});
  CHECK(nn::load_idx(d / "f32").dtype() == DType::Float32);
  CHECK(nn::load_idx(d / "f32").to_vector<double>() == std::vector<double>{1.5, -0.25});
  const Tensor t64 = nn::load_idx(d / "f64");
  CHECK(t64.dtype() == DType::Float64);
  CHECK(t64.sizes() == Shape{1, 2});
  CHECK(t64.to_vector<double>() == std::vector<double>{dv[0], dv[1]});
}

TEST_CASE("load_idx: bad files are errors naming the file and what is wrong") {
  TempDir d;
  auto fails = [&](const std::string& name, const std::string& message) {
    INFO(name);
    const std::string path = d / name;
    CHECK_THROWS_WITH_AS(nn::load_idx(path), doctest::Contains("nn::load_idx: "), Error);
    CHECK_THROWS_WITH_AS(nn::load_idx(path), doctest::Contains(path.c_str()), Error);
    CHECK_THROWS_WITH_AS(nn::load_idx(path), doctest::Contains(message.c_str()), Error);
  };
  fails("missing", "cannot open");
  fs::create_directories(d / "dir");
  fails("dir", "is a directory");
  write(d / "empty", {});
  fails("empty", "got 0 bytes (a truncated file)");
  write(d / "magic", {0x08, 0x03, 0, 0, 0, 0, 0, 0});
  fails("magic", "expected an IDX magic number");
  write(d / "type", {0, 0, 0x07, 1, 0, 0, 0, 0});
  fails("type", "got 0x00000701");
  write(d / "nodims", {0, 0, 0x08, 0});
  fails("nodims", "expected at least one dimension");
  write(d / "header", {0, 0, 0x08, 3, 0, 0, 0, 2});
  fails("header", "expected 3 dimensions (16 header bytes), got 8 bytes (a truncated file)");
  std::vector<uint8_t> short_data = header(0x0B, {4});  // 4 int16: 8 bytes of data, 7 there
  short_data.resize(short_data.size() + 7);
  write(d / "short", short_data);
  fails("short", "expected 16 bytes for [4] int16 elements, got 15 (a truncated file)");
  std::vector<uint8_t> long_data = header(0x08, {2});
  long_data.resize(long_data.size() + 3);
  write(d / "long", long_data);
  fails("long", "expected 10 bytes for [2] unsigned byte elements, got 11 (bytes after the data)");
  write(d / "huge", header(0x0E, {0xffffffff, 0xffffffff, 0xffffffff}));
  fails("huge", "a size that fits in memory");

  // gzip: cut short, corrupt
  std::vector<uint8_t> images = header(0x08, {100, 28, 28});
  images.resize(images.size() + 100 * 784, 7);
  write_gz(d / "whole.gz", images);
  std::vector<uint8_t> gz = read(d / "whole.gz");
  REQUIRE(gz.size() > 40);
  write(d / "cut.gz", std::vector<uint8_t>(gz.begin(), gz.begin() + static_cast<long>(gz.size() / 2)));
  fails("cut.gz", "expected a complete gzip stream, got one cut short (a truncated file)");
  std::vector<uint8_t> bad = gz;
  for (size_t i = 12; i < 20; ++i) bad[i] ^= 0xff;
  write(d / "corrupt.gz", bad);
  fails("corrupt.gz", "a corrupt one");
  CHECK(nn::load_idx(d / "whole.gz").sizes() == Shape{100, 28, 28});
}

TEST_CASE("load_mnist: images scaled to [0, 1] as [N x 1 x H x W], Int64 labels; gz preferred; bad sets") {
  TempDir d;
  mnist(d, "train", 5, 4, 3, /*gz=*/true);
  mnist(d, "t10k", 3, 4, 3, /*gz=*/false);
  const auto train = nn::load_mnist(d.path.string(), "train");
  REQUIRE(train->tensors().size() == 2);
  const Tensor& x = train->tensors()[0];
  const Tensor& y = train->tensors()[1];
  CHECK(x.dtype() == DType::Float32);
  CHECK(x.sizes() == Shape{5, 1, 4, 3});
  CHECK(y.dtype() == DType::Int64);
  CHECK(y.to_vector<double>() == std::vector<double>{0, 1, 2, 3, 4});
  CHECK(x.get({2, 0, 1, 1}) == doctest::Approx((2 + 4) / 255.0));
  CHECK(nn::load_mnist(d.path.string(), "t10k")->size() == 3);

  const std::string dir = d.path.string();
  CHECK_THROWS_WITH_AS(nn::load_mnist(dir, "val"),
                       doctest::Contains(("nn::load_mnist: expected " + dir + "/val-images-idx3-ubyte.gz or " + dir +
                                          "/val-images-idx3-ubyte, got neither (not found)")
                                             .c_str()),
                       Error);
  CHECK_THROWS_WITH_AS(nn::load_mnist(dir, "train", 4),
                       doctest::Contains(("nn::load_mnist: " + dir +
                                          "/train-labels-idx1-ubyte.gz: expected labels in [0, 4), got 4 at position 4")
                                             .c_str()),
                       Error);
  CHECK(nn::load_mnist(dir, "train", 0)->size() == 5);  // unchecked
  // labels of another count
  std::vector<uint8_t> labels = header(0x08, {2});
  labels.push_back(0);
  labels.push_back(1);
  write(d / "t10k-labels-idx1-ubyte", labels);
  CHECK_THROWS_WITH_AS(nn::load_mnist(dir, "t10k"),
                       doctest::Contains(("nn::load_mnist: " + dir +
                                          "/t10k-labels-idx1-ubyte: expected unsigned bytes [3] (a label per image")
                                             .c_str()),
                       Error);
  // images that are not unsigned bytes [N x H x W]
  write(d / "t10k-images-idx3-ubyte", [] {
    std::vector<uint8_t> b = header(0x08, {3});
    b.resize(b.size() + 3);
    return b;
  }());
  CHECK_THROWS_WITH_AS(
      nn::load_mnist(dir, "t10k"),
      doctest::Contains(
          ("nn::load_mnist: " + dir + "/t10k-images-idx3-ubyte: expected unsigned bytes [N x H x W]").c_str()),
      Error);
}

TEST_CASE("load_mnist: Debian's Fashion-MNIST, where it is installed") {
  if (!fs::exists(std::string(nn::kFashionMnistDir) + "/t10k-images-idx3-ubyte.gz") &&
      !fs::exists(std::string(nn::kFashionMnistDir) + "/t10k-images-idx3-ubyte")) {
    MESSAGE("no Fashion-MNIST in ", nn::kFashionMnistDir, " (apt-get install dataset-fashion-mnist): skipped");
    return;
  }
  const auto test = nn::load_mnist(nn::kFashionMnistDir, "t10k");
  CHECK(test->size() == 10000);
  CHECK(test->tensors()[0].sizes() == Shape{10000, 1, 28, 28});
  const double mean = test->tensors()[0].mean().item();
  CHECK(mean > 0.2);
  CHECK(mean < 0.4);  // Fashion-MNIST's pixel mean is about 0.286
}

// FashionMnist.cpp: the idx format: big-endian magic (0x801 labels, 0x803 images), counts
// and sizes, then bytes.
#include "samples/FashionMnist.h"

#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <vector>

namespace samples {

namespace {

std::vector<uint8_t> read_maybe_gzip(const std::string& dir, const std::string& name) {
  namespace fs = std::filesystem;
  std::string path = dir + "/" + name + ".gz";
  if (!fs::exists(path)) path = dir + "/" + name;
  if (!fs::exists(path)) {
    throw std::runtime_error("Fashion-MNIST: " + dir + "/" + name + "(.gz) not found. Install the Debian package "
                             "(apt-get install dataset-fashion-mnist) or pass --data DIR with the four idx files");
  }
  gzFile f = gzopen(path.c_str(), "rb");  // reads plain files too
  if (!f) throw std::runtime_error("Fashion-MNIST: cannot open " + path);
  std::vector<uint8_t> out;
  uint8_t buf[1 << 16];
  int n = 0;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.insert(out.end(), buf, buf + n);
  const bool failed = n < 0;
  gzclose(f);
  if (failed) throw std::runtime_error("Fashion-MNIST: " + path + " is not a readable gzip/idx file");
  return out;
}

uint32_t be32(const std::vector<uint8_t>& b, size_t at, const std::string& what) {
  if (b.size() < at + 4) throw std::runtime_error("Fashion-MNIST: " + what + " is truncated");
  return (uint32_t(b[at]) << 24) | (uint32_t(b[at + 1]) << 16) | (uint32_t(b[at + 2]) << 8) | b[at + 3];
}

}  // namespace

Dataset load_fashion_mnist(const std::string& dir, const std::string& split) {
  const std::string images_name = split + "-images-idx3-ubyte", labels_name = split + "-labels-idx1-ubyte";
  const auto images = read_maybe_gzip(dir, images_name);
  const auto labels = read_maybe_gzip(dir, labels_name);
  if (be32(images, 0, images_name) != 0x803 || be32(labels, 0, labels_name) != 0x801) {
    throw std::runtime_error("Fashion-MNIST: " + dir + " does not hold idx files (bad magic numbers)");
  }
  const uint32_t n = be32(images, 4, images_name), rows = be32(images, 8, images_name), cols = be32(images, 12, images_name);
  if (be32(labels, 4, labels_name) != n || rows != 28 || cols != 28 || images.size() != 16 + size_t(n) * 784 ||
      labels.size() != 8 + size_t(n)) {
    throw std::runtime_error("Fashion-MNIST: " + split + " files have inconsistent sizes");
  }
  Dataset d;
  d.images = tensor::empty({int64_t(n), 1, 28, 28});
  d.labels = tensor::empty({int64_t(n)}, tensor::DType::Int64);
  float* img = d.images.data<float>();
  int64_t* lab = d.labels.data<int64_t>();
  for (size_t i = 0; i < size_t(n) * 784; ++i) img[i] = images[16 + i] / 255.0f;
  for (size_t i = 0; i < n; ++i) {
    if (labels[8 + i] > 9) throw std::runtime_error("Fashion-MNIST: label out of range in " + labels_name);
    lab[i] = labels[8 + i];
  }
  return d;
}

}  // namespace samples

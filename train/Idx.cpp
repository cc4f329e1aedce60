// Idx.cpp: IDX files (train/Idx.h), read whole and inflated in memory when gzip-compressed.
#include "train/Idx.h"

#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <vector>

#include "tensor/FileIO.h"

namespace nn {

using tensor::DType;
using tensor::Error;

namespace {

// The bytes of a gzip stream (one member or several, as gzip concatenates them).
std::vector<uint8_t> gunzip(const std::vector<uint8_t>& in, const std::string& who) {
  std::vector<uint8_t> out(std::max<size_t>(in.size() * 4, size_t{1} << 16));
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) throw Error(who + ": cannot start zlib's inflate");
  size_t used = 0, consumed = 0;
  int rc = Z_OK;
  for (;;) {
    if (used == out.size()) out.resize(out.size() * 2);
    const auto avail_in = static_cast<uInt>(std::min<size_t>(in.size() - consumed, std::numeric_limits<uInt>::max()));
    const auto avail_out = static_cast<uInt>(std::min<size_t>(out.size() - used, std::numeric_limits<uInt>::max()));
    z.next_in = const_cast<Bytef*>(in.data() + consumed);
    z.avail_in = avail_in;
    z.next_out = out.data() + used;
    z.avail_out = avail_out;
    rc = inflate(&z, Z_NO_FLUSH);
    consumed += avail_in - z.avail_in;
    used += avail_out - z.avail_out;
    if (rc == Z_STREAM_END) {
      if (consumed == in.size()) break;
      inflateReset(&z);  // the next member
    } else if (rc == Z_OK || rc == Z_BUF_ERROR) {
      if (consumed == in.size() && used < out.size()) break;  // all read, room left: the stream is cut short
    } else {
      break;  // corrupt
    }
  }
  const std::string msg = z.msg ? z.msg : "";
  inflateEnd(&z);
  if (rc == Z_OK || rc == Z_BUF_ERROR) {
    throw Error(who + ": expected a complete gzip stream, got one cut short (a truncated file)");
  }
  if (rc != Z_STREAM_END) {
    throw Error(who + ": expected a gzip stream, got a corrupt one (" +
                (msg.empty() ? "zlib error " + std::to_string(rc) : msg) + ")");
  }
  out.resize(used);
  return out;
}

uint64_t be(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | p[i];
  return v;
}

struct IdxType {
  int bytes;
  DType dtype;
  const char* name;
};

bool idx_type(uint8_t code, IdxType& t) {
  switch (code) {
    case 0x08:
      t = {1, DType::UInt8, "unsigned byte"};
      return true;
    case 0x09:
      t = {1, DType::Int64, "signed byte"};
      return true;
    case 0x0B:
      t = {2, DType::Int64, "int16"};
      return true;
    case 0x0C:
      t = {4, DType::Int64, "int32"};
      return true;
    case 0x0D:
      t = {4, DType::Float32, "float32"};
      return true;
    case 0x0E:
      t = {8, DType::Float64, "float64"};
      return true;
    default:
      return false;
  }
}

std::string hex(uint64_t v, int digits) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%0*llx", digits, static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

Tensor load_idx(const std::string& path) {
  const std::string who = "nn::load_idx: " + path;
  std::vector<uint8_t> bytes = tensor::read_file(path, "nn::load_idx");
  if (bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b) bytes = gunzip(bytes, who);
  if (bytes.size() < 4) {
    throw Error(who + ": expected an IDX file (a 4-byte magic number, then dimensions), got " +
                std::to_string(bytes.size()) + " bytes (a truncated file)");
  }
  IdxType type{};
  if (bytes[0] != 0 || bytes[1] != 0 || !idx_type(bytes[2], type)) {
    throw Error(who + ": expected an IDX magic number (0x00 0x00, a type code 0x08, 0x09, 0x0B, 0x0C, 0x0D or 0x0E, " +
                "the number of dimensions), got " + hex(be(bytes.data(), 4), 8));
  }
  const int ndim = bytes[3];
  if (ndim == 0) throw Error(who + ": expected at least one dimension, got 0");
  const size_t header = 4 + 4 * static_cast<size_t>(ndim);
  if (bytes.size() < header) {
    throw Error(who + ": expected " + std::to_string(ndim) + " dimensions (" + std::to_string(header) +
                " header bytes), got " + std::to_string(bytes.size()) + " bytes (a truncated file)");
  }
  tensor::Shape shape;
  uint64_t count = 1;
  bool overflow = false;
  for (int d = 0; d < ndim; ++d) {
    const uint64_t n = be(bytes.data() + 4 + 4 * d, 4);
    shape.push_back(static_cast<int64_t>(n));
    if (n != 0 && count > (uint64_t{1} << 48) / n) overflow = true;
    count *= n;
  }
  const uint64_t want = header + count * static_cast<uint64_t>(type.bytes);
  if (overflow || want != bytes.size()) {
    std::string dims;
    for (int64_t n : shape) dims += (dims.empty() ? "" : " x ") + std::to_string(n);
    throw Error(who + ": expected " +
                (overflow ? std::string("a size that fits in memory") : std::to_string(want) + " bytes") + " for [" +
                dims + "] " + type.name + " elements, got " + std::to_string(bytes.size()) +
                (overflow              ? ""
                 : bytes.size() < want ? " (a truncated file)"
                                       : " (bytes after the data)"));
  }
  Tensor t = tensor::empty(shape, type.dtype);
  const uint8_t* p = bytes.data() + header;
  const auto n = static_cast<size_t>(count);
  switch (bytes[2]) {
    case 0x08:
      std::memcpy(t.data<uint8_t>(), p, n);
      break;
    case 0x09:
      for (size_t i = 0; i < n; ++i) t.data<int64_t>()[i] = static_cast<int8_t>(p[i]);
      break;
    case 0x0B:
      for (size_t i = 0; i < n; ++i) t.data<int64_t>()[i] = static_cast<int16_t>(be(p + 2 * i, 2));
      break;
    case 0x0C:
      for (size_t i = 0; i < n; ++i) t.data<int64_t>()[i] = static_cast<int32_t>(be(p + 4 * i, 4));
      break;
    case 0x0D:
      for (size_t i = 0; i < n; ++i) {
        const auto u = static_cast<uint32_t>(be(p + 4 * i, 4));
        std::memcpy(t.data<float>() + i, &u, 4);
      }
      break;
    case 0x0E:
      for (size_t i = 0; i < n; ++i) {
        const uint64_t u = be(p + 8 * i, 8);
        std::memcpy(t.data<double>() + i, &u, 8);
      }
      break;
  }
  return t;
}

std::shared_ptr<TensorDataset> load_mnist(const std::string& dir, const std::string& split, int64_t classes) {
  const std::string who = "nn::load_mnist: ";
  auto file = [&](const std::string& name) {
    const std::string plain = dir + "/" + name, gz = plain + ".gz";
    std::error_code ec;
    if (std::filesystem::exists(gz, ec)) return gz;
    if (std::filesystem::exists(plain, ec)) return plain;
    throw Error(who + "expected " + gz + " or " + plain + ", got neither (not found)");
  };
  const std::string images_path = file(split + "-images-idx3-ubyte"), labels_path = file(split + "-labels-idx1-ubyte");
  const Tensor images = load_idx(images_path), labels = load_idx(labels_path);
  if (images.dtype() != DType::UInt8 || images.dim() != 3) {
    throw Error(who + images_path + ": expected unsigned bytes [N x H x W], got " + images.description());
  }
  if (labels.dtype() != DType::UInt8 || labels.dim() != 1 || labels.size(0) != images.size(0)) {
    throw Error(who + labels_path + ": expected unsigned bytes [" + std::to_string(images.size(0)) +
                "] (a label per image of " + images_path + "), got " + labels.description());
  }
  const int64_t n = images.size(0);
  Tensor x = tensor::empty({n, 1, images.size(1), images.size(2)});
  Tensor y = tensor::empty({n}, DType::Int64);
  const uint8_t* src = images.data<uint8_t>();
  float* dst = x.data<float>();
  for (int64_t i = 0; i < images.numel(); ++i) dst[i] = static_cast<float>(src[i]) / 255.0f;
  const uint8_t* l = labels.data<uint8_t>();
  int64_t* out = y.data<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    if (classes > 0 && l[i] >= classes) {
      throw Error(who + labels_path + ": expected labels in [0, " + std::to_string(classes) + "), got " +
                  std::to_string(l[i]) + " at position " + std::to_string(i));
    }
    out[i] = l[i];
  }
  return std::make_shared<TensorDataset>(std::vector<Tensor>{x, y});
}

}  // namespace nn

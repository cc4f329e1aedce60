// Npy.cpp: see Note [Untrusted npy] in Npy.h. The header is a Python dict literal,
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
// read by a small scanner of exactly that grammar (numpy writes nothing else).
#include "tensor/Npy.h"

#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string_view>

#include "tensor/FileIO.h"

namespace tensor {

static_assert(std::endian::native == std::endian::little, "npy reading assumes a little-endian host");

namespace {

constexpr int kMaxRank = 32;

struct Descr {
  DType dtype;
  int bytes;           // in the file
  bool is_signed;      // integers widened to int64
  bool widen = false;  // integer read into int64
};

Descr parse_descr(std::string_view d, const std::string& what) {
  TENSOR_CHECK(d.size() >= 3, what, ": unsupported dtype '", std::string(d), "'");
  const char order = d[0];
  const std::string_view kind = d.substr(1);
  const bool single = kind == "u1" || kind == "i1" || kind == "b1";
  TENSOR_CHECK(order == '<' || order == '|' || (order == '=' && single), what, ": unsupported byte order in dtype '",
               std::string(d), "' (only little-endian data is read)");
  if (kind == "f2") return {DType::Float16, 2, true};
  if (kind == "f4") return {DType::Float32, 4, true};
  if (kind == "f8") return {DType::Float64, 8, true};
  if (kind == "i8") return {DType::Int64, 8, true};
  if (kind == "u1" || kind == "b1") return {DType::UInt8, 1, false};
  if (kind == "i1") return {DType::Int64, 1, true, true};
  if (kind == "i2") return {DType::Int64, 2, true, true};
  if (kind == "i4") return {DType::Int64, 4, true, true};
  if (kind == "u2") return {DType::Int64, 2, false, true};
  if (kind == "u4") return {DType::Int64, 4, false, true};
  throw Error(what + ": unsupported dtype '" + std::string(d) +
              "' (supported: f2, f4, f8, i1, i2, i4, i8, u1, u2, u4, b1)");
}

// The scanner of the header dict.
struct Scanner {
  std::string_view s;
  size_t i = 0;
  const std::string& what;
  void skip() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t')) ++i;
  }
  bool eat(char c) {
    skip();
    if (i < s.size() && s[i] == c) {
      ++i;
      return true;
    }
    return false;
  }
  void expect(char c) { TENSOR_CHECK(eat(c), what, ": malformed npy header: expected '", c, "' at byte ", i); }
  std::string_view quoted() {
    skip();
    TENSOR_CHECK(i < s.size() && (s[i] == '\'' || s[i] == '"'), what,
                 ": malformed npy header: expected a string at byte ", i);
    const char q = s[i++];
    const size_t end = s.find(q, i);
    TENSOR_CHECK(end != std::string_view::npos, what, ": malformed npy header: unterminated string");
    const std::string_view out = s.substr(i, end - i);
    i = end + 1;
    return out;
  }
  bool boolean() {
    skip();
    if (s.substr(i, 4) == "True") {
      i += 4;
      return true;
    }
    TENSOR_CHECK(s.substr(i, 5) == "False", what, ": malformed npy header: expected True or False at byte ", i);
    i += 5;
    return false;
  }
  int64_t integer() {
    skip();
    TENSOR_CHECK(i < s.size() && s[i] >= '0' && s[i] <= '9', what,
                 ": malformed npy header: expected a dimension at byte ", i);
    int64_t v = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      TENSOR_CHECK(v <= (std::numeric_limits<int64_t>::max() - 9) / 10, what, ": npy shape dimension too large");
      v = v * 10 + (s[i++] - '0');
    }
    if (i < s.size() && s[i] == 'L') ++i;  // Python 2's longs
    return v;
  }
};

uint64_t read_le(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int k = bytes - 1; k >= 0; --k) v = (v << 8) | p[k];
  return v;
}

}  // namespace

Tensor parse_npy(const uint8_t* data, size_t size, const std::string& what) {
  static const uint8_t magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  TENSOR_CHECK(size >= 10 && std::memcmp(data, magic, 6) == 0, what, ": not an npy file (no \\x93NUMPY magic)");
  const int major = data[6];
  TENSOR_CHECK(major >= 1 && major <= 3, what, ": unsupported npy version ", major, ".", int(data[7]));
  const size_t lenBytes = major == 1 ? 2 : 4;
  TENSOR_CHECK(size >= 8 + lenBytes, what, ": truncated npy header");
  const uint64_t headerLen = read_le(data + 8, static_cast<int>(lenBytes));
  const size_t start = 8 + lenBytes;
  TENSOR_CHECK(headerLen <= size - start, what, ": truncated: the header says ", headerLen, " bytes but only ",
               size - start, " follow");
  Scanner sc{std::string_view(reinterpret_cast<const char*>(data + start), headerLen), 0, what};
  std::string descr;
  bool fortran = false, haveDescr = false, haveOrder = false, haveShape = false;
  std::vector<int64_t> shape;
  sc.expect('{');
  while (!sc.eat('}')) {
    const std::string_view key = sc.quoted();
    sc.expect(':');
    if (key == "descr") {
      descr = std::string(sc.quoted());
      haveDescr = true;
    } else if (key == "fortran_order") {
      fortran = sc.boolean();
      haveOrder = true;
    } else if (key == "shape") {
      sc.expect('(');
      while (!sc.eat(')')) {
        TENSOR_CHECK(shape.size() < kMaxRank, what, ": npy shape of more than ", kMaxRank, " dimensions");
        shape.push_back(sc.integer());
        if (!sc.eat(',')) {
          sc.expect(')');
          break;
        }
      }
      haveShape = true;
    } else {
      throw Error(what + ": malformed npy header: unexpected key '" + std::string(key) + "'");
    }
    if (!sc.eat(',')) {
      sc.expect('}');
      break;
    }
  }
  TENSOR_CHECK(haveDescr && haveOrder && haveShape, what,
               ": malformed npy header: expected 'descr', 'fortran_order' and 'shape'");
  const Descr d = parse_descr(descr, what);
  uint64_t count = 1;
  for (int64_t n : shape) {
    TENSOR_CHECK(n == 0 || count <= std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(n) / 8, what,
                 ": npy shape too large");
    count *= static_cast<uint64_t>(n);
  }
  const uint64_t bytes = count * static_cast<uint64_t>(d.bytes), have = size - start - headerLen;
  TENSOR_CHECK(bytes == have, what, ": expected ", bytes, " data bytes for shape ", shape_str(shape), " of '", descr,
               "', got ", have, have < bytes ? " (truncated)" : "");
  const uint8_t* payload = data + start + headerLen;
  // Fortran order: the reversed shape row-major, then transposed back
  Shape stored = shape;
  if (fortran) std::reverse(stored.begin(), stored.end());
  Tensor t = empty(stored, d.dtype);
  if (d.widen) {
    int64_t* out = t.data<int64_t>();
    for (uint64_t k = 0; k < count; ++k) {
      const uint64_t raw = read_le(payload + k * d.bytes, d.bytes);
      const int shift = 64 - 8 * d.bytes;
      out[k] = d.is_signed ? static_cast<int64_t>(raw << shift) >> shift : static_cast<int64_t>(raw);
    }
  } else if (bytes > 0) {
    std::memcpy(t.raw_data(), payload, bytes);
  }
  if (fortran && shape.size() > 1) {
    std::vector<int64_t> order(shape.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = static_cast<int64_t>(order.size() - 1 - k);
    t = t.permute(order).contiguous();
  }
  return t;
}

Tensor load_npy(const std::string& path) {
  const std::vector<uint8_t> bytes = read_file(path, "tensor::load_npy");
  return parse_npy(bytes.data(), bytes.size(), path);
}

namespace {
// zlib's crc32 takes a uInt length: feed it in pieces that fit.
uint64_t crc32_of(const uint8_t* data, uint64_t size) {
  uLong crc = ::crc32(0L, Z_NULL, 0);
  constexpr uint64_t kPiece = uint64_t{1} << 30;
  for (uint64_t done = 0; done < size; done += kPiece) {
    crc = ::crc32(crc, data + done, static_cast<uInt>(std::min(kPiece, size - done)));
  }
  return crc;
}
std::string hex32(uint64_t v) {
  char s[11];
  std::snprintf(s, sizeof s, "0x%08llx", static_cast<unsigned long long>(v));
  return s;
}
}  // namespace

std::map<std::string, Tensor> parse_npz(const uint8_t* data, size_t size, const std::string& what) {
  // the end-of-central-directory record: the last 22 bytes, or before a comment of <= 65535
  constexpr uint32_t kEnd = 0x06054b50, kCentral = 0x02014b50, kLocal = 0x04034b50;
  TENSOR_CHECK(size >= 22, what, ": not an npz (zip) file: ", size, " bytes");
  size_t eocd = size;
  for (size_t back = 22; back <= size && back <= 22 + 65535; ++back) {
    if (read_le(data + size - back, 4) == kEnd) {
      eocd = size - back;
      break;
    }
  }
  TENSOR_CHECK(eocd < size, what, ": not an npz (zip) file: no end-of-central-directory record");
  const uint64_t entries = read_le(data + eocd + 10, 2), dirSize = read_le(data + eocd + 12, 4),
                 dirOffset = read_le(data + eocd + 16, 4);
  TENSOR_CHECK(entries != 0xFFFF && dirOffset != 0xFFFFFFFF, what, ": zip64 archives are not supported");
  TENSOR_CHECK(dirOffset <= eocd && dirSize <= eocd - dirOffset, what, ": truncated or malformed zip directory");
  std::map<std::string, Tensor> out;
  size_t p = dirOffset;
  const size_t dirEnd = dirOffset + dirSize;
  for (uint64_t e = 0; e < entries; ++e) {
    TENSOR_CHECK(p + 46 <= dirEnd && read_le(data + p, 4) == kCentral, what, ": malformed zip directory entry ", e);
    const uint64_t method = read_le(data + p + 10, 2), crc = read_le(data + p + 16, 4);
    uint64_t compressed = read_le(data + p + 20, 4), uncompressed = read_le(data + p + 24, 4);
    const uint64_t nameLen = read_le(data + p + 28, 2), extraLen = read_le(data + p + 30, 2),
                   commentLen = read_le(data + p + 32, 2);
    uint64_t local = read_le(data + p + 42, 4);
    TENSOR_CHECK(p + 46 + nameLen + extraLen + commentLen <= dirEnd, what, ": malformed zip directory entry ", e);
    const std::string name(reinterpret_cast<const char*>(data + p + 46), nameLen);
    // zip64 sizes and offset (numpy writes them for large arrays): in the extra field, in this order
    const uint8_t* extra = data + p + 46 + nameLen;
    for (size_t x = 0; x + 4 <= extraLen;) {
      const uint64_t id = read_le(extra + x, 2), len = read_le(extra + x + 2, 2);
      TENSOR_CHECK(x + 4 + len <= extraLen, what, ": malformed zip extra field in '", name, "'");
      if (id == 1) {
        size_t q = x + 4;
        for (uint64_t* field : {&uncompressed, &compressed, &local}) {
          if (*field == 0xFFFFFFFF) {
            TENSOR_CHECK(q + 8 <= x + 4 + len, what, ": malformed zip64 field in '", name, "'");
            *field = read_le(extra + q, 8);
            q += 8;
          }
        }
      }
      x += 4 + len;
    }
    p += 46 + nameLen + extraLen + commentLen;
    TENSOR_CHECK(method == 0, what, ": '", name,
                 "' is compressed (np.savez_compressed); only stored entries (np.savez) are read");
    TENSOR_CHECK(compressed == uncompressed, what, ": malformed zip entry '", name, "'");
    TENSOR_CHECK(local <= size && size - local >= 30 && read_le(data + local, 4) == kLocal, what,
                 ": malformed zip local header of '", name, "'");
    const uint64_t begin = local + 30 + read_le(data + local + 26, 2) + read_le(data + local + 28, 2);
    TENSOR_CHECK(begin <= size && compressed <= size - begin, what, ": truncated: '", name, "' needs ", compressed,
                 " bytes at ", begin, ", the file has ", size);
    std::string key = name;
    if (key.size() > 4 && key.ends_with(".npy")) key.resize(key.size() - 4);
    TENSOR_CHECK(!out.count(key), what, ": array '", key, "' twice");
    // numpy (zipfile) refuses an entry whose data does not match its CRC-32; so do we
    const uint64_t actual = crc32_of(data + begin, compressed);
    TENSOR_CHECK(actual == crc, what, ": '", name, "' is corrupt: its CRC-32 is ", hex32(actual), ", the archive says ",
                 hex32(crc));
    out[key] = parse_npy(data + begin, compressed, what + ":" + name);
  }
  return out;
}

std::map<std::string, Tensor> load_npz(const std::string& path) {
  const std::vector<uint8_t> bytes = read_file(path, "tensor::load_npz");
  return parse_npz(bytes.data(), bytes.size(), path);
}

}  // namespace tensor

// test_Npy.cpp: .npy / .npz files written by NumPy (scripts/make_npy_test_data.py) read back with
// their values, dtypes and shapes (Fortran order, widened integers, bool, 0-d); and the
// untrusted-input checks (Note [Untrusted npy] in tensor/Npy.h): truncations at every length, a
// header claiming a huge shape, unsupported dtypes, compressed archives.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tensor/FileIO.h"
#include "tensor/Npy.h"

using namespace tensor;

namespace {
const std::string dir = std::string(CUDNN_NN_TEST_DATA) + "/npy/";

std::vector<uint8_t> npy_bytes(const std::string& header, size_t dataBytes) {
  std::string text = "\x93NUMPY";
  text += {'\x01', '\x00', static_cast<char>(header.size() & 0xff), static_cast<char>(header.size() >> 8)};
  text += header;
  text.append(dataBytes, '\0');
  return {text.begin(), text.end()};
}
}  // namespace

TEST_CASE("npy files from NumPy: values, dtypes, shapes, Fortran order") {
  const Tensor a = load_npy(dir + "f32_3x4.npy");
  CHECK(a.dtype() == DType::Float32);
  CHECK(a.sizes() == Shape{3, 4});
  CHECK(a.get({2, 1}) == 9 / 4.0);
  const Tensor f = load_npy(dir + "f64_fortran_3x4.npy");
  CHECK(f.dtype() == DType::Float64);
  CHECK(f.sizes() == Shape{3, 4});
  CHECK(f.is_contiguous());
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j) CHECK(f.get({i, j}) == a.get({i, j}));
  const Tensor h = load_npy(dir + "f16_5.npy");
  CHECK(h.dtype() == DType::Float16);
  CHECK(h.to_vector<double>() == std::vector<double>{-2, -1, 0, 1, 2});
  const Tensor i = load_npy(dir + "i32_2x3.npy");
  CHECK(i.dtype() == DType::Int64);  // widened
  CHECK(i.to_vector<double>() == std::vector<double>{-3, -2, -1, 0, 1, 2});
  CHECK(load_npy(dir + "bool_4.npy").to_vector<double>() == std::vector<double>{1, 0, 1, 1});
  const Tensor s = load_npy(dir + "scalar.npy");
  CHECK(s.dim() == 0);
  CHECK(s.item() == 2.5);
}

TEST_CASE("npz archives from np.savez") {
  const auto m = load_npz(dir + "linear.npz");
  REQUIRE(m.size() == 2);
  CHECK(m.at("weight").sizes() == Shape{2, 3});
  CHECK(m.at("weight").get({1, 2}) == 6 / 4.0);
  CHECK(m.at("bias").to_vector<double>() == std::vector<double>{1, -1});
  CHECK_THROWS_WITH_AS(load_npz(dir + "compressed.npz"),
                       doctest::Contains("compressed.npz: 'x.npy' is compressed (np.savez_compressed)"), Error);
}

// numpy's zipfile refuses an entry whose bytes do not match its CRC-32 (issue 45 item 6)
TEST_CASE("npz: an entry whose data does not match its CRC-32 is refused, naming the entry") {
  std::vector<uint8_t> bytes = read_file(dir + "linear.npz", "test");
  const auto good = parse_npz(bytes.data(), bytes.size(), "linear.npz");
  REQUIRE(!good.empty());
  // the last byte of the first entry's data (weight.npy: an element of the array) sits just
  // before the second entry's local header, "PK\3\4" (np.savez writes no data descriptors)
  const std::string text(bytes.begin(), bytes.end());
  const size_t second = text.find(std::string("PK\3\4", 4), 4);
  REQUIRE(second != std::string::npos);
  const std::string name = "weight.npy";
  REQUIRE(text.compare(30, name.size(), name) == 0);
  bytes[second - 1] ^= 0x01;
  CHECK_THROWS_WITH_AS(parse_npz(bytes.data(), bytes.size(), "linear.npz"),
                       doctest::Contains(("linear.npz: '" + name + "' is corrupt: its CRC-32 is 0x").c_str()), Error);
}

TEST_CASE("untrusted npy and npz: truncations, huge shapes, bad headers, unsupported dtypes") {
  CHECK_THROWS_WITH_AS(load_npy(dir + "big_endian.npy"), doctest::Contains("unsupported byte order in dtype '>f4'"),
                       Error);
  CHECK_THROWS_WITH_AS(load_npy(dir + "missing.npy"), doctest::Contains("missing.npy"), Error);
  for (const char* file : {"f32_3x4.npy", "linear.npz"}) {
    const std::vector<uint8_t> bytes = read_file(dir + file, "test");
    const bool npz = std::string(file).ends_with(".npz");
    for (size_t n = 0; n < bytes.size(); ++n) {  // every truncation is an error, never a crash
      INFO(file, " truncated to ", n, " bytes");
      if (npz) {
        CHECK_THROWS_AS(parse_npz(bytes.data(), n, "cut"), Error);
      } else {
        CHECK_THROWS_AS(parse_npy(bytes.data(), n, "cut"), Error);
      }
    }
  }
  auto bad = [](const std::string& header, size_t data) {
    const auto b = npy_bytes(header, data);
    return parse_npy(b.data(), b.size(), "x.npy");
  };
  CHECK(bad("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 8).numel() == 2);
  CHECK_THROWS_WITH_AS(bad("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }", 8),
                       doctest::Contains("x.npy: npy shape too large"), Error);
  CHECK_THROWS_WITH_AS(bad("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000, 1000000), }", 8),
                       doctest::Contains("x.npy: expected 4000000000000 data bytes for shape [1000000 x 1000000]"),
                       Error);
  CHECK_THROWS_WITH_AS(bad("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 8),
                       doctest::Contains("expected 12 data bytes for shape [3] of '<f4', got 8 (truncated)"), Error);
  CHECK_THROWS_WITH_AS(bad("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", 8),
                       doctest::Contains("unsupported dtype '|O'"), Error);
  CHECK_THROWS_WITH_AS(bad("{'descr': '<f4', 'shape': (2,), }", 8),
                       doctest::Contains("expected 'descr', 'fortran_order' and 'shape'"), Error);
  CHECK_THROWS_WITH_AS(bad("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", 8),
                       doctest::Contains("expected a dimension"), Error);
  CHECK_THROWS_WITH_AS(bad("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,), }", 8),
                       doctest::Contains("expected True or False"), Error);
}

// test_Safetensors.cpp: a file written by the reference implementation, round trips of
// every dtype, and malformed input (every truncation, corrupt headers) that must end in
// an Error, never a crash or an out-of-bounds read (run under ASan in CI).
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>

#include "tensor/Safetensors.h"

using namespace tensor;

#ifndef CUDNN_NN_TEST_DATA
#error "tests/meson.build defines CUDNN_NN_TEST_DATA"
#endif

namespace {
std::vector<uint8_t> with_header(const std::string& json, size_t payload) {
  std::vector<uint8_t> bytes(8 + json.size() + payload, 0);
  const uint64_t n = json.size();
  std::memcpy(bytes.data(), &n, 8);
  std::memcpy(bytes.data() + 8, json.data(), json.size());
  return bytes;
}
std::string parse_error(const std::vector<uint8_t>& bytes) {
  try {
    parse_safetensors(bytes.data(), bytes.size(), "test.safetensors");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("reads a file written by the reference safetensors package") {
  const SafetensorsFile f = load_safetensors(std::string(CUDNN_NN_TEST_DATA) + "/reference.safetensors");
  CHECK(f.metadata.at("format") == "pt");
  CHECK(f.tensors.size() == 8);
  const Tensor& f32 = f.tensors.at("f32");
  CHECK(f32.dtype() == DType::Float32);
  CHECK(f32.sizes() == Shape{2, 3});
  CHECK(f32.to_vector<float>() == std::vector<float>{0, 0.5f, 1, 1.5f, 2, 2.5f});
  CHECK(f.tensors.at("f64").to_vector<double>() == std::vector<double>{-1.5, -0.5, 0.5, 1.5});
  CHECK(f.tensors.at("f16").to_vector<float>() == std::vector<float>{1, -2.5f, 65504});
  CHECK(f.tensors.at("bf16").to_vector<float>() == std::vector<float>{1, -0.5f, 3.140625f, 256});
  CHECK(f.tensors.at("i64").to_vector<int64_t>() == std::vector<int64_t>{-1, 0, int64_t(1) << 40});
  CHECK(f.tensors.at("u8").to_vector<uint8_t>() == std::vector<uint8_t>{0, 1, 2, 254, 255});
  CHECK(f.tensors.at("scalar").dim() == 0);
  CHECK(f.tensors.at("scalar").item() == 7.25);
  CHECK(f.tensors.at("empty").sizes() == Shape{0, 3});
}

TEST_CASE("round trip of every dtype, strided tensors and metadata") {
  Generator g(1);
  std::map<std::string, Tensor> in;
  in["a.weight"] = uniform({3, 4}, -1, 1, g);
  in["b"] = uniform({5}, -1, 1, g, DType::Float64);
  in["h"] = uniform({2, 2}, -1, 1, g).to(DType::Float16);
  in["bf"] = uniform({3}, -1, 1, g).to(DType::BFloat16);
  in["idx"] = arange(4, DType::Int64);
  in["mask"] = arange(3, DType::UInt8);
  in["strided"] = uniform({4, 3}, -1, 1, g).t();
  const auto path = std::filesystem::temp_directory_path() / "cudnn_nn_roundtrip.safetensors";
  save_safetensors(path.string(), in, {{"epoch", "3"}});
  const SafetensorsFile out = load_safetensors(path.string());
  std::filesystem::remove(path);
  CHECK(out.metadata.at("epoch") == "3");
  REQUIRE(out.tensors.size() == in.size());
  for (const auto& [name, t] : in) {
    const Tensor& r = out.tensors.at(name);
    CHECK(r.dtype() == t.dtype());
    CHECK(r.sizes() == t.sizes());
    CHECK(max_abs_diff(r, t) == 0);
  }
  // The header pads to 8 bytes so the data is aligned, as the reference writer does.
  const auto bytes = serialize_safetensors(in);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  CHECK(n % 8 == 0);
}

TEST_CASE("every truncation of a valid file is an error, not a crash") {
  std::map<std::string, Tensor> in{{"w", arange(6).view({2, 3})}, {"b", arange(2, DType::Float64)}};
  const auto bytes = serialize_safetensors(in);
  for (size_t len = 0; len < bytes.size(); ++len) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(len));
    CHECK_MESSAGE(!parse_error(cut).empty(), "prefix of length " << len << " parsed");
  }
  CHECK(parse_error(bytes).empty());
}

TEST_CASE("malformed headers are reported with the file and the problem") {
  CHECK(parse_error({1, 2, 3}).find("test.safetensors: not a safetensors file") == 0);
  std::vector<uint8_t> huge(16, 0xff);
  CHECK(parse_error(huge).find("exceeds") != std::string::npos);
  CHECK(parse_error(with_header("{\"a\":", 0)).find("malformed JSON") != std::string::npos);
  CHECK(parse_error(with_header("[1,2]", 0)).find("not a JSON object") != std::string::npos);
  CHECK(parse_error(with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4))
            .find("run past the end") != std::string::npos);
  CHECK(parse_error(with_header(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8))
            .find("needs 12 bytes but data_offsets span 8") != std::string::npos);
  CHECK(parse_error(with_header(R"({"a":{"dtype":"I32","shape":[2],"data_offsets":[0,8]}})", 8))
            .find("unsupported dtype 'I32'") != std::string::npos);
  CHECK(parse_error(with_header(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8))
            .find("negative size") != std::string::npos);
  CHECK(parse_error(with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8))
            .find("bad data_offsets") != std::string::npos);
  CHECK(parse_error(with_header(R"({"a":{"dtype":"F32","shape":[2]}})", 8)).find("missing key 'data_offsets'") !=
        std::string::npos);
  CHECK(parse_error(with_header(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,16],"data_offsets":[0,8]}})", 8))
            .find("overflow") != std::string::npos);
  CHECK(parse_error(with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12))
            .find("overlap") != std::string::npos);
  CHECK_THROWS_WITH_AS(load_safetensors("/nonexistent/x.safetensors"),
                       doctest::Contains("tensor::load_safetensors: cannot open '/nonexistent/x.safetensors'"), Error);
}

namespace {
std::string file_error(const std::string& name) {
  try {
    load_safetensors(std::string(CUDNN_NN_TEST_DATA) + "/fuzz/" + name + ".safetensors");
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

// The files come from scripts/make_fuzz_seeds.py and seed the fuzz target too.
TEST_CASE("hostile files: sizes that overflow, hidden overlaps (tests/data/fuzz)") {
  // [2^31 x 2^31] float32 is 2^64 bytes: it used to wrap to 0 and match data_offsets [0, 0]
  CHECK(file_error("shape_overflow").find("[2147483648 x 2147483648] for float32: its size in bytes overflows int64") !=
        std::string::npos);
  CHECK(file_error("bytes_overflow").find("[4611686018427387904] for float64: its size in bytes overflows") !=
        std::string::npos);
  // an empty tensor whose other sizes overflow (its strides would) is refused too
  CHECK(file_error("zero_size_huge_dims").find("[0 x 4611686018427387904 x 4611686018427387904] for float32") !=
        std::string::npos);
  CHECK(file_error("negative_size").find("negative size") != std::string::npos);
  // a [0, 16) and c [8, 16) overlap; the empty b at 8 sorts between them and used to hide it
  CHECK(file_error("overlap_hidden_by_empty").find("tensors 'a' [0, 16) and 'c' [8, 16) overlap") !=
        std::string::npos);
  // b lies inside a; c after both: only all-ranges checking (not neighbours) sees a/b
  CHECK(file_error("overlap_nested").find("tensors 'a' [0, 16) and 'b' [4, 8) overlap") != std::string::npos);
  CHECK(file_error("offsets_past_end").find("run past the end") != std::string::npos);
  const SafetensorsFile ok = load_safetensors(std::string(CUDNN_NN_TEST_DATA) + "/fuzz/valid.safetensors");
  CHECK(ok.tensors.at("weight").to_vector<float>() == std::vector<float>{1, 2, 3, 4});
  CHECK(ok.tensors.at("empty").sizes() == Shape{0, 3});
  CHECK(ok.metadata.at("format") == "cudnn-nn model");
}

TEST_CASE("many tensors pointing at one range are refused before any is allocated") {
  // 2000 names over the same 4 KiB: without the overlap check first, 8 MB would be copied
  std::string json = "{";
  for (int i = 0; i < 2000; ++i) {
    // appended piece by piece: `"literal" + std::string` trips GCC 12's -Wrestrict false positive
    json += i ? ",\"t" : "\"t";
    json += std::to_string(i);
    json += R"(":{"dtype":"F32","shape":[1024],"data_offsets":[0,4096]})";
  }
  json += "}";
  CHECK(parse_error(with_header(json, 4096)).find("overlap") != std::string::npos);
}

TEST_CASE("a directory is named as one") {
  CHECK_THROWS_WITH_AS(load_safetensors(CUDNN_NN_TEST_DATA),
                       doctest::Contains(("tensor::load_safetensors: '" + std::string(CUDNN_NN_TEST_DATA) +
                                          "' is a directory, expected a file")
                                             .c_str()),
                       Error);
}

TEST_CASE("random corruption of a header never crashes") {
  std::map<std::string, Tensor> in{{"layer.weight", arange(12).view({3, 4})}};
  const auto good = serialize_safetensors(in);
  Generator g(2024);
  int rejected = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    auto bytes = good;
    const int flips = 1 + static_cast<int>(g.randint(4));
    for (int k = 0; k < flips; ++k) {
      bytes[static_cast<size_t>(g.randint(static_cast<int64_t>(bytes.size() - 48)))] =
          static_cast<uint8_t>(g.randint(256));
    }
    try {
      parse_safetensors(bytes.data(), bytes.size(), "fuzz");
    } catch (const Error&) {
      ++rejected;
    }
  }
  CHECK(rejected > 100);  // most corruptions of the header are caught
}

// test_Sizes.cpp: every size that decides an allocation is checked (Note [Checked sizes] in
// tensor/DType.cpp): shapes whose element or byte counts overflow int64, negative sizes,
// views and expands into such shapes, and the allocation limit nn::load_model builds under.
// Also integer sums that overflow: they wrap (two's complement), without undefined behaviour.
#include <doctest/doctest.h>

#include "tests/support/ErrorText.h"

#include <cstdint>
#include <functional>
#include <limits>
#include <string>

#include "tensor/Tensor.h"

using namespace tensor;
using testing::error_of;
using testing::has;

namespace {
constexpr int64_t k31 = int64_t{1} << 31, k32 = int64_t{1} << 32, k40 = int64_t{1} << 40, k62 = int64_t{1} << 62;
}  // namespace

TEST_CASE("creation refuses shapes whose sizes overflow, naming the shape and dtype") {
  // each of these used to allocate a small buffer (or none) and then write past it
  CHECK(error_of([] { (void)zeros({k62}); }) ==
        "tensor::empty: invalid shape [4611686018427387904] for float32: its size in bytes overflows int64");
  CHECK(has(error_of([] { (void)uniform({k31, k31}, -1, 1); }),
            "tensor::empty: invalid shape [2147483648 x 2147483648] for float32"));
  CHECK(has(error_of([] { (void)zeros({k32, k32}); }), "[4294967296 x 4294967296] for float32"));
  CHECK(has(error_of([] { (void)empty({k40, k40}, DType::UInt8); }), "[1099511627776 x 1099511627776] for uint8"));
  CHECK(has(error_of([] { (void)full({3, k62}, 1.0, DType::Float16); }), "for float16: its size in bytes overflows"));
  CHECK(has(error_of([] { (void)normal({k62, 2}, 0, 1, default_generator(), DType::Float64); }), "for float64"));
  // an empty tensor may not hide huge sizes either: its strides would overflow
  CHECK(has(error_of([] { (void)empty({0, k62, k62}); }), "[0 x 4611686018427387904 x 4611686018427387904]"));
  CHECK(error_of([] { (void)empty({2, -3}); }) == "tensor::empty: invalid shape [2 x -3] for float32: it has a negative size");
  // the largest shapes that fit are still described correctly (not allocated here)
  CHECK(shape_numel({0, k31, k31}) == 0);
  CHECK(shape_numel({k31, k31}) == k62);
  CHECK(shape_nbytes({k31, k31}, DType::UInt8) == static_cast<size_t>(k62));
  CHECK_THROWS_AS(shape_nbytes({k31, k31, 2}, DType::Float32), Error);
  CHECK(has(error_of([] { (void)shape_numel({k32, k32}); }), "its element count overflows int64"));
  // empty tensors with modest sizes still work
  CHECK(zeros({0, 5}).numel() == 0);
  CHECK(empty({}).numel() == 1);
}

TEST_CASE("views, reshapes and expands into overflowing or negative shapes are refused") {
  const Tensor one = ones({1});
  CHECK(has(error_of([&] { (void)one.expand({k40, k40}); }), "[1099511627776 x 1099511627776]"));
  CHECK(has(error_of([&] { (void)one.expand({-5}); }), "negative size"));
  // the errors name the operation and both shapes, not only the view's constructor
  CHECK(error_of([&] {
          (void)ones({2, 1}).expand({2, k62});
        }) ==
        "Tensor::expand: cannot expand [2 x 1] to [2 x 4611686018427387904]: invalid shape [2 x 4611686018427387904] "
        "for float32: its size in bytes overflows int64");
  // broadcasting two views that fit into a result that does not: the operation is named
  const Tensor column = ones({1, 1}).expand({k32, 1}), row = ones({1, 1}).expand({1, k32});
  CHECK(error_of([&] { (void)column.add(row); }) ==
        "Tensor::add: the result of [4294967296 x 1] and [1 x 4294967296]: invalid shape [4294967296 x 4294967296] "
        "for float32: its size in bytes overflows int64");
  const Tensor none = zeros({0});
  CHECK(has(error_of([&] { (void)none.view({0, k62, k62}); }), "overflows int64"));
  CHECK(has(error_of([&] { (void)none.reshape({k62, k62, 0}); }), "overflows int64"));
  CHECK(has(error_of([&] { (void)none.reshape({k62, k62, 0, -1}); }), "overflows int64"));
  const Tensor t = zeros({4, 6});
  CHECK(has(error_of([&] { (void)t.view({k32, k32, -1}); }), "cannot view [4 x 6]"));
  // start + length would overflow: refused as out of bounds, not wrapped into bounds
  CHECK(has(error_of([&] { (void)t.narrow(1, 3, std::numeric_limits<int64_t>::max()); }), "out of bounds"));
  Tensor r = zeros({2});
  CHECK(has(error_of([&] { r.resize_({k62, 4}); }), "Tensor::resize_: invalid shape [4611686018427387904 x 4]"));
  CHECK(r.sizes() == Shape{2});  // unchanged
  CHECK(has(error_of([] { (void)arange(0, 1e300); }), "too many"));
}

TEST_CASE("Storage refuses sizes its alignment rounding would wrap") {
  CHECK_THROWS_WITH_AS(Storage(std::numeric_limits<size_t>::max() - 10, Device::cpu()),
                       doctest::Contains("cannot allocate"), Error);
}

TEST_CASE("AllocationLimit caps what Storage allocates on this thread") {
  {
    AllocationLimit limit(1000, "test budget");
    (void)empty({100}, DType::Float32);  // 400 bytes
    CHECK(limit.used() == 400);
    CHECK_THROWS_WITH_AS((void)empty({200}, DType::Float32),
                         "tensor::Storage: allocating 800 bytes on cpu would exceed 1000 bytes (400 used): test budget",
                         AllocationLimitExceeded);
    {
      AllocationLimit nothing(0, "inner");
      CHECK_THROWS_AS((void)empty({1}), AllocationLimitExceeded);
      (void)empty({0});  // nothing to allocate
    }
    (void)empty({100}, DType::Float32);  // the outer limit counts again
    CHECK(limit.used() == 800);
  }
  CHECK(empty({1000}).numel() == 1000);  // no limit outside the scopes
}

TEST_CASE("integer sums wrap around instead of overflowing (no UB)") {
  constexpr int64_t max = std::numeric_limits<int64_t>::max(), min = std::numeric_limits<int64_t>::min();
  const Tensor t = from_vector<int64_t>({max, 1, 2});
  CHECK(t.sum().to_vector<int64_t>() == std::vector<int64_t>{min + 2});
  // exact for values a double cannot hold (the sum used to go through double)
  const Tensor big = from_vector<int64_t>({(int64_t{1} << 53) + 1, 1});
  CHECK(big.sum().to_vector<int64_t>() == std::vector<int64_t>{(int64_t{1} << 53) + 2});
  const Tensor m = from_vector<int64_t>({max, max, -1, min}, {2, 2});
  CHECK(m.sum(0).to_vector<int64_t>() == std::vector<int64_t>{max - 1, -1});
  CHECK(m.sum(1).to_vector<int64_t>() == std::vector<int64_t>{-2, max});
  // uint8 sums are taken in int64, exactly
  CHECK(full({1000}, 255, DType::UInt8).sum().to_vector<int64_t>() == std::vector<int64_t>{255000});
}

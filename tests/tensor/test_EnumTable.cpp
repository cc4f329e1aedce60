// test_EnumTable.cpp: tensor::lookup (tensor/EnumTable.h), the table behind the translations
// of dtypes and modes into the libraries' enumerations: a key's row, nullopt for a key the table
// lacks, the first row of a repeated key, and evaluation at compile time.
#include <doctest/doctest.h>

#include <utility>

#include "tensor/DType.h"
#include "tensor/EnumTable.h"

using tensor::DType;

namespace {
enum class Lib { F32, F64, Half };
constexpr std::pair<DType, Lib> kTypes[] = {
    {DType::Float32, Lib::F32}, {DType::Float64, Lib::F64}, {DType::Float16, Lib::Half}, {DType::Float16, Lib::F32}};
}  // namespace

TEST_CASE("EnumTable: lookup finds each key's row and nothing for a key the table lacks") {
  CHECK(tensor::lookup(kTypes, DType::Float32) == Lib::F32);
  CHECK(tensor::lookup(kTypes, DType::Float64) == Lib::F64);
  CHECK(tensor::lookup(kTypes, DType::Float16) == Lib::Half);  // the first row of a repeated key
  CHECK_FALSE(tensor::lookup(kTypes, DType::BFloat16).has_value());
  CHECK_FALSE(tensor::lookup(kTypes, DType::Int64).has_value());
}

TEST_CASE("EnumTable: lookup is a constant expression") {
  static_assert(*tensor::lookup(kTypes, DType::Float64) == Lib::F64);
  static_assert(!tensor::lookup(kTypes, DType::UInt8));
}

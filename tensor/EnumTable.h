// EnumTable.h: a translation from one enumeration to another (a DType to a library's data
// type, an activation to cuDNN's mode, a reduction to NCCL's) written as a table, one row per
// pair, instead of a switch of two-line cases: lookup(table, key) is the value of key's row,
// or nullopt where the table has none, which the caller turns into its own error. The table
// also answers "is this supported" (has_value), so the two questions cannot drift apart.
#pragma once

#include <cstddef>
#include <optional>
#include <utility>

namespace tensor {

// A table: `constexpr std::pair<DType, cudaDataType_t> kTypes[] = {{DType::Float32, CUDA_R_32F}, ...};`
// (`const` where a value is not a constant expression, as MPI's datatypes). The first row of
// a key wins; a handful of rows is searched in order.
template <class Key, class Value, size_t N>
constexpr std::optional<Value> lookup(const std::pair<Key, Value> (&table)[N], Key key) {
  for (const auto& [k, v] : table) {
    if (k == key) return v;
  }
  return std::nullopt;
}

}  // namespace tensor

// Csv.h: a CSV file of numbers as a tensor (or a dataset of features and an integer label):
// one row per line, the same number of fields on every line, an optional header line of
// column names; fields may be quoted (RFC 4180), blank lines and CR LF line ends are fine.
// Numbers are read as C's strtod in the "C" locale reads them (nan and inf too), whatever the
// program's locale. Errors are tensor::Error naming the function, the file and the line (and
// the column): a field that is not a number, an empty field, a row of another length, a file
// with no rows.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tensor/Tensor.h"
#include "train/Data.h"

namespace nn {

struct CsvOptions {
  char delimiter = ',';
  // Auto: the first line is a header when one of its fields is not a number.
  enum class Header { Auto, Yes, No } header = Header::Auto;
  tensor::DType dtype = tensor::DType::Float32;  // Float32 or Float64
};

struct CsvTable {
  std::vector<std::string> columns;  // the header's names; empty without a header
  Tensor values;                     // [rows x columns] of options.dtype
};

CsvTable load_csv(const std::string& path, const CsvOptions& options = {});

// A TensorDataset of the features (every column but `labelColumn`, [N x columns - 1] of
// options.dtype) and the labels (Int64 [N], integers >= 0); labelColumn < 0 counts from the
// end (-1: the last column).
std::shared_ptr<TensorDataset> load_csv_dataset(const std::string& path, int64_t labelColumn = -1,
                                                const CsvOptions& options = {});

}  // namespace nn

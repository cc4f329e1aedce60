// Csv.cpp: CSV files of numbers (train/Csv.h).
#include "train/Csv.h"

#include <charconv>
#include <cmath>

#include "tensor/FileIO.h"
#include "tensor/Format.h"

namespace nn {

using tensor::DType;
using tensor::Error;

namespace {

struct Record {
  int64_t line = 0;  // where it starts, from 1
  std::vector<std::string> fields;
};

// RFC 4180 records: quoted fields may hold the delimiter, quotes ("") and line breaks; blank
// lines are skipped.
std::vector<Record> records(const std::string& text, char delim, const std::string& who) {
  std::vector<Record> out;
  Record r;
  std::string field;
  bool quoted = false, any = false;  // any: the record has a field or a delimiter so far
  int64_t line = 1;
  r.line = 1;
  auto end_record = [&] {
    if (any || !field.empty()) {
      r.fields.push_back(std::move(field));
      out.push_back(std::move(r));
    }
    r = Record{};
    field.clear();
    any = false;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        if (c == '\n') ++line;
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
      any = true;
    } else if (c == delim) {
      r.fields.push_back(std::move(field));
      field.clear();
      any = true;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      end_record();
      r.line = ++line;
    } else {
      field += c;
    }
  }
  if (quoted) throw Error(who + ":" + std::to_string(r.line) + ": expected a closing quote, got the end of the file");
  end_record();
  return out;
}

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

bool number(const std::string& field, double& out) {
  std::string s = trim(field);
  if (!s.empty() && s[0] == '+') s.erase(0, 1);
  if (s.empty()) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

}  // namespace

CsvTable load_csv(const std::string& path, const CsvOptions& options) {
  const std::string who = "nn::load_csv: " + path;
  if (options.dtype != DType::Float32 && options.dtype != DType::Float64) {
    throw Error(who + ": expected the dtype float32 or float64, got " + tensor::name(options.dtype));
  }
  if (options.delimiter == '"' || options.delimiter == '\n' || options.delimiter == '\r') {
    throw Error(who + ": expected a delimiter other than a quote or a line break");
  }
  const std::vector<uint8_t> bytes = tensor::read_file(path, "nn::load_csv");
  std::vector<Record> rows = records(std::string(bytes.begin(), bytes.end()), options.delimiter, who);
  CsvTable table;
  size_t first = 0;
  if (!rows.empty()) {
    bool header = options.header == CsvOptions::Header::Yes;
    if (options.header == CsvOptions::Header::Auto) {
      double v = 0;
      for (const std::string& f : rows[0].fields) header = header || !number(f, v);
    }
    if (header) {
      for (const std::string& f : rows[0].fields) table.columns.push_back(trim(f));
      first = 1;
    }
  }
  if (rows.size() == first) throw Error(who + ": expected at least one row of numbers, got none");
  const size_t cols = rows[first].fields.size();
  if (!table.columns.empty() && table.columns.size() != cols) {
    throw Error(who + ":" + std::to_string(rows[first].line) + ": expected " + std::to_string(table.columns.size()) +
                " fields (as the header), got " + std::to_string(cols));
  }
  const auto n = static_cast<int64_t>(rows.size() - first);
  std::vector<double> values;
  values.reserve(static_cast<size_t>(n) * cols);
  for (size_t k = first; k < rows.size(); ++k) {
    const Record& r = rows[k];
    const std::string at = who + ":" + std::to_string(r.line);
    if (r.fields.size() != cols) {
      throw Error(at + ": expected " + std::to_string(cols) + " fields (as line " + std::to_string(rows[first].line) +
                  "), got " + std::to_string(r.fields.size()));
    }
    for (size_t c = 0; c < cols; ++c) {
      double v = 0;
      if (!number(r.fields[c], v)) {
        const std::string name = table.columns.empty() ? "" : " ('" + table.columns[c] + "')";
        throw Error(at + ": column " + std::to_string(c + 1) + name + ": expected a number, got " +
                    (trim(r.fields[c]).empty() ? std::string("an empty field") : "'" + r.fields[c] + "'"));
      }
      values.push_back(v);
    }
  }
  table.values = tensor::empty({n, static_cast<int64_t>(cols)}, options.dtype);
  if (options.dtype == DType::Float64) {
    std::copy(values.begin(), values.end(), table.values.data<double>());
  } else {
    float* out = table.values.data<float>();
    for (size_t i = 0; i < values.size(); ++i) out[i] = static_cast<float>(values[i]);
  }
  return table;
}

std::shared_ptr<TensorDataset> load_csv_dataset(const std::string& path, int64_t labelColumn,
                                                const CsvOptions& options) {
  const std::string who = "nn::load_csv_dataset: " + path;
  if (options.dtype != DType::Float32 && options.dtype != DType::Float64) {
    throw Error(who + ": expected the dtype float32 or float64, got " + tensor::name(options.dtype));
  }
  CsvOptions wide = options;  // the labels exactly, whatever the features' dtype
  wide.dtype = DType::Float64;
  const CsvTable t = load_csv(path, wide);
  const int64_t n = t.values.size(0), cols = t.values.size(1);
  const int64_t label = labelColumn < 0 ? labelColumn + cols : labelColumn;
  if (label < 0 || label >= cols || cols < 2) {
    throw Error(who + ": expected a label column in [" + std::to_string(-cols) + ", " + std::to_string(cols) +
                ") and at least one feature column, got label column " + std::to_string(labelColumn) + " of " +
                std::to_string(cols) + " columns");
  }
  const double* v = t.values.data<double>();
  Tensor x = tensor::empty({n, cols - 1}, DType::Float64), y = tensor::empty({n}, DType::Int64);
  double* px = x.data<double>();
  int64_t* py = y.data<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t c = 0; c < cols; ++c) {
      const double value = v[i * cols + c];
      if (c != label) {
        *px++ = value;
        continue;
      }
      if (!(value >= 0 && value <= 9007199254740992.0) || value != std::floor(value)) {
        throw Error(who + ": expected integer labels >= 0 in column " + std::to_string(label + 1) +
                    (t.columns.empty() ? "" : " ('" + t.columns[static_cast<size_t>(label)] + "')") + ", got " +
                    tensor::num_str(value) + " in row " + std::to_string(i + 1) + " of the data");
      }
      py[i] = static_cast<int64_t>(value);
    }
  }
  return std::make_shared<TensorDataset>(
      std::vector<Tensor>{options.dtype == DType::Float64 ? x : x.to(options.dtype), y});
}

}  // namespace nn

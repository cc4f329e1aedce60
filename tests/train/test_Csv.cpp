// test_Csv.cpp: CSV files of numbers (train/Csv.h): a header found or named, quoted fields,
// CR LF and blank lines, other delimiters, float64; a dataset of features and an integer
// label; bad files (not numbers, empty fields, ragged rows, no rows, non-integer labels) are
// errors naming the function, the file and the line.
#include <doctest/doctest.h>
#include <unistd.h>

#include <clocale>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "tensor/Tensor.h"
#include "train/Csv.h"

using namespace tensor;

namespace {
std::string write(const std::string& name, const std::string& text) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("cudnn_nn_test_csv." + std::to_string(::getpid()) + "." + name))
          .string();
  std::ofstream(path, std::ios::binary) << text;
  return path;
}
}  // namespace

TEST_CASE("load_csv: numbers with or without a header, quoted fields, CR LF, blank lines") {
  const std::string a = write("a.csv", "x, y,\"label\"\r\n1.5,-2,0\r\n\r\n+3e2,\"4\",1\r\n");
  const nn::CsvTable t = nn::load_csv(a);
  CHECK(t.columns == std::vector<std::string>{"x", "y", "label"});
  CHECK(t.values.dtype() == DType::Float32);
  CHECK(t.values.sizes() == Shape{2, 3});
  CHECK(t.values.to_vector<double>() == std::vector<double>{1.5, -2, 0, 300, 4, 1});

  const std::string b = write("b.csv", "1;2\n3;nan\n5;-inf");  // no final line break
  const nn::CsvTable u = nn::load_csv(b, {.delimiter = ';', .dtype = DType::Float64});
  CHECK(u.columns.empty());
  CHECK(u.values.dtype() == DType::Float64);
  const auto v = u.values.to_vector<double>();
  REQUIRE(v.size() == 6);
  CHECK(v[0] == 1);
  CHECK(std::isnan(v[3]));
  CHECK(v[4] == 5);
  CHECK(v[5] == -INFINITY);
  // a header of numbers, named
  const nn::CsvTable h = nn::load_csv(write("h.csv", "10,20\n1,2\n"), {.header = nn::CsvOptions::Header::Yes});
  CHECK(h.columns == std::vector<std::string>{"10", "20"});
  CHECK(h.values.sizes() == Shape{1, 2});
  // and a first row of numbers kept
  CHECK(nn::load_csv(write("h.csv", "10,20\n1,2\n"), {.header = nn::CsvOptions::Header::No}).values.size(0) == 2);
  // the locale does not matter (a decimal comma locale would read "1.5" as 1 with strtod)
  if (std::setlocale(LC_NUMERIC, "de_DE.UTF-8")) {
    CHECK(nn::load_csv(a).values.get({0, 0}) == 1.5);
    std::setlocale(LC_NUMERIC, "C");
  }
  for (const std::string& p : {a, b}) std::remove(p.c_str());
}

TEST_CASE("load_csv: bad files are errors naming the file, line and column") {
  auto fails = [](const std::string& name, const std::string& text, const std::string& message) {
    INFO(name);
    const std::string path = write(name, text);
    CHECK_THROWS_WITH_AS(nn::load_csv(path), doctest::Contains(("nn::load_csv: " + path + message).c_str()), Error);
    std::remove(path.c_str());
  };
  fails("empty.csv", "", ": expected at least one row of numbers, got none");
  fails("header_only.csv", "a,b\n", ": expected at least one row of numbers, got none");
  fails("ragged.csv", "a,b\n1,2\n3\n", ":3: expected 2 fields (as line 2), got 1");
  fails("header_width.csv", "a,b,c\n1,2\n", ":2: expected 3 fields (as the header), got 2");
  fails("word.csv", "a,b\n1,2\n3,x4\n", ":3: column 2 ('b'): expected a number, got 'x4'");
  fails("blank_field.csv", "1,2\n3,\n", ":2: column 2: expected a number, got an empty field");
  fails("quote.csv", "1,2\n\"3,4\n", ":2: expected a closing quote, got the end of the file");
  fails("trailing.csv", "1,2\n3,4abc\n", ":2: column 2: expected a number, got '4abc'");
  const std::string missing = "/nonexistent/cudnn_nn.csv";
  CHECK_THROWS_WITH_AS(nn::load_csv(missing),
                       doctest::Contains("nn::load_csv: cannot open '/nonexistent/cudnn_nn.csv'"), Error);
  CHECK_THROWS_WITH_AS(nn::load_csv(missing, {.dtype = DType::Int64}),
                       doctest::Contains("expected the dtype float32 or float64, got int64"), Error);
}

TEST_CASE("load_csv_dataset: features and an integer label column") {
  const std::string p = write("iris.csv", "f1,label,f2\n0.5,2,1\n1.5,0,2\n2.5,1,3\n");
  const auto d = nn::load_csv_dataset(p, 1);
  CHECK(d->size() == 3);
  CHECK(d->tensors()[0].sizes() == Shape{3, 2});
  CHECK(d->tensors()[0].to_vector<double>() == std::vector<double>{0.5, 1, 1.5, 2, 2.5, 3});
  CHECK(d->tensors()[1].dtype() == DType::Int64);
  CHECK(d->tensors()[1].to_vector<double>() == std::vector<double>{2, 0, 1});
  CHECK(nn::load_csv_dataset(p, -1)->tensors()[1].to_vector<double>() == std::vector<double>{1, 2, 3});
  CHECK(nn::load_csv_dataset(p, -2, {.dtype = DType::Float64})->tensors()[0].dtype() == DType::Float64);
  CHECK_THROWS_WITH_AS(nn::load_csv_dataset(p, 0),
                       doctest::Contains(("nn::load_csv_dataset: " + p +
                                          ": expected integer labels >= 0 in column 1 ('f1'), got 0.5 in row 1")
                                             .c_str()),
                       Error);
  CHECK_THROWS_WITH_AS(nn::load_csv_dataset(p, 3), doctest::Contains("expected a label column in [-3, 3)"), Error);
  const std::string one = write("one.csv", "1\n2\n");
  CHECK_THROWS_WITH_AS(nn::load_csv_dataset(one), doctest::Contains("and at least one feature column"), Error);
  std::remove(p.c_str());
  std::remove(one.c_str());
}

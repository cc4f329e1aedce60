// Json.h: a small JSON value for safetensors headers and model description files, read
// and written through nlohmann/json (in Json.cpp only: this header does not need it). The
// reader is meant for untrusted input: it bounds nesting depth, refuses duplicate keys,
// integers outside int64, non-finite numbers, trailing bytes, bad escapes, invalid UTF-8
// and control characters, and reports the byte offset of the first error.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tensor {

class Json {
 public:
  enum class Kind { Null, Bool, Number, String, Array, Object };
  using Array = std::vector<Json>;
  using Object = std::vector<std::pair<std::string, Json>>;  // keeps the file's key order

  Json() = default;
  Json(std::nullptr_t) {}
  Json(bool b) : kind_(Kind::Bool), bool_(b) {}
  Json(double d) : kind_(Kind::Number), number_(d) {}
  Json(int v) : Json(static_cast<int64_t>(v)) {}
  Json(int64_t v) : kind_(Kind::Number), number_(static_cast<double>(v)), integer_(v), is_integer_(true) {}
  Json(uint64_t v) : Json(static_cast<int64_t>(v)) {}
  Json(const char* s) : kind_(Kind::String), string_(s) {}
  Json(std::string s) : kind_(Kind::String), string_(std::move(s)) {}
  Json(Array a) : kind_(Kind::Array), array_(std::make_shared<Array>(std::move(a))) {}
  Json(Object o) : kind_(Kind::Object), object_(std::make_shared<Object>(std::move(o))) {}

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::Null; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_number() const { return kind_ == Kind::Number; }
  bool is_integer() const { return kind_ == Kind::Number && is_integer_; }
  bool is_string() const { return kind_ == Kind::String; }
  bool is_array() const { return kind_ == Kind::Array; }
  bool is_object() const { return kind_ == Kind::Object; }

  // Typed access; each throws tensor::Error naming `what` when the kind differs.
  bool as_bool(const std::string& what = "value") const;
  double as_number(const std::string& what = "value") const;
  int64_t as_int(const std::string& what = "value") const;
  const std::string& as_string(const std::string& what = "value") const;
  const Array& as_array(const std::string& what = "value") const;
  const Object& as_object(const std::string& what = "value") const;

  // Object lookup: nullptr when absent (or not an object).
  const Json* find(const std::string& key) const;
  // Object lookup that throws naming the key and `what` when absent.
  const Json& at(const std::string& key, const std::string& what = "object") const;
  // Appends to an object (throws when the key is already there) / an array.
  Json& set(const std::string& key, Json value);
  Json& push(Json value);

  // -1: compact. Numbers round-trip exactly (integers as int64, others in the shortest
  // form that reads back as the same double, with a '.' or an exponent). Throws when a
  // number is NaN or +-inf (JSON has none; writing null would read back as another value),
  // naming where it is ("model.config.eps", "[2]"), and when a string is not valid UTF-8.
  std::string dump(int indent = -1) const;
  static Json parse(std::string_view text, const std::string& what = "JSON");

 private:
  Kind kind_ = Kind::Null;
  bool bool_ = false;
  double number_ = 0;
  int64_t integer_ = 0;
  bool is_integer_ = false;
  std::string string_;
  std::shared_ptr<Array> array_;
  std::shared_ptr<Object> object_;
};

}  // namespace tensor

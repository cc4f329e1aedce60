// Json.cpp: tensor::Json read and written through nlohmann/json. Parsing goes through
// nlohmann's SAX interface straight into tensor::Json (no intermediate document), with the
// checks for untrusted input added on top; writing converts to nlohmann::ordered_json,
// which keeps the key order, and dumps that.
#include "tensor/Json.h"

#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <string_view>
#include <unordered_set>

#include "tensor/DType.h"

namespace tensor {

namespace {

using nlohmann::ordered_json;

const char* kind_name(Json::Kind k) {
  switch (k) {
    case Json::Kind::Null: return "null";
    case Json::Kind::Bool: return "a boolean";
    case Json::Kind::Number: return "a number";
    case Json::Kind::String: return "a string";
    case Json::Kind::Array: return "an array";
    case Json::Kind::Object: return "an object";
  }
  return "?";
}

// Note [Error positions]: errors name the byte offset of the last byte the parser read,
// 0-based (for "[1, x]" the 'x' at 4; at the end of the input, the input's length).
// nlohmann reports its own errors with that count 1-based; for the checks added here
// (depth, duplicate keys, integer range) the input is read through MarkingIterator, which
// records the last byte handed to the parser.
struct MarkingIterator {
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  const char* p;
  const char** mark;

  reference operator*() const {
    *mark = p;
    return *p;
  }
  MarkingIterator& operator++() {
    ++p;
    return *this;
  }
  MarkingIterator operator++(int) {
    MarkingIterator old = *this;
    ++p;
    return old;
  }
  bool operator==(const MarkingIterator& o) const { return p == o.p; }
  bool operator!=(const MarkingIterator& o) const { return p != o.p; }
};

// nlohmann's message without its "[json.exception.parse_error.101] parse error at line 1,
// column 5: " prefix: the position is given as a byte offset instead.
std::string reason(const nlohmann::json::exception& e) {
  std::string_view m = e.what();
  if (const size_t id = m.find("] "); id != std::string_view::npos) m.remove_prefix(id + 2);
  if (m.starts_with("parse error")) {
    if (const size_t colon = m.find(": "); colon != std::string_view::npos) m.remove_prefix(colon + 2);
  }
  return std::string(m);
}

// The SAX handler: builds the value bottom-up on a stack of open containers.
class Builder {
 public:
  static constexpr size_t kMaxDepth = 64;

  Builder(std::string_view text, const char* const* mark, const std::string& what)
      : begin_(text.data()), mark_(mark), what_(what) {}

  Json take() { return std::move(root_); }

  bool null() { return add(Json(nullptr)); }
  bool boolean(bool b) { return add(Json(b)); }
  bool number_integer(int64_t v) { return add(Json(v)); }
  bool number_unsigned(uint64_t v) {
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) fail("integer out of range: " + std::to_string(v));
    return add(Json(static_cast<int64_t>(v)));
  }
  // nlohmann reads an integer too large for 64 bits as a double: refuse it instead. Non-finite
  // values never get here (nlohmann refuses them: "number overflow").
  bool number_float(double v, const std::string& text) {
    if (text.find_first_of(".eE") == std::string::npos) fail("integer out of range: " + text);
    return add(Json(v));
  }
  bool string(std::string& s) { return add(Json(std::move(s))); }
  bool binary(nlohmann::json::binary_t&) { return false; }  // only the binary formats produce these
  bool start_object(size_t) { return open(true); }
  bool start_array(size_t) { return open(false); }
  bool key(std::string& k) {
    Open& o = stack_.back();
    if (!o.keys.insert(k).second) fail("duplicate key '" + k + "'");
    o.key = std::move(k);
    return true;
  }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool parse_error(size_t position, const std::string&, const nlohmann::json::exception& e) {
    throw error_at(position > 0 ? position - 1 : 0, reason(e));
  }

 private:
  struct Open {
    bool is_object;
    Json::Array array;
    Json::Object object;
    std::unordered_set<std::string> keys;
    std::string key;
  };

  // `offset` is 0-based: See Note [Error positions]
  Error error_at(size_t offset, const std::string& msg) const {
    return Error(what_ + ": malformed JSON at byte " + std::to_string(offset) + ": " + msg);
  }
  [[noreturn]] void fail(const std::string& msg) const {
    throw error_at(*mark_ ? static_cast<size_t>(*mark_ - begin_) : 0, msg);
  }

  bool open(bool is_object) {
    if (stack_.size() == kMaxDepth) fail("nesting deeper than " + std::to_string(kMaxDepth));
    stack_.push_back(Open{is_object, {}, {}, {}, {}});
    return true;
  }
  bool close() {
    Open& o = stack_.back();
    Json v = o.is_object ? Json(std::move(o.object)) : Json(std::move(o.array));
    stack_.pop_back();
    return add(std::move(v));
  }
  bool add(Json v) {
    if (stack_.empty()) {
      root_ = std::move(v);
    } else if (Open& o = stack_.back(); o.is_object) {
      o.object.emplace_back(std::move(o.key), std::move(v));
    } else {
      o.array.push_back(std::move(v));
    }
    return true;
  }

  const char* begin_;
  const char* const* mark_;
  const std::string& what_;
  std::vector<Open> stack_;
  Json root_;
};

// A NaN or infinity found by to_nlohmann: each enclosing array and object adds its index or
// key on the way out, so the error names where the value is (no path is built otherwise).
struct NonFinite {
  double value;
  std::string path;  // ".config.eps", "[3]"; empty at the top
};

std::string number_name(double d) { return std::isnan(d) ? "NaN" : d > 0 ? "inf" : "-inf"; }

ordered_json to_nlohmann(const Json& v) {
  switch (v.kind()) {
    case Json::Kind::Null: return nullptr;
    case Json::Kind::Bool: return v.as_bool();
    case Json::Kind::Number:
      if (v.is_integer()) return ordered_json(v.as_int());
      // nlohmann would write null, which reads back as something else
      if (!std::isfinite(v.as_number())) throw NonFinite{v.as_number(), ""};
      return ordered_json(v.as_number());
    case Json::Kind::String: return v.as_string();
    case Json::Kind::Array: {
      ordered_json a = ordered_json::array();
      const Json::Array& items = v.as_array();
      for (size_t i = 0; i < items.size(); ++i) {
        try {
          a.push_back(to_nlohmann(items[i]));
        } catch (NonFinite& e) {
          e.path = "[" + std::to_string(i) + "]" + e.path;
          throw;
        }
      }
      return a;
    }
    case Json::Kind::Object: {
      // ordered_map's own insertion searches the keys linearly (quadratic for a safetensors
      // header of many tensors): the keys are checked here once, with a hash set, and the
      // pairs appended to the vector it is made of.
      ordered_json o = ordered_json::object();
      auto& pairs = static_cast<ordered_json::object_t::Container&>(o.get_ref<ordered_json::object_t&>());
      std::unordered_set<std::string_view> seen;
      for (const auto& [key, item] : v.as_object()) {
        TENSOR_CHECK(seen.insert(key).second, "Json::dump: duplicate key '", key, "' in an object");
        try {
          pairs.emplace_back(key, to_nlohmann(item));
        } catch (NonFinite& e) {
          e.path = "." + key + e.path;
          throw;
        }
      }
      return o;
    }
  }
  return nullptr;
}

}  // namespace

bool Json::as_bool(const std::string& what) const {
  TENSOR_CHECK(is_bool(), what, ": expected a boolean, got ", kind_name(kind_));
  return bool_;
}

double Json::as_number(const std::string& what) const {
  TENSOR_CHECK(is_number(), what, ": expected a number, got ", kind_name(kind_));
  return number_;
}

int64_t Json::as_int(const std::string& what) const {
  TENSOR_CHECK(is_integer(), what, ": expected an integer, got ",
               is_number() ? "a fractional number" : kind_name(kind_));
  return integer_;
}

const std::string& Json::as_string(const std::string& what) const {
  TENSOR_CHECK(is_string(), what, ": expected a string, got ", kind_name(kind_));
  return string_;
}

const Json::Array& Json::as_array(const std::string& what) const {
  TENSOR_CHECK(is_array(), what, ": expected an array, got ", kind_name(kind_));
  return *array_;
}

const Json::Object& Json::as_object(const std::string& what) const {
  TENSOR_CHECK(is_object(), what, ": expected an object, got ", kind_name(kind_));
  return *object_;
}

const Json* Json::find(const std::string& key) const {
  if (!is_object()) return nullptr;
  for (const auto& [k, v] : *object_) {
    if (k == key) return &v;
  }
  return nullptr;
}

const Json& Json::at(const std::string& key, const std::string& what) const {
  const Json* v = find(key);
  TENSOR_CHECK(v != nullptr, what, ": missing key '", key, "'");
  return *v;
}

Json& Json::set(const std::string& key, Json value) {
  if (kind_ == Kind::Null) {
    kind_ = Kind::Object;
    object_ = std::make_shared<Object>();
  }
  TENSOR_CHECK(is_object(), "Json::set: not an object");
  TENSOR_CHECK(find(key) == nullptr, "Json::set: key '", key, "' is already set");
  object_->emplace_back(key, std::move(value));
  return object_->back().second;
}

Json& Json::push(Json value) {
  if (kind_ == Kind::Null) {
    kind_ = Kind::Array;
    array_ = std::make_shared<Array>();
  }
  TENSOR_CHECK(is_array(), "Json::push: not an array");
  array_->push_back(std::move(value));
  return array_->back();
}

std::string Json::dump(int indent) const {
  try {
    return to_nlohmann(*this).dump(indent, ' ', false, ordered_json::error_handler_t::strict);
  } catch (const nlohmann::json::exception& e) {  // a string that is not UTF-8
    throw Error("Json::dump: " + reason(e));
  } catch (const NonFinite& e) {
    const std::string at = e.path.empty() ? "the value" : e.path[0] == '.' ? e.path.substr(1) : e.path;
    throw Error("Json::dump: expected finite numbers (JSON has no NaN or infinity), got " + number_name(e.value) +
                " at " + at);
  }
}

Json Json::parse(std::string_view text, const std::string& what) {
  // nlohmann skips a byte order mark; JSON text (RFC 8259) and safetensors headers have none.
  if (text.starts_with("\xEF\xBB\xBF")) {
    throw Error(what + ": malformed JSON at byte 0: a byte order mark (JSON text has none)");
  }
  const char* mark = nullptr;
  Builder builder(text, &mark, what);
  MarkingIterator first{text.data(), &mark}, last{text.data() + text.size(), &mark};
  // every handler returns true or throws; false would come from binary(), which JSON text never reaches
  TENSOR_CHECK(nlohmann::json::sax_parse(first, last, &builder), what, ": malformed JSON");
  return builder.take();
}

}  // namespace tensor

// Json.cpp: recursive-descent parser with a depth limit, and the writer.
#include "tensor/Json.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "tensor/DType.h"

namespace tensor {

namespace {

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

class Parser {
 public:
  Parser(std::string_view text, const std::string& what) : s_(text), what_(what) {}

  Json parse_document() {
    skip_ws();
    Json v = parse_value(0);
    skip_ws();
    if (pos_ != s_.size()) fail("unexpected trailing characters");
    return v;
  }

 private:
  static constexpr int kMaxDepth = 64;

  [[noreturn]] void fail(const std::string& msg) const {
    throw Error(what_ + ": malformed JSON at byte " + std::to_string(pos_) + ": " + msg);
  }

  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }

  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }

  void expect(char c) {
    if (peek() != c || pos_ >= s_.size()) fail(std::string("expected '") + c + "'");
    ++pos_;
  }

  bool consume_literal(std::string_view lit) {
    if (s_.substr(pos_, lit.size()) == lit) {
      pos_ += lit.size();
      return true;
    }
    return false;
  }

  Json parse_value(int depth) {
    if (depth > kMaxDepth) fail("nesting deeper than " + std::to_string(kMaxDepth));
    if (pos_ >= s_.size()) fail("unexpected end of input");
    const char c = s_[pos_];
    if (c == '{') return parse_object(depth);
    if (c == '[') return parse_array(depth);
    if (c == '"') return Json(parse_string());
    if (consume_literal("true")) return Json(true);
    if (consume_literal("false")) return Json(false);
    if (consume_literal("null")) return Json(nullptr);
    if (c == '-' || (c >= '0' && c <= '9')) return parse_number();
    fail(std::string("unexpected character '") + c + "'");
  }

  Json parse_object(int depth) {
    expect('{');
    Json::Object obj;
    skip_ws();
    if (peek() == '}') {
      ++pos_;
      return Json(std::move(obj));
    }
    while (true) {
      skip_ws();
      if (peek() != '"') fail("expected a string key");
      std::string key = parse_string();
      skip_ws();
      expect(':');
      skip_ws();
      obj.emplace_back(std::move(key), parse_value(depth + 1));
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect('}');
      return Json(std::move(obj));
    }
  }

  Json parse_array(int depth) {
    expect('[');
    Json::Array arr;
    skip_ws();
    if (peek() == ']') {
      ++pos_;
      return Json(std::move(arr));
    }
    while (true) {
      skip_ws();
      arr.push_back(parse_value(depth + 1));
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect(']');
      return Json(std::move(arr));
    }
  }

  unsigned parse_hex4() {
    if (pos_ + 4 > s_.size()) fail("truncated \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = s_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f') v |= static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= static_cast<unsigned>(c - 'A' + 10);
      else fail("bad hex digit in \\u escape");
    }
    return v;
  }

  static void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  std::string parse_string() {
    expect('"');
    std::string out;
    while (true) {
      if (pos_ >= s_.size()) fail("unterminated string");
      const char c = s_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) fail("unterminated escape");
      const char e = s_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned cp = parse_hex4();
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (!consume_literal("\\u")) fail("lone high surrogate");
            const unsigned lo = parse_hex4();
            if (lo < 0xDC00 || lo > 0xDFFF) fail("bad low surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            fail("lone low surrogate");
          }
          append_utf8(out, cp);
          break;
        }
        default: fail(std::string("bad escape '\\") + e + "'");
      }
    }
  }

  Json parse_number() {
    const size_t start = pos_;
    if (peek() == '-') ++pos_;
    if (pos_ >= s_.size() || !(s_[pos_] >= '0' && s_[pos_] <= '9')) fail("bad number");
    if (s_[pos_] == '0') {
      ++pos_;
    } else {
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
    }
    bool integral = true;
    if (peek() == '.') {
      integral = false;
      ++pos_;
      if (!(peek() >= '0' && peek() <= '9')) fail("bad fraction");
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
    }
    if (peek() == 'e' || peek() == 'E') {
      integral = false;
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (!(peek() >= '0' && peek() <= '9')) fail("bad exponent");
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
    }
    const std::string text(s_.substr(start, pos_ - start));
    if (integral) {
      errno = 0;
      char* end = nullptr;
      const long long v = std::strtoll(text.c_str(), &end, 10);
      if (errno == ERANGE) fail("integer out of range: " + text);
      return Json(static_cast<int64_t>(v));
    }
    return Json(std::strtod(text.c_str(), nullptr));
  }

  std::string_view s_;
  const std::string& what_;
  size_t pos_ = 0;
};

void escape_to(std::string& out, const std::string& s) {
  out += '"';
  for (const char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
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
  std::string out;
  dump_to(out, indent, 0);
  return out;
}

void Json::dump_to(std::string& out, int indent, int depth) const {
  auto newline = [&](int d) {
    if (indent < 0) return;
    out += '\n';
    out.append(static_cast<size_t>(indent * d), ' ');
  };
  switch (kind_) {
    case Kind::Null: out += "null"; break;
    case Kind::Bool: out += bool_ ? "true" : "false"; break;
    case Kind::Number:
      if (is_integer_) {
        out += std::to_string(integer_);
      } else if (!std::isfinite(number_)) {
        out += "null";  // JSON has no inf/nan
      } else {
        // the shortest text that parses back to the same double: 0.1, not 0.10000000000000001
        char buf[32];
        const auto r = std::to_chars(buf, buf + sizeof buf, number_);
        std::string text(buf, r.ptr);
        // keep it a JSON number that reads back as a fraction ("1e+20" -> "1e+20", "3" -> "3.0")
        if (text.find_first_of(".eE") == std::string::npos) text += ".0";
        out += text;
      }
      break;
    case Kind::String: escape_to(out, string_); break;
    case Kind::Array:
      out += '[';
      for (size_t i = 0; i < array_->size(); ++i) {
        if (i) out += ',';
        newline(depth + 1);
        (*array_)[i].dump_to(out, indent, depth + 1);
      }
      if (!array_->empty()) newline(depth);
      out += ']';
      break;
    case Kind::Object:
      out += '{';
      for (size_t i = 0; i < object_->size(); ++i) {
        if (i) out += ',';
        newline(depth + 1);
        escape_to(out, (*object_)[i].first);
        out += indent < 0 ? ":" : ": ";
        (*object_)[i].second.dump_to(out, indent, depth + 1);
      }
      if (!object_->empty()) newline(depth);
      out += '}';
      break;
  }
}

Json Json::parse(std::string_view text, const std::string& what) {
  return Parser(text, what).parse_document();
}

}  // namespace tensor

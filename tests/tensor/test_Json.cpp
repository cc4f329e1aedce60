// test_Json.cpp: the JSON parser and writer used for safetensors headers and model files.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "tensor/DType.h"
#include "tensor/Generator.h"
#include "tensor/Json.h"

using namespace tensor;

TEST_CASE("parses and writes values") {
  const Json v = Json::parse(R"( {"a": [1, -2, 3.5e2, true, null], "b\u00e9": "x\"\n", "c": {}} )");
  REQUIRE(v.is_object());
  const auto& a = v.at("a").as_array();
  CHECK(a[0].as_int() == 1);
  CHECK(a[1].as_int() == -2);
  CHECK(a[2].as_number() == 350);
  CHECK_FALSE(a[2].is_integer());
  CHECK(a[3].as_bool());
  CHECK(a[4].is_null());
  CHECK(v.at("b\xc3\xa9").as_string() == "x\"\n");
  CHECK(v.at("c").as_object().empty());
  CHECK(v.dump() == R"({"a":[1,-2,350.0,true,null],"bé":"x\"\n","c":{}})");
  CHECK(Json::parse(v.dump()).dump() == v.dump());
  CHECK(Json::parse("\"\\ud83d\\ude00\"").as_string() == "\xf0\x9f\x98\x80");
  Json built;
  built.set("k", Json(int64_t(1) << 53));
  built.set("list", Json(Json::Array{Json(1.5), Json("s")}));
  CHECK(built.dump() == R"({"k":9007199254740992,"list":[1.5,"s"]})");
  CHECK(built.dump(2) == "{\n  \"k\": 9007199254740992,\n  \"list\": [\n    1.5,\n    \"s\"\n  ]\n}");
}

TEST_CASE("writes doubles in their shortest exact form, and they stay fractional") {
  CHECK(Json(0.1).dump() == "0.1");
  CHECK(Json(1e-5).dump() == "1e-05");
  CHECK(Json(0.75).dump() == "0.75");
  CHECK(Json(3.0).dump() == "3.0");
  CHECK(Json(-2e20).dump() == "-2e+20");
  for (double d : {0.1, 1e-5, 1.0 / 3.0, 6.02214076e23, -4.9e-324, 0.9999999999999999}) {
    const Json back = Json::parse(Json(d).dump());
    CHECK_FALSE(back.is_integer());
    CHECK(back.as_number() == d);
  }
}

TEST_CASE("rejects malformed input with the byte offset") {
  for (const char* bad : {"", "{", "[1,]", "{\"a\" 1}", "01", "1.", "-", "\"\\x\"", "\"a", "tru",
                          "[1] 2", "{\"a\":1,}", "\"\\ud800\"", "\"\x01\"", "1e"}) {
    CHECK_THROWS_AS(Json::parse(bad), Error);
  }
  CHECK_THROWS_WITH_AS(Json::parse("[1, x]", "model.json"),
                       "model.json: malformed JSON at byte 4: syntax error while parsing value - invalid literal; "
                       "last read: '1, x'",
                       Error);
  CHECK_THROWS_WITH_AS(Json::parse("[1, 2", "t"), doctest::Contains("t: malformed JSON at byte 5: "), Error);
  CHECK_THROWS_WITH_AS(Json::parse("99999999999999999999"), doctest::Contains("integer out of range"), Error);
  std::string deep(100, '[');
  deep += std::string(100, ']');
  CHECK_THROWS_WITH_AS(Json::parse(deep), "JSON: malformed JSON at byte 64: nesting deeper than 64", Error);
  CHECK(Json::parse(std::string(64, '[') + std::string(64, ']')).is_array());
  CHECK_THROWS_WITH_AS(Json::parse(std::string(64, '[') + "{}" + std::string(64, ']')),
                       doctest::Contains("nesting deeper than 64"), Error);
  CHECK_THROWS_WITH_AS(Json::parse("[1]").as_object("layers"), "layers: expected an object, got an array", Error);
  CHECK_THROWS_WITH_AS(Json::parse("{}").at("type", "module 3"), "module 3: missing key 'type'", Error);
}

TEST_CASE("numbers round-trip exactly: int64 as integers, doubles bit for bit") {
  for (int64_t v : {int64_t(0), int64_t(-1), int64_t(1) << 53, (int64_t(1) << 53) + 1, INT64_MAX, INT64_MIN}) {
    const Json back = Json::parse(Json(v).dump());
    REQUIRE(back.is_integer());
    CHECK(back.as_int() == v);
  }
  CHECK(Json::parse("-9223372036854775808").as_int() == INT64_MIN);
  CHECK(Json::parse("-0").as_int() == 0);
  Generator g(5);
  for (int i = 0; i < 20000; ++i) {
    // random bit patterns: every exponent, subnormals, both signs
    uint64_t u = static_cast<uint64_t>(g.uniform() * 4294967296.0) << 32 | static_cast<uint64_t>(g.uniform() * 4294967296.0);
    double d;
    std::memcpy(&d, &u, 8);
    if (!std::isfinite(d)) continue;
    const Json back = Json::parse(Json(d).dump());
    REQUIRE_FALSE(back.is_integer());
    uint64_t w;
    const double e = back.as_number();
    std::memcpy(&w, &e, 8);
    REQUIRE_MESSAGE(w == u, Json(d).dump());
  }
  CHECK(Json(-0.0).dump() == "-0.0");
  CHECK(std::signbit(Json::parse("-0.0").as_number()));
}

TEST_CASE("dump refuses NaN and infinity, naming where they are") {
  // JSON has neither: writing null would read back as another value
  CHECK_THROWS_WITH_AS(Json(std::nan("")).dump(),
                       "Json::dump: expected finite numbers (JSON has no NaN or infinity), got NaN at the value",
                       Error);
  Json doc;
  doc.set("name", Json("x"));
  Json config;
  config.set("sizes", Json(Json::Array{Json(1), Json(2.5), Json(-INFINITY)}));
  doc.set("config", config);
  CHECK_THROWS_WITH_AS(doc.dump(2),
                       "Json::dump: expected finite numbers (JSON has no NaN or infinity), got -inf at config.sizes[2]",
                       Error);
  CHECK_THROWS_WITH_AS(Json(Json::Array{Json(Json::Object{{"k", Json(INFINITY)}})}).dump(),
                       doctest::Contains("got inf at [0].k"), Error);
  CHECK(Json(Json::Array{Json(1.5), Json(int64_t{-3})}).dump() == "[1.5,-3]");  // finite ones are written
}

TEST_CASE("refuses numbers it cannot hold, naming the text") {
  CHECK_THROWS_WITH_AS(Json::parse("9223372036854775808"),
                       "JSON: malformed JSON at byte 18: integer out of range: 9223372036854775808", Error);
  CHECK_THROWS_WITH_AS(Json::parse("[-99999999999999999999]"), doctest::Contains("integer out of range: -99999999999999999999"), Error);
  CHECK_THROWS_WITH_AS(Json::parse("1e999"), "JSON: malformed JSON at byte 4: number overflow parsing '1e999'", Error);
  CHECK_THROWS_WITH_AS(Json::parse("{\"a\": -1.5e400}"), doctest::Contains("number overflow parsing '-1.5e400'"), Error);
  CHECK(Json::parse("1e-400").as_number() == 0);  // underflow rounds to zero, as IEEE does
}

TEST_CASE("duplicate keys are refused when read, set or written") {
  CHECK_THROWS_WITH_AS(Json::parse(R"({"a": 1, "b": {"a": 2}, "a": 3})", "h.json"),
                       "h.json: malformed JSON at byte 26: duplicate key 'a'", Error);
  CHECK(Json::parse(R"({"a": {"a": 1}, "b": [{"a": 2}, {"a": 3}]})").at("b").as_array().size() == 2);
  Json o;
  o.set("k", Json(1));
  CHECK_THROWS_WITH_AS(o.set("k", Json(2)), "Json::set: key 'k' is already set", Error);
  CHECK(o.at("k").as_int() == 1);
  const Json built(Json::Object{{"x", Json(1)}, {"x", Json(2)}});
  CHECK_THROWS_WITH_AS(built.dump(), "Json::dump: duplicate key 'x' in an object", Error);
}

TEST_CASE("text must be UTF-8 without a byte order mark") {
  CHECK_THROWS_WITH_AS(Json::parse("\xEF\xBB\xBF{}"), "JSON: malformed JSON at byte 0: a byte order mark (JSON text has none)",
                       Error);
  CHECK_THROWS_WITH_AS(Json::parse("\"a\xff\""), doctest::Contains("at byte 2: syntax error while parsing value - invalid string: ill-formed UTF-8"), Error);
  CHECK_THROWS_WITH_AS(Json::parse(std::string("[1,\0]", 5)), doctest::Contains("at byte 3:"), Error);
  CHECK_THROWS_WITH_AS(Json("\xc3(").dump(), doctest::Contains("Json::dump: invalid UTF-8 byte at index 1: 0x28"), Error);
  const Json s = Json::parse(R"("\u0001\b\f\t\/é")");
  CHECK(s.as_string() == "\x01\b\f\t/\xc3\xa9");
  CHECK(s.dump() == R"("\u0001\b\f\t/é")");
  CHECK(Json::parse(s.dump()).as_string() == s.as_string());
}

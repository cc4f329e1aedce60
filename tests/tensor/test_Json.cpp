// test_Json.cpp: the JSON parser and writer used for safetensors headers and model files.
#include <doctest/doctest.h>

#include "tensor/DType.h"
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
                       "model.json: malformed JSON at byte 4: unexpected character 'x'", Error);
  CHECK_THROWS_WITH_AS(Json::parse("99999999999999999999"), doctest::Contains("integer out of range"), Error);
  std::string deep(100, '[');
  deep += std::string(100, ']');
  CHECK_THROWS_WITH_AS(Json::parse(deep), doctest::Contains("nesting deeper than 64"), Error);
  CHECK_THROWS_WITH_AS(Json::parse("[1]").as_object("layers"), "layers: expected an object, got an array", Error);
  CHECK_THROWS_WITH_AS(Json::parse("{}").at("type", "module 3"), "module 3: missing key 'type'", Error);
}

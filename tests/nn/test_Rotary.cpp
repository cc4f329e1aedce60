// test_Rotary.cpp: nn::rotary_embedding_ and nn::RotaryEmbedding: Hugging Face's results (Llama's
// rotate_half, GPT-J's interleaved pairs, partial rotation, offsets; float32 and float64, from
// scripts/make_rotary_reference.py), closed forms, strided views, the inverse, NaN and Inf,
// empty inputs, finite differences, errors, printing, configuration and model files.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <map>
#include <string>

#include "convert/ModelFile.h"
#include "nn/Rotary.h"
#include "nn/RotaryEmbedding.h"
#include "tensor/Safetensors.h"
#include "tests/support/ErrorText.h"
#include "tests/support/GradCheck.h"
#include "tests/support/TempDir.h"
#include "tests/support/TransformerReference.h"

using namespace tensor;
using namespace testing;

namespace {

const std::map<std::string, Tensor>& rotary_refs() {
  static const std::map<std::string, Tensor> refs =
      load_safetensors(std::string(CUDNN_NN_TEST_DATA) + "/nn/rotary_reference.safetensors").tensors;
  return refs;
}

Tensor rotary_ref(const std::string& key) {
  auto it = rotary_refs().find(key);
  INFO("reference key ", key);
  REQUIRE(it != rotary_refs().end());
  return it->second;
}

nn::RotaryOptions options_of(const Tensor& o) {
  nn::RotaryOptions r;
  r.style = o.get({0}) == 0 ? nn::RotaryStyle::Half : nn::RotaryStyle::Interleaved;
  r.theta = o.get({1});
  r.rotaryDim = static_cast<int64_t>(o.get({2}));
  return r;
}

Tensor rotated(const Tensor& x, const Tensor& offsets, const nn::RotaryOptions& o, bool inverse = false) {
  Tensor y = x.clone();
  nn::rotary_embedding_(y, offsets, o, inverse);
  return y;
}

nn::RotaryOptions opts(nn::RotaryStyle style, double theta = 10000, int64_t rotaryDim = 0) {
  nn::RotaryOptions o;
  o.style = style;
  o.theta = theta;
  o.rotaryDim = rotaryDim;
  return o;
}

bool bits_equal(const Tensor& a, const Tensor& b) {
  if (a.sizes() != b.sizes()) return false;
  const auto x = a.to(DType::Float64).contiguous().to_vector<double>();
  const auto y = b.to(DType::Float64).contiguous().to_vector<double>();
  for (size_t i = 0; i < x.size(); ++i) {
    if (!(x[i] == y[i] || (std::isnan(x[i]) && std::isnan(y[i])))) return false;
  }
  return true;
}

}  // namespace

TEST_CASE(
    "rotary_embedding_ gives transformers' results: half and interleaved, partial, offsets, float32 and float64") {
  for (const char* name : {"half_f32", "half_f32_long", "half_f32_partial", "inter_f32", "inter_f32_partial",
                           "half_f64", "half_f64_partial", "inter_f64"}) {
    INFO(name);
    const std::string p = std::string(name) + ".";
    const Tensor x = rotary_ref(p + "x"), offsets = rotary_ref(p + "offsets"), want = rotary_ref(p + "y");
    const nn::RotaryOptions o = options_of(rotary_ref(p + "options"));
    // float32: HF's pow, cos and sin may differ from the C library's in the last place (Note
    // [Rotary angles]); measured: 2.4e-7 at most (2 ulps of |y| < 4)
    const double tol = x.dtype() == DType::Float32 ? 1e-6 : 1e-12;
    const Tensor y = rotated(x, offsets, o);
    expect_matches("rotary_embedding_", y, want, tol);
    // the module: the same bits, out of place
    nn::RotaryEmbedding m(o);
    m.setOffsets(offsets);
    CHECK(bits_equal(m.forward(x), y));
    // the rotation leaves the dims past rotary_dim alone, bit for bit
    if (o.rotaryDim != 0) {
      const int64_t D = x.size(3), R = o.rotaryDim;
      CHECK(bits_equal(y.narrow(3, R, D - R), x.narrow(3, R, D - R)));
    }
  }
}

TEST_CASE("rotary_inv_freq: HF's float32 inv_freq to the last place; float64 in float64") {
  for (const auto& [key, hf] : rotary_refs()) {
    if (key.rfind("inv_freq.f32_", 0) != 0) continue;
    INFO(key);
    const std::string rest = key.substr(13);
    const int64_t R = std::stoll(rest.substr(0, rest.find('_')));
    const double theta = std::stod(rest.substr(rest.find('_') + 1));
    const auto ours = nn::rotary_inv_freq(opts(nn::RotaryStyle::Half, theta), R, DType::Float32);
    const auto want = hf.to_vector<double>();
    REQUIRE(ours.size() == want.size());
    for (size_t i = 0; i < ours.size(); ++i) {
      CHECK(static_cast<double>(static_cast<float>(ours[i])) == ours[i]);  // float32 values
      CHECK(std::abs(ours[i] - want[i]) <= 2.4e-7 * want[i]);              // within an ulp or so
    }
  }
  const auto f64 = nn::rotary_inv_freq(opts(nn::RotaryStyle::Half, 10000, 6), 8, DType::Float64);
  REQUIRE(f64.size() == 3);
  CHECK(f64[0] == 1);
  CHECK(f64[1] == doctest::Approx(std::pow(10000.0, -2.0 / 6)).epsilon(1e-15));
  CHECK(f64[2] == doctest::Approx(std::pow(10000.0, -4.0 / 6)).epsilon(1e-15));
}

TEST_CASE("rotary_embedding_ closed forms: position 0 is the identity; pair (0, R/2) turns by the position") {
  Generator gen(1);
  for (DType dt : {DType::Float32, DType::Float64}) {
    for (auto style : {nn::RotaryStyle::Half, nn::RotaryStyle::Interleaved}) {
      INFO(std::string(name(dt)), " ", std::string(nn::rotary_style_name(style)));
      const Tensor x = uniform({2, 3, 4, 8}, -1, 1, gen, dt);
      const Tensor y = rotated(x, Tensor(), opts(style));
      CHECK(bits_equal(y.narrow(2, 0, 1), x.narrow(2, 0, 1)));  // cos 0 = 1, sin 0 = 0 exactly
      // pair 0 has inv_freq 1: angle = s; a unit vector (1, 0) turns to (cos s, sin s)
      Tensor e = zeros({1, 1, 4, 8}, dt);
      const int64_t partner = style == nn::RotaryStyle::Half ? 4 : 1;
      for (int64_t s = 0; s < 4; ++s) e.set({0, 0, s, 0}, 1);
      const Tensor r = rotated(e, Tensor(), opts(style));
      for (int64_t s = 0; s < 4; ++s) {
        CHECK(r.get({0, 0, s, 0}) == doctest::Approx(std::cos(double(s))).epsilon(1e-6));
        CHECK(r.get({0, 0, s, partner}) == doctest::Approx(std::sin(double(s))).epsilon(1e-6));
      }
    }
  }
}

TEST_CASE("rotary_embedding_ offsets: row b's token s is the token offsets[b] + s of a longer sequence") {
  Generator gen(2);
  for (DType dt : {DType::Float32, DType::Float64}) {
    for (auto style : {nn::RotaryStyle::Half, nn::RotaryStyle::Interleaved}) {
      const nn::RotaryOptions o = opts(style, 500000, 6);
      const Tensor base = uniform({1, 2, 12, 10}, -1, 1, gen, dt);
      const Tensor whole = rotated(base, Tensor(), o);
      // two rows: tokens 3..6 and 7..10 of the same sequence
      Tensor x = empty({2, 2, 4, 10}, dt);
      x.select(0, 0).copy_(base.select(0, 0).narrow(1, 3, 4));
      x.select(0, 1).copy_(base.select(0, 0).narrow(1, 7, 4));
      // contiguous offsets and strided ones
      for (const Tensor& offsets :
           {from_vector<int64_t>({3, 7}, {2}), from_vector<int64_t>({3, 9, 7, 9}, {2, 2}).select(1, 0)}) {
        const Tensor y = rotated(x, offsets, o);
        CHECK(bits_equal(y.select(0, 0), whole.select(0, 0).narrow(1, 3, 4)));
        CHECK(bits_equal(y.select(0, 1), whole.select(0, 0).narrow(1, 7, 4)));
      }
      // undefined offsets are zeros
      CHECK(bits_equal(rotated(x, Tensor(), o), rotated(x, zeros({2}, DType::Int64), o)));
    }
  }
}

TEST_CASE("rotary_embedding_ on strided views: in place, as on a contiguous copy, nothing else touched") {
  Generator gen(3);
  for (DType dt : {DType::Float32, DType::Float64}) {
    for (auto style : {nn::RotaryStyle::Half, nn::RotaryStyle::Interleaved}) {
      const nn::RotaryOptions o = opts(style, 10000, 4);
      const Tensor offsets = from_vector<int64_t>({2, 5}, {2});
      // a projection buffer [B x S x 3 * H * D], its q part viewed as [B x H x S x D]
      const int64_t B = 2, S = 3, H = 2, D = 6;
      const Tensor buffer = uniform({B, S, 3 * H * D}, -1, 1, gen, dt);
      const Tensor before = buffer.clone();
      Tensor q = buffer.narrow(2, H * D, H * D).view({B, S, H, D}).transpose(1, 2);
      REQUIRE_FALSE(q.is_contiguous());
      const Tensor want = rotated(q.contiguous(), offsets, o);
      nn::rotary_embedding_(q, offsets, o);
      CHECK(bits_equal(q, want));
      CHECK(bits_equal(buffer.narrow(2, 0, H * D), before.narrow(2, 0, H * D)));
      CHECK(bits_equal(buffer.narrow(2, 2 * H * D, H * D), before.narrow(2, 2 * H * D, H * D)));
      // a stride on D itself
      const Tensor wide = uniform({B, H, S, 2 * D}, -1, 1, gen, dt);
      Tensor everyOther = wide.view({B, H, S, D, 2}).select(4, 1);
      const Tensor want2 = rotated(everyOther.contiguous(), offsets, o);
      const Tensor untouched = wide.view({B, H, S, D, 2}).select(4, 0).clone();
      nn::rotary_embedding_(everyOther, offsets, o);
      CHECK(bits_equal(everyOther, want2));
      CHECK(bits_equal(wide.view({B, H, S, D, 2}).select(4, 0), untouched));
    }
  }
}

TEST_CASE("rotary_embedding_ inverse: inverse(forward(x)) == x; the module's backward is the inverse") {
  Generator gen(4);
  for (DType dt : {DType::Float32, DType::Float64}) {
    for (auto style : {nn::RotaryStyle::Half, nn::RotaryStyle::Interleaved}) {
      const nn::RotaryOptions o = opts(style, 10000, 0);
      const Tensor offsets = from_vector<int64_t>({0, 1000}, {2});
      const Tensor x = uniform({2, 3, 5, 8}, -2, 2, gen, dt);
      const Tensor back = rotated(rotated(x, offsets, o), offsets, o, true);
      CHECK(max_abs_diff(back, x) <= (dt == DType::Float32 ? 2e-6 : 1e-14));
      nn::RotaryEmbedding m(o);
      m.setOffsets(offsets);
      const Tensor g = uniform(x.sizes(), -1, 1, gen, dt);
      m.forward(x);
      CHECK(bits_equal(m.backward(x, g), rotated(g, offsets, o, true)));
      // orthogonal: <R x, g> = <x, R^T g>
      const double lhs = m.output.to(DType::Float64).mul(g.to(DType::Float64)).sum().item();
      const double rhs = x.to(DType::Float64).mul(m.gradInput.to(DType::Float64)).sum().item();
      CHECK(lhs == doctest::Approx(rhs).epsilon(dt == DType::Float32 ? 1e-5 : 1e-13));
    }
  }
}

TEST_CASE("RotaryEmbedding finite differences: both styles, partial rotation, offsets, strided input (float64)") {
  Generator gen(5);
  for (auto style : {nn::RotaryStyle::Half, nn::RotaryStyle::Interleaved}) {
    for (int64_t R : {0, 4}) {
      for (bool withOffsets : {false, true}) {
        INFO(std::string(nn::rotary_style_name(style)), " rotary_dim ", R, std::string(withOffsets ? " offsets" : ""));
        nn::RotaryEmbedding m(opts(style, 100, R));
        if (withOffsets) m.setOffsets(from_vector<int64_t>({3, 0}, {2}));
        m.to(DType::Float64);
        expect_gradients_ok(m, uniform({2, 2, 3, 6}, -1, 1, gen, DType::Float64));
      }
    }
  }
  nn::RotaryEmbedding m(opts(nn::RotaryStyle::Half));
  m.to(DType::Float64);
  expect_gradients_ok(m, uniform({2, 3, 4, 4}, -1, 1, gen, DType::Float64).transpose(1, 2));  // [2 x 4 x 3 x 4]
}

TEST_CASE("rotary_embedding_: NaN and Inf stay in their pair; the other pairs and the passed dims compute") {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  for (DType dt : {DType::Float32, DType::Float64}) {
    for (auto style : {nn::RotaryStyle::Half, nn::RotaryStyle::Interleaved}) {
      const nn::RotaryOptions o = opts(style, 10000, 4);
      const int64_t partner = style == nn::RotaryStyle::Half ? 2 : 1;
      Tensor x = ones({1, 1, 3, 6}, dt);
      x.set({0, 0, 1, 0}, nan);
      x.set({0, 0, 2, 0}, inf);
      x.set({0, 0, 0, 5}, nan);  // past rotary_dim: handed through
      const Tensor y = rotated(x, Tensor(), o);
      CHECK(std::isnan(y.get({0, 0, 1, 0})));
      CHECK(std::isnan(y.get({0, 0, 1, partner})));
      CHECK(std::isinf(y.get({0, 0, 2, 0})));  // inf cos(2) - sin(2): -inf
      CHECK(std::isinf(y.get({0, 0, 2, partner})));
      CHECK(std::isnan(y.get({0, 0, 0, 5})));
      const Tensor fine = y.narrow(2, 1, 2).narrow(3, 0, 4);
      const int64_t other = style == nn::RotaryStyle::Half ? 1 : 2;  // the second pair
      CHECK(std::isfinite(fine.get({0, 0, 0, other})));
      CHECK(std::isfinite(fine.get({0, 0, 1, other})));
      CHECK(!has_nonfinite(y.narrow(2, 0, 1).narrow(3, 0, 5)));
    }
  }
}

TEST_CASE("rotary_embedding_ and RotaryEmbedding: empty batches, heads and sequences") {
  for (const Shape& s : {Shape{0, 2, 3, 4}, Shape{2, 0, 3, 4}, Shape{2, 2, 0, 4}}) {
    INFO(shape_str(s));
    Tensor x = zeros(s);
    CHECK(error_of([&] { nn::rotary_embedding_(x, Tensor(), {}); }) == "(no error)");
    nn::RotaryEmbedding m;
    if (s[0] == 2) m.setOffsets(from_vector<int64_t>({1, 2}, {2}));
    CHECK(m.forward(x).sizes() == s);
    CHECK(m.backward(x, zeros(s)).sizes() == s);
  }
  Tensor x = zeros({0, 2, 3, 4});
  CHECK(error_of([&] { nn::rotary_embedding_(x, zeros({0}, DType::Int64), {}); }) == "(no error)");
}

TEST_CASE("rotary_embedding_ errors: every bad argument named, x unchanged") {
  Generator gen(6);
  const Tensor x0 = uniform({2, 3, 4, 6}, -1, 1, gen);
  Tensor x = x0.clone();
  const std::string w = "nn.rotary_embedding_: ";
  CHECK(error_of([&] { nn::rotary_embedding_(x, Tensor(), opts(nn::RotaryStyle::Half, 10000, 8)); }) ==
        w + "expected an even rotary_dim in [2, D] (or 0 for D), got rotary_dim 8 for x [2 x 3 x 4 x 6]");
  CHECK(error_of([&] { nn::rotary_embedding_(x, Tensor(), opts(nn::RotaryStyle::Half, 10000, 3)); }) ==
        w + "expected an even rotary_dim in [2, D] (or 0 for D), got rotary_dim 3 for x [2 x 3 x 4 x 6]");
  CHECK(error_of([&] { nn::rotary_embedding_(x, Tensor(), opts(nn::RotaryStyle::Half, 0)); }) ==
        w + "expected a finite theta > 0, got 0");
  CHECK(error_of([&] { nn::rotary_embedding_(x, Tensor(), opts(nn::RotaryStyle::Half, 1.0 / 0.0)); }) ==
        w + "expected a finite theta > 0, got inf");
  CHECK(error_of([&] {
          nn::rotary_embedding_(x, from_vector<int64_t>({1, 2, 3}, {3}), {});
        }) == w + "expected offsets int64 [2] (one per batch entry of x [2 x 3 x 4 x 6]), got int64 [3] on cpu");
  CHECK(error_of([&] { nn::rotary_embedding_(x, zeros({2}), {}); }) ==
        w + "expected offsets int64 [2] (one per batch entry of x [2 x 3 x 4 x 6]), got float32 [2] on cpu");
  CHECK(error_of([&] {
          nn::rotary_embedding_(x, zeros({2, 1}, DType::Int64), {});
        }) == w + "expected offsets int64 [2] (one per batch entry of x [2 x 3 x 4 x 6]), got int64 [2 x 1] on cpu");
  CHECK(error_of([&] {
          nn::rotary_embedding_(x, from_vector<int64_t>({4, -1}, {2}), {});
        }) == w + "expected offsets >= 0, got -1 at batch entry 1");
  CHECK(bits_equal(x, x0));
  Tensor odd = zeros({2, 3, 4, 5});
  CHECK(error_of([&] { nn::rotary_embedding_(odd, Tensor(), {}); }) ==
        w + "expected an even head dim D >= 2 (rotary_dim 0: the whole head rotates), got x [2 x 3 x 4 x 5]");
  Tensor three = zeros({3, 4, 6});
  CHECK(error_of([&] { nn::rotary_embedding_(three, Tensor(), {}); }) ==
        w + "expected x [B x H x S x D] (4-d), got [3 x 4 x 6]");
  Tensor ints = zeros({2, 3, 4, 6}, DType::Int64);
  CHECK(error_of([&] { nn::rotary_embedding_(ints, Tensor(), {}); }) ==
        w + "expected float32 or float64 x, got int64 [2 x 3 x 4 x 6] on cpu");
  Tensor broadcast = zeros({1, 1, 1, 6}).expand({2, 3, 4, 6});
  CHECK(has(error_of([&] { nn::rotary_embedding_(broadcast, Tensor(), {}); }),
            w + "expected x without broadcast (stride-0) dims (it is rotated in place)"));
}

TEST_CASE("RotaryEmbedding: errors naming the module, printing, configuration, state and model files") {
  Generator gen(7);
  const Tensor x = uniform({2, 3, 4, 6}, -1, 1, gen);
  nn::RotaryEmbedding m;
  CHECK(m.str() == "nn.RotaryEmbedding(theta=10000, half)");
  CHECK(nn::RotaryEmbedding(opts(nn::RotaryStyle::Interleaved, 500000, 32)).str() ==
        "nn.RotaryEmbedding(theta=500000, interleaved, rotary_dim=32)");
  CHECK(m.parameters().empty());
  CHECK(m.stateDict().empty());
  CHECK_THROWS_WITH_AS(m.forward(zeros({2, 3, 4, 5})),
                       "nn.RotaryEmbedding::updateOutput: expected an even head dim D >= 2 (rotary_dim 0: the whole "
                       "head rotates), got x [2 x 3 x 4 x 5]",
                       Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({4, 6})),
                       "nn.RotaryEmbedding::updateOutput: expected x [B x H x S x D] (4-d), got [4 x 6]", Error);
  CHECK_THROWS_WITH_AS(m.forward(zeros({2, 3, 4, 6}, DType::Int64)),
                       "nn.RotaryEmbedding::updateOutput: expected float32 or float64 input, got int64 [2 x 3 x 4 x 6] "
                       "on cpu",
                       Error);
  CHECK_THROWS_WITH_AS(
      m.backward(x, zeros({2, 3, 4, 4})),
      "nn.RotaryEmbedding::updateGradInput: expected gradOutput of the input's shape, dtype and device "
      "(float32 [2 x 3 x 4 x 6] on cpu), got float32 [2 x 3 x 4 x 4] on cpu",
      Error);
  m.setOffsets(from_vector<int64_t>({0, -3}, {2}));
  CHECK_THROWS_WITH_AS(m.forward(x), "nn.RotaryEmbedding::updateOutput: expected offsets >= 0, got -3 at batch entry 1",
                       Error);
  m.setOffsets(from_vector<int64_t>({0, 3, 4}, {3}));
  CHECK_THROWS_WITH_AS(m.forward(x), doctest::Contains("nn.RotaryEmbedding::updateOutput: expected offsets int64 [2]"),
                       Error);
  m.setOffsets(Tensor());
  m.options.rotaryDim = 7;  // a public field, replaced by hand
  CHECK_THROWS_WITH_AS(m.forward(x), doctest::Contains("nn.RotaryEmbedding::updateOutput: expected an even rotary_dim"),
                       Error);
  m.options.rotaryDim = 0;
  CHECK_THROWS_WITH_AS(nn::RotaryEmbedding(opts(nn::RotaryStyle::Half, -1)),
                       "nn.RotaryEmbedding: expected a finite theta > 0, got -1", Error);
  CHECK_THROWS_WITH_AS(nn::RotaryEmbedding(opts(nn::RotaryStyle::Half, 10000, 3)),
                       "nn.RotaryEmbedding: expected an even rotary_dim >= 0 (0: the whole head), got 3", Error);

  // configuration: every option back
  for (const nn::RotaryOptions& o : {opts(nn::RotaryStyle::Half), opts(nn::RotaryStyle::Interleaved, 1e6, 4),
                                     opts(nn::RotaryStyle::Half, 12345.5, 2)}) {
    const nn::RotaryEmbedding a(o);
    const auto back = std::dynamic_pointer_cast<nn::RotaryEmbedding>(nn::RotaryEmbedding::fromConfig(a.config()));
    REQUIRE(back);
    CHECK(back->options.style == o.style);
    CHECK(back->options.theta == o.theta);
    CHECK(back->options.rotaryDim == o.rotaryDim);
    CHECK(back->str() == a.str());
  }
  CHECK_THROWS_WITH_AS(nn::RotaryEmbedding::fromConfig(Json::parse(R"({"style": "spiral"})")),
                       doctest::Contains("expected style \"half\" or \"interleaved\", got \"spiral\""), Error);

  // a model file, written and read back
  TempDir dir("test_Rotary");
  auto saved = std::make_shared<nn::RotaryEmbedding>(opts(nn::RotaryStyle::Interleaved, 50000, 4));
  nn::save_model(*saved, dir / "rope");
  const nn::ModulePtr loaded = nn::load_model(dir / "rope");
  CHECK(loaded->str() == "nn.RotaryEmbedding(theta=50000, interleaved, rotary_dim=4)");
  CHECK(bits_equal(loaded->forward(x), saved->forward(x)));
}

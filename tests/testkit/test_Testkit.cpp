// test_Testkit.cpp: the testing kit's checks fail where they should, on the CPU: a module whose
// gradients, scale handling, NaN handling or empty batches are wrong on purpose is caught and
// named; correct ones pass. (The GPU side is exercised by every twin suite through
// tests/support, and by samples/extension's GPU test.)
#include <doctest/doctest.h>

#include <cmath>
#include <memory>

#include "convert/ModelFile.h"
#include "nn/Embedding.h"
#include "nn/ReLU.h"
#include "testkit/Testkit.h"
#include "tests/support/ErrorText.h"

namespace testing {
namespace {

using nn::testkit::Report;
using tensor::DType;
using tensor::Tensor;

// y = w x with one parameter w, and switches that make it wrong in one known way each.
struct Faults {
  double gradInputFactor = 1, gradWeightFactor = 1;
  bool ignoreScale = false, nanToZero = false, throwOnEmpty = false;
};

class Scale : public nn::Module {
 public:
  explicit Scale(std::string name = "test.Scale", Faults f = {}) : name_(std::move(name)), f_(f) {
    w = tensor::full({1}, 0.5, DType::Float32);
    gw = tensor::zeros({1}, DType::Float32);
  }
  std::string type_name() const override { return name_; }
  const Tensor& updateOutput(const Tensor& x) override {
    if (f_.throwOnEmpty && x.numel() == 0) throw tensor::Error(name_ + "::updateOutput: empty");
    output = x.mul(w.item());
    if (f_.nanToZero) {
      Tensor y = output.to(DType::Float64).contiguous().clone();
      for (int64_t i = 0; i < y.numel(); ++i)
        if (std::isnan(y.data<double>()[i])) y.data<double>()[i] = 0;
      output = y.to(x.dtype());
    }
    return output;
  }
  const Tensor& updateGradInput(const Tensor&, const Tensor& g) override {
    gradInput = g.mul(w.item() * f_.gradInputFactor);
    return gradInput;
  }
  void accGradParameters(const Tensor& x, const Tensor& g, double scale) override {
    if (x.numel() == 0) return;
    gw.add_((f_.ignoreScale ? 1.0 : scale) * f_.gradWeightFactor * x.mul(g).sum().item());
  }
  Tensor w, gw;

 protected:
  void visitState(nn::StateVisitor& v) override { v.parameter("weight", w, gw); }

 private:
  std::string name_;
  Faults f_;
};

Tensor input(tensor::Shape shape = {3, 4}, DType dt = DType::Float64) {
  tensor::Generator gen(1);
  return tensor::uniform(shape, -1, 1, gen, dt);
}

bool mentions(const Report& r, const std::string& part) { return has(r.str(), part); }

nn::testkit::TwinOptions on_cpu(DType dt = DType::Float32) {
  nn::testkit::TwinOptions o;
  o.device = tensor::Device::cpu();
  o.dtype = dt;
  return o;
}

}  // namespace

TEST_CASE("testkit::check_gradients passes a right module and names the wrong tensor of a wrong one") {
  Scale right;
  right.to(DType::Float64);
  const auto ok = nn::testkit::check_gradients(right, input());
  INFO(ok.str());
  CHECK(ok.ok());
  CHECK(ok.checked == 12 + 1);
  CHECK_NOTHROW(ok.require());

  Scale badInput("test.Scale", {.gradInputFactor = 1.1});
  badInput.to(DType::Float64);
  const auto r1 = nn::testkit::check_gradients(badInput, input());
  CHECK_FALSE(r1.ok());
  CHECK(r1.worst.rfind("input[", 0) == 0);
  CHECK_THROWS_AS(r1.require(), nn::testkit::Failure);

  Scale badWeight("test.Scale", {.gradWeightFactor = 1.1});
  badWeight.to(DType::Float64);
  const auto r2 = nn::testkit::check_gradients(badWeight, input());
  CHECK_FALSE(r2.ok());
  CHECK(r2.worst.rfind("weight[", 0) == 0);
  CHECK(has(error_of([&] { r2.require(); }), "max error"));
}

TEST_CASE("testkit::check_gradients skips kinks, samples big tensors and refuses float32") {
  nn::ReLU relu;
  const auto kinks = nn::testkit::check_gradients(relu, tensor::zeros({2, 3}, DType::Float64));
  CHECK(kinks.skipped == 6);
  CHECK_FALSE(kinks.ok());  // nothing left to check is a failure, not a pass
  nn::testkit::GradCheckOptions o;
  o.max_samples = 20;
  Scale s;
  s.to(DType::Float64);
  const auto sampled = nn::testkit::check_gradients(s, input({10, 100}), o);
  CHECK(sampled.ok());
  CHECK(sampled.checked <= 20 + 1);
  CHECK(
      has(error_of([&] { nn::testkit::check_gradients(s, input({3}, DType::Float32)); }), "expected a float64 input"));
}

TEST_CASE("testkit::check_gradients with check_input = false checks the parameters alone, at any input dtype") {
  nn::testkit::GradCheckOptions o;
  o.check_input = false;
  // the input's gradient is not read: a wrong one passes, and only the weight is counted
  Scale badInput("test.Scale", {.gradInputFactor = 1.1});
  badInput.to(DType::Float64);
  const auto r1 = nn::testkit::check_gradients(badInput, input(), o);
  INFO(r1.str());
  CHECK(r1.ok());
  CHECK(r1.checked == 1);
  CHECK(has(r1.subject, "parameter gradients"));
  // a wrong parameter gradient is still caught and named
  Scale badWeight("test.Scale", {.gradWeightFactor = 1.1});
  badWeight.to(DType::Float64);
  const auto r2 = nn::testkit::check_gradients(badWeight, input(), o);
  CHECK_FALSE(r2.ok());
  CHECK(r2.worst.rfind("weight[", 0) == 0);
  // an input that is not floating point: an Embedding's int64 indices
  nn::Embedding emb(4, 2);
  emb.to(DType::Float64);
  const Tensor idx = tensor::from_vector<int64_t>({3, 0, 3}, {3});
  CHECK(has(error_of([&] { nn::testkit::check_gradients(emb, idx); }),
            "testkit::check_gradients: expected a float64 input (gradient checks run in float64; check_input = false "
            "checks the parameters alone, at an input of any dtype), got int64 [3] on cpu"));
  const auto r3 = nn::testkit::check_gradients(emb, idx, o);
  INFO(r3.str());
  CHECK(r3.ok());
  CHECK(r3.checked == 4 * 2);
  // nothing asked: an error, not an empty pass
  o.check_parameters = false;
  CHECK(has(error_of([&] { nn::testkit::check_gradients(emb, idx, o); }),
            "testkit::check_gradients: expected check_input or check_parameters (or both), got neither"));
}

TEST_CASE("testkit::check_accumulation catches a module that ignores backward's scale") {
  Scale right, bad("test.Scale", {.ignoreScale = true});
  CHECK(nn::testkit::check_accumulation(right, input({3, 4}, DType::Float32)).ok());
  const Report r = nn::testkit::check_accumulation(bad, input({3, 4}, DType::Float32));
  CHECK_FALSE(r.ok());
  CHECK(mentions(r, "grad of weight: backward with scale 0.5"));
}

TEST_CASE("testkit::check_twin against a twin on the CPU: each wrong gradient is named, in each dtype") {
  for (DType dt : {DType::Float64, DType::Float32}) {
    for (bool noncontiguous : {false, true}) {
      Scale ref, twin("test.ScaleTwin");
      nn::testkit::TwinOptions o = on_cpu(dt);
      o.noncontiguous = noncontiguous;
      const Report r = nn::testkit::check_twin(ref, twin, input(), o);
      INFO(r.str());
      CHECK(r.ok());
      CHECK(r.checks >= 4);
    }
    Scale ref, badWeight("test.ScaleTwin", {.gradWeightFactor = 1.01});
    const Report r = nn::testkit::check_twin(ref, badWeight, input(), on_cpu(dt));
    INFO(r.str());
    CHECK_FALSE(r.ok());
    CHECK(r.failures.size() == 1);
    CHECK(mentions(r, "grad of weight"));
    Scale ref2, badInput("test.ScaleTwin", {.gradInputFactor = 1.01});
    CHECK(mentions(nn::testkit::check_twin(ref2, badInput, input(), on_cpu(dt)), "gradInput"));
  }
  // the built-in names are held to their pairing: nn.ReLU's twin is cudnn.ReLU
  nn::ReLU a, b;
  CHECK(mentions(nn::testkit::check_twin(a, b, input(), on_cpu()), "nn.ReLU is not the twin of nn.ReLU"));
}

TEST_CASE("testkit::check_twin_nonfinite and check_twin_empty_batch catch a twin that differs") {
  Scale ref, twin("test.ScaleTwin"), zeroing("test.ScaleTwin", {.nanToZero = true});
  CHECK(nn::testkit::check_twin_nonfinite(ref, twin, input(), {}, on_cpu()).ok());
  const Report r = nn::testkit::check_twin_nonfinite(ref, zeroing, input(), {}, on_cpu());
  CHECK_FALSE(r.ok());
  CHECK(mentions(r, "output"));
  CHECK(mentions(r, "differ in kind"));

  const Tensor empty = tensor::zeros({0, 4});
  Scale ref2, twin2("test.ScaleTwin"), throwing("test.ScaleTwin", {.throwOnEmpty = true});
  CHECK(nn::testkit::check_twin_empty_batch(ref2, twin2, empty, on_cpu()).ok());
  CHECK(mentions(nn::testkit::check_twin_empty_batch(ref2, throwing, empty, on_cpu()), "forward threw"));
  CHECK(has(error_of([&] { nn::testkit::check_twin_empty_batch(ref2, twin2, input(), on_cpu()); }),
            "expected an input with no elements"));
}

TEST_CASE(
    "testkit::check_model_file_roundtrip: a type model files do not know fails, naming it; registered, it passes") {
  Scale unknown("test.Unregistered");
  const Report r = nn::testkit::check_model_file_roundtrip(unknown, input({2, 3}, DType::Float32));
  CHECK_FALSE(r.ok());
  CHECK(mentions(r, "test.Unregistered"));
  nn::register_model_type("test.Scale",
                          nn::LeafModelFactory([](const tensor::Json&) { return std::make_shared<Scale>(); }));
  Scale known;
  Tensor(known.w).fill_(1.75);
  const Report ok = nn::testkit::check_model_file_roundtrip(known, input({2, 3}, DType::Float32));
  INFO(ok.str());
  CHECK(ok.ok());
}

TEST_CASE("testkit inputs and comparisons: non-contiguous copies, NaN/Inf positions, values by hand, reports") {
  for (const tensor::Shape& shape : std::vector<tensor::Shape>{{3}, {2, 3}, {1, 5}, {2, 1, 3}}) {
    const Tensor x = input(shape);
    const Tensor y = nn::testkit::noncontiguous_copy(x);
    CHECK_FALSE(y.is_contiguous());
    CHECK(tensor::max_abs_diff(y, x) == 0);
  }
  CHECK(has(error_of([] { nn::testkit::noncontiguous_copy(tensor::zeros({1})); }), "2 or more elements"));
  // NaN, +Inf, -Inf in the order the positions are listed
  const Tensor nf = nn::testkit::with_nonfinite(tensor::zeros({4}, DType::Float32), {3, 0});
  CHECK(nf.dtype() == DType::Float32);
  CHECK(nn::testkit::compare_values("with_nonfinite", nf, {INFINITY, 0, 0, NAN}).ok());
  const Report wrong = nn::testkit::compare_values("values", nf, {INFINITY, 0, 1, NAN});
  CHECK(wrong.failures.size() == 1);
  CHECK(mentions(wrong, "element 2: got 0, want 1"));

  Report outer;
  outer.subject = "outer";
  Report inner;
  inner.subject = "inner";
  inner.expect(true, "fine");
  inner.expect(false, "broken");
  outer.merge(inner);
  CHECK(outer.checks == 2);
  CHECK(outer.str() == "outer: 1 of 2 checks failed:\n  inner: broken");
  CHECK_THROWS_AS(outer.require(), nn::testkit::Failure);
}

}  // namespace testing

// test_CriterionBadInput.cpp: the bad-input matrix for the criteria (the modules' is
// test_BadInput.cpp): one row per criterion type; a wrong rank, a target of the wrong batch
// size and an integer input are errors naming the criterion and the offending shape or dtype;
// an input that is NaN everywhere gives a NaN loss; a non-contiguous input gives what its
// contiguous copy gives.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "nn/ClassNLLCriterion.h"
#include "nn/CrossEntropyCriterion.h"
#include "nn/MSECriterion.h"
#include "nn/SpatialCrossEntropyCriterion.h"
#include "nn/VolumetricCrossEntropyCriterion.h"
#include "tensor/Generator.h"
#include "tests/support/ErrorText.h"

using namespace tensor;
using namespace testing;

namespace {

struct CriterionSpec {
  std::string type;  // without "nn."
  std::function<nn::CriterionPtr()> make;
  Shape input;
  std::function<Tensor(const Shape& input)> target;  // a valid target for an input of that shape
  Shape wrongRank;                                   // an input rank it refuses ({}: none)
};

// Class indices in [0, classes) for every position but the class dimension (dim 1, or 0 for one sample).
Tensor class_target(const Shape& input) {
  Shape t = input;
  t.erase(t.begin() + (input.size() == 1 ? 0 : 1));
  const int64_t classes = input[input.size() == 1 ? 0 : 1];
  Generator gen(3);
  return uniform(t, 0, static_cast<double>(classes), gen, DType::Float64)
      .floor()
      .clamp(0, classes - 1)
      .to(DType::Int64);
}

const std::vector<CriterionSpec>& criterion_table() {
  static const std::vector<CriterionSpec> table = {
      {"ClassNLLCriterion",
       [] { return nn::CriterionPtr(std::make_shared<nn::ClassNLLCriterion>()); },
       {4, 5},
       class_target,
       {2, 4, 5}},
      {"CrossEntropyCriterion",
       [] { return nn::CriterionPtr(std::make_shared<nn::CrossEntropyCriterion>()); },
       {4, 5},
       class_target,
       {2, 4, 5}},
      {"MSECriterion",
       [] { return nn::CriterionPtr(std::make_shared<nn::MSECriterion>()); },
       {3, 4},
       [](const Shape& s) {
         Generator gen(4);
         return uniform(s, -1, 1, gen, DType::Float64);
       },
       {}},
      {"SpatialCrossEntropyCriterion",
       [] { return nn::CriterionPtr(std::make_shared<nn::SpatialCrossEntropyCriterion>()); },
       {2, 3, 4, 4},
       class_target,
       {2, 3, 4}},
      {"VolumetricCrossEntropyCriterion",
       [] { return nn::CriterionPtr(std::make_shared<nn::VolumetricCrossEntropyCriterion>()); },
       {2, 3, 2, 3, 3},
       class_target,
       {2, 3, 4, 4}},
  };
  return table;
}

Tensor input_of(const Shape& s) {
  Generator gen(5);
  return uniform(s, -1, 1, gen, DType::Float64);
}

}  // namespace

TEST_CASE("bad-input matrix (criteria): a wrong rank is an error naming the criterion and the input's shape") {
  for (const CriterionSpec& s : criterion_table()) {
    if (s.wrongRank.empty()) continue;
    INFO(s.type, ", input ", shape_str(s.wrongRank));
    nn::CriterionPtr c = s.make();
    const std::string e = error_of([&] { c->forward(input_of(s.wrongRank), s.target(s.input)); });
    CHECK(has(e, "nn." + s.type));
    CHECK(has(e, shape_str(s.wrongRank)));
  }
}

TEST_CASE("bad-input matrix (criteria): a target of another batch size is an error naming the criterion and it") {
  for (const CriterionSpec& s : criterion_table()) {
    Shape bigger = s.input;
    bigger[0] += 1;
    const Tensor target = s.target(bigger);
    INFO(s.type, ", target ", shape_str(target.sizes()));
    nn::CriterionPtr c = s.make();
    const std::string e = error_of([&] { c->forward(input_of(s.input), target); });
    CHECK(has(e, "nn." + s.type));
    CHECK(has(e, shape_str(target.sizes())));
  }
}

TEST_CASE("bad-input matrix (criteria): an integer input is an error naming the criterion and the dtype") {
  for (const CriterionSpec& s : criterion_table()) {
    INFO(s.type);
    nn::CriterionPtr c = s.make();
    const Tensor target = s.target(s.input);
    const std::string e = error_of([&] { c->forward(zeros(s.input, DType::Int64), target); });
    CHECK(has(e, "nn." + s.type));
    CHECK(has(e, "int64"));
  }
}

TEST_CASE("bad-input matrix (criteria): an input NaN everywhere gives a NaN loss, in float32 and float64") {
  for (const CriterionSpec& s : criterion_table()) {
    for (DType dt : {DType::Float64, DType::Float32}) {
      INFO(s.type, " in ", name(dt));
      nn::CriterionPtr c = s.make();
      const Tensor target = s.type == "MSECriterion" ? s.target(s.input).to(dt) : s.target(s.input);
      const double loss = c->forward(full(s.input, std::numeric_limits<double>::quiet_NaN(), dt), target);
      CHECK(std::isnan(loss));
    }
  }
}

TEST_CASE("bad-input matrix (criteria): a non-contiguous input gives its contiguous copy's loss and gradInput") {
  for (const CriterionSpec& s : criterion_table()) {
    INFO(s.type);
    // the same values seen through a transposed copy: the first two dimensions swapped twice
    const Tensor x = input_of(s.input);
    const Tensor strided = x.transpose(0, 1).contiguous().transpose(0, 1);
    REQUIRE_FALSE(strided.is_contiguous());
    const Tensor target = s.target(s.input);
    nn::CriterionPtr a = s.make(), b = s.make();
    CHECK(a->forward(x, target) == b->forward(strided, target));
    const Tensor ga = a->backward(x, target).clone(), gb = b->backward(strided, target).clone();
    CHECK(ga.sizes() == gb.sizes());
    CHECK(ga.sub(gb).abs().max().item() == 0);
  }
}

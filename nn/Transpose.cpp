// Transpose.cpp
#include "nn/Transpose.h"

#include "nn/Buffers.h"
#include "nn/ModuleConfig.h"

namespace nn {

Transpose::Transpose(Pairs permutations_) : permutations(std::move(permutations_)) {}

Transpose::Pairs Transpose::resolve(const Tensor& input, const char* method) const {
  const int64_t rank = input.dim();
  Pairs pairs;
  for (auto [a, b] : permutations) {
    const int64_t da = a < 0 ? a + rank : a, db = b < 0 ? b + rank : b;
    if (da < 0 || da >= rank || db < 0 || db >= rank) {
      throw Error(where(method) + "expected an input with dimensions " + std::to_string(a) + " and " +
                  std::to_string(b) + ", got " + tensor::shape_str(input.sizes()));
    }
    pairs.emplace_back(da, db);
  }
  return pairs;
}

const Tensor& Transpose::updateOutput(const Tensor& input) {
  Tensor y = input;
  for (auto [a, b] : resolve(input, "updateOutput")) y = y.transpose(a, b);
  output = y;
  return output;
}

const Tensor& Transpose::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  const Pairs pairs = resolve(input, "updateGradInput");
  Shape expected = input.sizes();
  for (auto [a, b] : pairs) std::swap(expected[a], expected[b]);
  if (!gradOutput.defined() || gradOutput.sizes() != expected) {
    throw Error(where("updateGradInput") + "expected gradOutput of the output's shape " + tensor::shape_str(expected) +
                " (input " + tensor::shape_str(input.sizes()) + "), got " +
                (gradOutput.defined() ? tensor::shape_str(gradOutput.sizes()) : std::string("undefined")));
  }
  Tensor g = gradOutput;
  for (auto it = pairs.rbegin(); it != pairs.rend(); ++it) g = g.transpose(it->first, it->second);
  gradInput = g;
  return gradInput;
}

std::string Transpose::str() const {
  std::string s = type_name() + "(";
  for (size_t i = 0; i < permutations.size(); ++i) {
    s +=
        (i ? ", {" : "{") + std::to_string(permutations[i].first) + ", " + std::to_string(permutations[i].second) + "}";
  }
  return s + ")";
}

tensor::Json Transpose::config() const {
  // the pairs flattened: [a0, b0, a1, b1, ...]
  tensor::Json::Array flat;
  for (auto [a, b] : permutations) {
    flat.emplace_back(a);
    flat.emplace_back(b);
  }
  return tensor::Json::Object{{"permutations", flat}};
}

ModulePtr Transpose::fromConfig(const tensor::Json& config) {
  ConfigReader c(config, kTypeName);
  const Shape flat = c.shape("permutations");
  c.finish();
  if (flat.size() % 2 != 0) {
    throw Error(std::string(kTypeName) + " config: expected 'permutations' of pairs (an even count), got " +
                std::to_string(flat.size()) + " entries");
  }
  Pairs pairs;
  for (size_t i = 0; i < flat.size(); i += 2) pairs.emplace_back(flat[i], flat[i + 1]);
  return std::make_shared<Transpose>(std::move(pairs));
}

}  // namespace nn

// test_VisionTransformer.cpp: the Fashion-MNIST sample's Vision Transformer on the CPU: the
// class-token embedding's gradients by finite differences, its errors and model-file type,
// the network's shape and parameter names.
#include <doctest/doctest.h>

#include <filesystem>

#include "convert/ModelFile.h"
#include "samples/VisionTransformer.h"
#include "tests/support/GradCheck.h"

using namespace tensor;
using namespace testing;

TEST_CASE("ClassTokenEmbedding: tokens, class token and positions; finite differences") {
  Generator gen(2511);
  samples::ClassTokenEmbedding m(3, 4);
  m.to(DType::Float64);
  m.clsToken.copy_(uniform({3}, -1, 1, gen));
  m.posEmbedding.copy_(uniform({5, 3}, -1, 1, gen));
  const Tensor x = uniform({2, 3, 2, 2}, -1, 1, gen, DType::Float64);  // [N x dim x 2 x 2]: 4 tokens
  const Tensor y = m.forward(x);
  REQUIRE(y.sizes() == Shape{2, 5, 3});
  // token 0 is the class token, token 1 + t the input's position t (row-major over the maps)
  CHECK(y.get({1, 0, 2}) == doctest::Approx(m.clsToken.get({2}) + m.posEmbedding.get({0, 2})));
  CHECK(y.get({1, 3, 1}) == doctest::Approx(x.get({1, 1, 1, 0}) + m.posEmbedding.get({3, 1})));
  expect_gradients_ok(m, x);
  CHECK_THROWS_WITH_AS(m.forward(zeros({2, 3, 3, 3}, DType::Float64)),
                       "samples.ClassTokenEmbedding::updateOutput: expected input [N x 3 x ...] with 4 positions, got "
                       "[2 x 3 x 3 x 3]",
                       Error);
  CHECK_THROWS_WITH_AS(samples::ClassTokenEmbedding(0, 4),
                       "samples.ClassTokenEmbedding: expected dim >= 1 and tokens >= 1, got 0 and 4", Error);
}

TEST_CASE("vision_transformer: a strided convolution, the class token, encoder layers; a model-file type") {
  Generator gen(2512);
  samples::register_vit_types();
  samples::register_vit_types();  // twice is fine
  auto net = samples::vision_transformer(16, 1, 0.0);
  const Tensor x = uniform({3, 1, 28, 28}, -1, 1, gen);
  CHECK(net->forward(x).sizes() == Shape{3, 10});
  const auto names = net->namedParameters();
  REQUIRE(names.size() > 4);
  CHECK(names[0].first == "0.weight");  // the patch projection: [16 x 1 x 7 x 7]
  CHECK(names[0].second.sizes() == Shape{16, 1, 7, 7});
  CHECK(names[2].first == "1.cls_token");
  CHECK(names[3].first == "1.pos_embedding");
  const std::string path = (std::filesystem::temp_directory_path() / "test_VisionTransformer_model").string();
  nn::save_model(*net, path);
  auto back = std::dynamic_pointer_cast<nn::Sequential>(nn::load_model(path));
  REQUIRE(back);
  CHECK(back->get(1)->type_name() == "samples.ClassTokenEmbedding");
  CHECK(max_abs_diff(back->forward(x), net->forward(x)) == 0);
}

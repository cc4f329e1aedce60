// VisionTransformer.h: the Fashion-MNIST sample's Vision Transformer (Dosovitskiy et al.
// 2020), small enough to train on a CPU: PatchEmbedding cuts [N x C x H x W] images into
// p x p patches, projects each to `dim` features, prepends a learned class token and adds
// learned position embeddings, giving [N x (1 + HW/p^2) x dim] tokens (batch first); then
// pre-norm nn::TransformerEncoderLayers, the class token's features (Select), LayerNorm and a
// Linear classifier.
#pragma once

#include <memory>

#include "nn/Module.h"
#include "nn/Sequential.h"

namespace samples {

class PatchEmbedding : public nn::Module {
 public:
  PatchEmbedding(int64_t channels, int64_t imageSize, int64_t patch, int64_t dim);

  const nn::Tensor& updateOutput(const nn::Tensor& input) override;
  const nn::Tensor& updateGradInput(const nn::Tensor& input, const nn::Tensor& gradOutput) override;
  void accGradParameters(const nn::Tensor& input, const nn::Tensor& gradOutput, double scale = 1.0) override;
  static constexpr std::string_view kTypeName = "samples.PatchEmbedding";
  std::string type_name() const override { return std::string(kTypeName); }
  std::string str() const override;
  tensor::Json config() const override;
  static nn::ModulePtr fromConfig(const tensor::Json& config);

  int64_t channels, imageSize, patch, dim;
  nn::Tensor weight, bias, clsToken, posEmbedding;  // [dim x C p p], [dim], [dim], [1 + T x dim]
  nn::Tensor gradWeight, gradBias, gradClsToken, gradPosEmbedding;

 protected:
  void visitState(nn::StateVisitor& v) override;

 private:
  int64_t tokens() const { return (imageSize / patch) * (imageSize / patch); }
  nn::Tensor patches(const nn::Tensor& input) const;  // [N T x C p p]
  nn::Tensor patches_;                                // the last forward's
};

// Registers samples.PatchEmbedding as a model-file type (for --save and load_model).
void register_vit_types();

// ViT for 28 x 28 grey images: 7 x 7 patches (16 tokens + the class token), `layers` encoder
// layers of width `dim` (4 heads, feed-forward 2 dim, GELU, dropout 0.1), 10 scores.
std::shared_ptr<nn::Sequential> vision_transformer(int64_t dim = 64, int64_t layers = 3);

}  // namespace samples

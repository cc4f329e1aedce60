// VisionTransformer.cpp
#include "samples/VisionTransformer.h"

#include <cmath>

#include "convert/ModelFile.h"
#include "nn/LayerNorm.h"
#include "nn/Linear.h"
#include "nn/ModuleConfig.h"
#include "nn/Select.h"
#include "nn/TransformerEncoderLayer.h"

namespace samples {

using nn::Tensor;

PatchEmbedding::PatchEmbedding(int64_t channels_, int64_t imageSize_, int64_t patch_, int64_t dim_)
    : channels(channels_), imageSize(imageSize_), patch(patch_), dim(dim_) {
  if (channels < 1 || patch < 1 || dim < 1 || imageSize < patch || imageSize % patch != 0) {
    throw tensor::Error(std::string(kTypeName) + ": expected an image size divisible by the patch size, got " +
                        std::to_string(imageSize) + " and " + std::to_string(patch));
  }
  const int64_t in = channels * patch * patch;
  const double bound = 1 / std::sqrt(static_cast<double>(in));
  weight = tensor::uniform({dim, in}, -bound, bound);
  bias = tensor::uniform({dim}, -bound, bound);
  clsToken = tensor::normal({dim}, 0, 0.02);
  posEmbedding = tensor::normal({1 + tokens(), dim}, 0, 0.02);
  gradWeight = tensor::zeros({dim, in});
  gradBias = tensor::zeros({dim});
  gradClsToken = tensor::zeros({dim});
  gradPosEmbedding = tensor::zeros({1 + tokens(), dim});
}

void PatchEmbedding::visitState(nn::StateVisitor& v) {
  v.parameter("weight", weight, gradWeight);
  v.parameter("bias", bias, gradBias);
  v.parameter("cls_token", clsToken, gradClsToken);
  v.parameter("pos_embedding", posEmbedding, gradPosEmbedding);
}

// [N x C x H x W] -> [N x (H/p) x (W/p) x C x p x p] rows: a permuted view, packed
Tensor PatchEmbedding::patches(const Tensor& input) const {
  const int64_t N = input.size(0), g = imageSize / patch;
  if (input.dim() != 4 || input.size(1) != channels || input.size(2) != imageSize || input.size(3) != imageSize) {
    throw tensor::Error(where("updateOutput") + "expected input [N x " + std::to_string(channels) + " x " +
                        std::to_string(imageSize) + " x " + std::to_string(imageSize) + "], got " +
                        tensor::shape_str(input.sizes()));
  }
  return input.view({N, channels, g, patch, g, patch})
      .permute({0, 2, 4, 1, 3, 5})
      .contiguous()
      .view({N * g * g, channels * patch * patch});
}

const Tensor& PatchEmbedding::updateOutput(const Tensor& input) {
  patches_ = patches(input);
  const int64_t N = input.size(0), T = tokens();
  const Tensor tok = patches_.matmul(weight.t()).view({N, T, dim});  // [N x T x dim]
  output = tensor::empty({N, 1 + T, dim}, input.dtype());
  output.narrow(1, 0, 1).copy_(clsToken.view({1, 1, dim}).expand({N, 1, dim}));
  output.narrow(1, 1, T).copy_(tok.add(bias.view({1, 1, dim}).expand({N, T, dim})));
  output.add_(posEmbedding.unsqueeze(0).expand({N, 1 + T, dim}));
  return output;
}

const Tensor& PatchEmbedding::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  const int64_t N = input.size(0), g = imageSize / patch, T = tokens();
  const Tensor gTok = gradOutput.narrow(1, 1, T).contiguous().view({N * T, dim});
  const Tensor gp = gTok.matmul(weight);  // [N T x C p p]
  gradInput = tensor::empty(input.sizes(), input.dtype());
  gradInput.view({N, channels, g, patch, g, patch})
      .permute({0, 2, 4, 1, 3, 5})
      .copy_(gp.view({N, g, g, channels, patch, patch}));
  return gradInput;
}

void PatchEmbedding::accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale) {
  const int64_t N = input.size(0), T = tokens();
  const Tensor gTok = gradOutput.narrow(1, 1, T).contiguous().view({N * T, dim});
  gradWeight.add_(gTok.t().matmul(patches_), scale);
  gradBias.add_(gTok.sum(0), scale);
  gradClsToken.add_(gradOutput.select(1, 0).sum(0), scale);
  gradPosEmbedding.add_(gradOutput.sum(0), scale);
}

std::string PatchEmbedding::str() const {
  return type_name() + "(" + std::to_string(channels) + "x" + std::to_string(imageSize) + "x" +
         std::to_string(imageSize) + ", patch " + std::to_string(patch) + " -> " + std::to_string(1 + tokens()) +
         " tokens of " + std::to_string(dim) + ")";
}

tensor::Json PatchEmbedding::config() const {
  return tensor::Json::Object{{"channels", channels}, {"imageSize", imageSize}, {"patch", patch}, {"dim", dim}};
}

nn::ModulePtr PatchEmbedding::fromConfig(const tensor::Json& config) {
  nn::ConfigReader c(config, kTypeName);
  const int64_t ch = c.integer("channels"), size = c.integer("imageSize"), p = c.integer("patch"), d = c.integer("dim");
  c.finish();
  return std::make_shared<PatchEmbedding>(ch, size, p, d);
}

void register_vit_types() {
  static bool done = false;
  if (done) return;
  nn::register_model_type(std::string(PatchEmbedding::kTypeName), nn::LeafModelFactory(&PatchEmbedding::fromConfig));
  done = true;
}

std::shared_ptr<nn::Sequential> vision_transformer(int64_t dim, int64_t layers) {
  auto net = std::make_shared<nn::Sequential>();
  net->add(std::make_shared<PatchEmbedding>(1, 28, 7, dim));
  for (int64_t l = 0; l < layers; ++l) {
    net->add(std::make_shared<nn::TransformerEncoderLayer>(dim, 4, 2 * dim, 0.1, "gelu", /*batchFirst=*/true,
                                                           /*normFirst=*/true));
  }
  net->add(std::make_shared<nn::Select>(1, 0));  // the class token
  net->add(std::make_shared<nn::LayerNorm>(tensor::Shape{dim}));
  net->add(std::make_shared<nn::Linear>(dim, 10));
  return net;
}

}  // namespace samples

// VisionTransformer.cpp
#include "samples/VisionTransformer.h"

#include <mutex>

#include "convert/Convert.h"
#include "convert/ModelFile.h"
#include "nn/Buffers.h"
#include "nn/LayerNorm.h"
#include "nn/Linear.h"
#include "nn/ModuleConfig.h"
#include "nn/Select.h"
#include "nn/SpatialConvolution.h"
#include "nn/TransformerEncoderLayer.h"

namespace samples {

using nn::Tensor;

ClassTokenEmbedding::ClassTokenEmbedding(int64_t dim_, int64_t tokens_) : dim(dim_), tokens(tokens_) {
  if (dim < 1 || tokens < 1) {
    throw tensor::Error(std::string(kTypeName) + ": expected dim >= 1 and tokens >= 1, got " + std::to_string(dim) +
                        " and " + std::to_string(tokens));
  }
  clsToken = tensor::normal({dim}, 0, 0.02);
  posEmbedding = tensor::normal({1 + tokens, dim}, 0, 0.02);
  gradClsToken = tensor::zeros({dim});
  gradPosEmbedding = tensor::zeros({1 + tokens, dim});
}

void ClassTokenEmbedding::visitState(nn::StateVisitor& v) {
  v.parameter("cls_token", clsToken, gradClsToken);
  v.parameter("pos_embedding", posEmbedding, gradPosEmbedding);
}

int64_t ClassTokenEmbedding::checkInput(const Tensor& input, const char* method) const {
  nn::check_parameter(*this, method, "cls_token", clsToken, {dim});
  nn::check_parameter(*this, method, "pos_embedding", posEmbedding, {1 + tokens, dim});
  nn::check_matches(where(method), input, clsToken, "input", "cls_token");
  if (input.dim() < 2 || input.size(1) != dim || input.numel() != input.size(0) * dim * tokens) {
    throw tensor::Error(where(method) + "expected input [N x " + std::to_string(dim) + " x ...] with " +
                        std::to_string(tokens) + " positions, got " + tensor::shape_str(input.sizes()));
  }
  return input.size(0);
}

// output[n, 0] = cls_token, output[n, 1 + t] = input[n, :, t]; then + pos_embedding
const Tensor& ClassTokenEmbedding::updateOutput(const Tensor& input) {
  const int64_t N = checkInput(input, "updateOutput");
  nn::ensure(output, {N, 1 + tokens, dim}, input);
  output.narrow(1, 1, tokens).copy_(input.reshape({N, dim, tokens}).transpose(1, 2));
  output.narrow(1, 0, 1).copy_(clsToken.view({1, 1, dim}).expand({N, 1, dim}));
  output.add_(posEmbedding);
  return output;
}

const Tensor& ClassTokenEmbedding::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  const int64_t N = checkInput(input, "updateGradInput");
  if (gradOutput.sizes() != tensor::Shape{N, 1 + tokens, dim}) {
    throw tensor::Error(where("updateGradInput") + "expected gradOutput [" + std::to_string(N) + " x " +
                        std::to_string(1 + tokens) + " x " + std::to_string(dim) + "], got " +
                        tensor::shape_str(gradOutput.sizes()));
  }
  nn::ensure(gradInput, input.sizes(), input);
  gradInput.view({N, dim, tokens}).copy_(gradOutput.narrow(1, 1, tokens).transpose(1, 2));
  return gradInput;
}

void ClassTokenEmbedding::accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale) {
  checkInput(input, "accGradParameters");
  nn::check_parameter(*this, "accGradParameters", "cls_token", clsToken, {dim}, &gradClsToken);
  nn::check_parameter(*this, "accGradParameters", "pos_embedding", posEmbedding, {1 + tokens, dim}, &gradPosEmbedding);
  const Tensor perPosition = gradOutput.sum(0);  // [1 + tokens x dim]
  gradPosEmbedding.add_(perPosition, scale);
  gradClsToken.add_(perPosition.select(0, 0), scale);
}

std::string ClassTokenEmbedding::str() const {
  return type_name() + "(" + std::to_string(tokens) + " tokens + class token, dim " + std::to_string(dim) + ")";
}

tensor::Json ClassTokenEmbedding::config() const { return tensor::Json::Object{{"dim", dim}, {"tokens", tokens}}; }

nn::ModulePtr ClassTokenEmbedding::fromConfig(const tensor::Json& config) {
  nn::ConfigReader c(config, kTypeName);
  const int64_t d = c.integer("dim"), t = c.integer("tokens");
  c.finish();
  return std::make_shared<ClassTokenEmbedding>(d, t);
}

void register_vit_types() {
  static std::once_flag once;
  std::call_once(once, [] {
    nn::register_model_type(std::string(ClassTokenEmbedding::kTypeName),
                            nn::LeafModelFactory(&ClassTokenEmbedding::fromConfig));
    nn::register_model_type(
        std::string(CudnnClassTokenEmbedding::kTypeName),
        nn::LeafModelFactory([](const tensor::Json& config) -> nn::ModulePtr {
          auto m = ClassTokenEmbedding::fromConfig(config);
          return std::make_shared<CudnnClassTokenEmbedding>(std::move(dynamic_cast<ClassTokenEmbedding&>(*m)));
        }));
    nn::register_twin<ClassTokenEmbedding, CudnnClassTokenEmbedding>();
  });
}

std::shared_ptr<nn::Sequential> vision_transformer(int64_t dim, int64_t layers, double dropout) {
  const int64_t channels = 1, image = 28, patch = 7, tokens = (image / patch) * (image / patch);
  auto net = std::make_shared<nn::Sequential>();
  // one linear map of each patch: kernel and stride the patch size
  net->add(std::make_shared<nn::SpatialConvolution>(channels, dim, patch, patch, patch, patch));
  net->add(std::make_shared<ClassTokenEmbedding>(dim, tokens));
  for (int64_t l = 0; l < layers; ++l) {
    net->add(std::make_shared<nn::TransformerEncoderLayer>(dim, 4, 2 * dim, dropout, "gelu", /*batchFirst=*/true,
                                                           /*normFirst=*/true));
  }
  net->add(std::make_shared<nn::Select>(1, 0));  // the class token
  net->add(std::make_shared<nn::LayerNorm>(tensor::Shape{dim}));
  net->add(std::make_shared<nn::Linear>(dim, 10));
  return net;
}

}  // namespace samples

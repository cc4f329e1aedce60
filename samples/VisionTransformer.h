// VisionTransformer.h: the Fashion-MNIST sample's Vision Transformer (Dosovitskiy et al.
// 2020), small enough to train on a CPU. The patch embedding is a strided convolution (kernel
// and stride the patch size, `dim` output planes: one linear map of each p x p patch) followed
// by ClassTokenEmbedding, which turns the [N x dim x H/p x W/p] maps into tokens, prepends a
// learned class token and adds learned position embeddings: [N x (1 + HW/p^2) x dim] (batch
// first). Then pre-norm nn::TransformerEncoderLayers, the class token's features (Select),
// LayerNorm and a Linear classifier. Every module has a cudnn twin (ClassTokenEmbedding's is
// CudnnClassTokenEmbedding, registered by register_vit_types), so convert() puts the whole
// network on the GPU.
#pragma once

#include <memory>

#include "nn/Module.h"
#include "nn/Sequential.h"

namespace samples {

class ClassTokenEmbedding : public nn::Module {
 public:
  ClassTokenEmbedding(int64_t dim, int64_t tokens);

  // input [N x dim x ...] with `tokens` positions after dim (a convolution's maps), any device
  // and float dtype of the parameters'
  const nn::Tensor& updateOutput(const nn::Tensor& input) override;
  const nn::Tensor& updateGradInput(const nn::Tensor& input, const nn::Tensor& gradOutput) override;
  void accGradParameters(const nn::Tensor& input, const nn::Tensor& gradOutput, double scale = 1.0) override;
  static constexpr std::string_view kTypeName = "samples.ClassTokenEmbedding";
  std::string type_name() const override { return std::string(kTypeName); }
  std::string str() const override;
  tensor::Json config() const override;
  static nn::ModulePtr fromConfig(const tensor::Json& config);

  int64_t dim, tokens;
  nn::Tensor clsToken, posEmbedding;  // [dim], [1 + tokens x dim]
  nn::Tensor gradClsToken, gradPosEmbedding;

 protected:
  void visitState(nn::StateVisitor& v) override;

 private:
  int64_t checkInput(const nn::Tensor& input, const char* method) const;  // N
};

// The twin: the same tensor operations (strided copies, broadcast adds, sums over the batch),
// which run on the GPU as they are, for CUDA tensors in any float dtype.
class CudnnClassTokenEmbedding : public ClassTokenEmbedding {
 public:
  explicit CudnnClassTokenEmbedding(ClassTokenEmbedding&& m) : ClassTokenEmbedding(std::move(m)) {}
  static constexpr std::string_view kTypeName = "samples.cudnn.ClassTokenEmbedding";
  std::string type_name() const override { return std::string(kTypeName); }
  bool computesOn(tensor::Device d) const override { return d.is_cuda(); }
  nn::Backend backendKind() const override { return nn::Backend::cudnn; }
};

// Registers both as model-file types (for --save and load_model) and as a twin pair for
// convert(). Idempotent.
void register_vit_types();

// ViT for 28 x 28 grey images: 7 x 7 patches (16 tokens + the class token), `layers` encoder
// layers of width `dim` (4 heads, feed-forward 2 dim, GELU, dropout 0.1), 10 scores.
std::shared_ptr<nn::Sequential> vision_transformer(int64_t dim = 64, int64_t layers = 3, double dropout = 0.1);

}  // namespace samples

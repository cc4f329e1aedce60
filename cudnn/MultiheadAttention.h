// MultiheadAttention.h: cudnn.MultiheadAttention, nn::MultiheadAttention on CUDA tensors in
// float32, float64, float16 and bfloat16. The nn module's code runs as it is (head views,
// copies, the cross-attention and key-length plumbing are tensor operations); the twin
// overrides its primitives only: the projections are cuBLAS GEMMs (cudnn::gemm, the bias
// broadcast first and its gradient a GEMM against a ones vector, as cudnn::Linear), and the
// attention is cudnn::sdpa, cuDNN's fused flash attention where it takes the problem
// (cudnn/ops/attention.h), with grouped-query heads and masks as the nn module hands them; RoPE
// is cudnn::rotary_embedding_ and the KV cache write one kernel reading the cache's device
// lengths (cudnn/kernels/KVCache.h), so a captured decode step replays correctly.
#pragma once

#include "cudnn/Twin.h"
#include "nn/MultiheadAttention.h"

namespace cudnn {

class MultiheadAttention : public Twin<nn::MultiheadAttention> {
 public:
  using Twin::Twin;

 protected:
  void checkInputType(const std::string& where, const tensor::Tensor& input) const override;
  void linear(const tensor::Tensor& x, const tensor::Tensor& weight, const tensor::Tensor& bias,
              tensor::Tensor& out) override;
  void linearAdding(const tensor::Tensor& x, const tensor::Tensor& weight, const tensor::Tensor& bias,
                    const tensor::Tensor& addend, tensor::Tensor& out) override;
  void linearGradInput(const tensor::Tensor& gy, const tensor::Tensor& weight, tensor::Tensor& gradX) override;
  void linearGradParameters(const tensor::Tensor& x, const tensor::Tensor& gy, tensor::Tensor& gradWeight,
                            tensor::Tensor& gradBias, double scale) override;
  void attention(const tensor::Tensor& q, const tensor::Tensor& k, const tensor::Tensor& v,
                 const nn::SdpaOptions& options, nn::SdpaSaved& saved, tensor::Tensor out) override;
  void attentionBackward(const tensor::Tensor& q, const tensor::Tensor& k, const tensor::Tensor& v,
                         const tensor::Tensor& out, const tensor::Tensor& gradOut, const nn::SdpaOptions& options,
                         const nn::SdpaSaved& saved, nn::SdpaGrads into) override;
  void rotary(tensor::Tensor& qOrK, const tensor::Tensor& offsets, const nn::RotaryOptions& options,
              bool inverse) override;
  void cacheWrite(const tensor::Tensor& k, const tensor::Tensor& v, tensor::Tensor& cacheK, tensor::Tensor& cacheV,
                  const tensor::Tensor& lengths, const std::vector<int64_t>& hostLengths) override;

 private:
  tensor::Tensor ones_;  // [rows x 1] of ones, for the bias gradients
};

}  // namespace cudnn

// RotaryEmbedding.cpp: nn::RotaryEmbedding's passes with the CUDA op.
#include "cudnn/RotaryEmbedding.h"

#include "cudnn/Functional.h"

namespace cudnn {

const tensor::Tensor& RotaryEmbedding::updateOutput(const tensor::Tensor& input) {
  checkCudaInput("updateOutput", input);
  return rotateInto(output, "updateOutput", input, nullptr, &cudnn::rotary_embedding_);
}

const tensor::Tensor& RotaryEmbedding::updateGradInput(const tensor::Tensor& input, const tensor::Tensor& gradOutput) {
  checkCudaGrad("updateGradInput", input, gradOutput);
  return rotateInto(gradInput, "updateGradInput", input, &gradOutput, &cudnn::rotary_embedding_);
}

}  // namespace cudnn

// Embedding.cpp: checks and buffers around kernels::embedding_*, as nn::Embedding.
#include "cudnn/Embedding.h"

#include "cudnn/core/Descriptors.h"
#include "cudnn/kernels/Embedding.h"
#include "nn/Buffers.h"
#include "tensor/Cuda.h"

namespace cudnn {

tensor::Tensor Embedding::checked(const tensor::Tensor& input, const tensor::Tensor* gradOutput,
                                  const char* method) const {
  check_on_device(where(method), input, weight);
  checkParameters(method, false);
  checkIndexDType(input, method);
  if (gradOutput) {
    check_cuda(where(method), *gradOutput, "gradOutput");
    checkGradOutput(input, *gradOutput, method);
  }
  const tensor::Tensor idx = input.contiguous();
  if (tensor::cuda::Graph::capturing(idx.device().index)) return idx;  // no read-back while capturing
  int64_t value = 0;
  const int64_t at = kernels::embedding_first_bad_index(idx, numEmbeddings, value);
  if (at >= 0) throwBadIndex(input, at, value, method);
  return idx;
}

void Embedding::accumulate(const tensor::Tensor& idx, const tensor::Tensor& gradOutput, double scale) {
  checkParameters("accGradParameters", true);
  kernels::embedding_backward(idx, gradOutput.contiguous(), gradWeight, paddingIdx.value_or(-1), scale);
}

const tensor::Tensor& Embedding::updateOutput(const tensor::Tensor& input) {
  const tensor::Tensor idx = checked(input, nullptr, "updateOutput");
  tensor::Shape shape = input.sizes();
  shape.push_back(embeddingDim);
  nn::ensure(output, shape, weight);
  kernels::embedding_forward(idx, weight.contiguous(), output);
  return output;
}

const tensor::Tensor& Embedding::updateGradInput(const tensor::Tensor& input, const tensor::Tensor& gradOutput) {
  checked(input, &gradOutput, "updateGradInput");
  gradInput = tensor::Tensor();
  return gradInput;
}

void Embedding::accGradParameters(const tensor::Tensor& input, const tensor::Tensor& gradOutput, double scale) {
  accumulate(checked(input, &gradOutput, "accGradParameters"), gradOutput, scale);
}

// One check (one read-back) for both halves; errors name updateGradInput, as nn's backward.
void Embedding::backwardImpl(const tensor::Tensor& input, const tensor::Tensor& gradOutput, double scale) {
  const tensor::Tensor idx = checked(input, &gradOutput, "updateGradInput");
  gradInput = tensor::Tensor();
  accumulate(idx, gradOutput, scale);
}

}  // namespace cudnn

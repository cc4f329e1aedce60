// Embedding.cpp: row copies forward, row sums backward (in index order: deterministic).
#include "nn/Embedding.h"

#include <algorithm>

#include "nn/Buffers.h"
#include "nn/ModuleConfig.h"

namespace nn {

Embedding::Embedding(int64_t numEmbeddings_, int64_t embeddingDim_, std::optional<int64_t> paddingIdx_)
    : numEmbeddings(numEmbeddings_), embeddingDim(embeddingDim_), paddingIdx(paddingIdx_) {
  if (numEmbeddings < 1 || embeddingDim < 1) {
    throw Error(std::string(kTypeName) + ": expected numEmbeddings and embeddingDim >= 1, got " +
                std::to_string(numEmbeddings) + " and " + std::to_string(embeddingDim));
  }
  if (paddingIdx) {
    if (*paddingIdx < -numEmbeddings || *paddingIdx >= numEmbeddings) {
      throw Error(std::string(kTypeName) + ": expected padding_idx in [" + std::to_string(-numEmbeddings) + ", " +
                  std::to_string(numEmbeddings) + "), got " + std::to_string(*paddingIdx));
    }
    if (*paddingIdx < 0) *paddingIdx += numEmbeddings;  // from the end, as PyTorch
  }
  weight = tensor::empty({numEmbeddings, embeddingDim});
  gradWeight = tensor::zeros({numEmbeddings, embeddingDim});
  reset();
}

void Embedding::reset() {
  weight.normal_(0, 1);
  if (paddingIdx) weight.select(0, *paddingIdx).zero_();
}

void Embedding::visitState(StateVisitor& v) { v.parameter("weight", weight, gradWeight); }

void Embedding::checkIndexDType(const Tensor& input, const char* method) const {
  if (input.dtype() != tensor::DType::Int64) {
    throw Error(where(method) + "expected int64 indices, got " + input.description());
  }
}

void Embedding::throwBadIndex(const Tensor& input, int64_t element, int64_t value, const char* method) const {
  throw Error(where(method) + "expected indices in [0, " + std::to_string(numEmbeddings) + "), got " +
              std::to_string(value) + " (element " + std::to_string(element) + " of " + input.description() + ")");
}

void Embedding::checkParameters(const char* method, bool gradients) const {
  check_parameter(*this, method, "weight", weight, {numEmbeddings, embeddingDim}, gradients ? &gradWeight : nullptr);
}

void Embedding::checkIndices(const Tensor& input, const char* method) const {
  checkParameters(method, false);
  checkIndexDType(input, method);
  const Tensor idx = input.contiguous();
  const int64_t* p = idx.data<int64_t>();
  for (int64_t i = 0; i < idx.numel(); ++i) {
    if (p[i] < 0 || p[i] >= numEmbeddings) throwBadIndex(input, i, p[i], method);
  }
}

void Embedding::checkGradOutput(const Tensor& input, const Tensor& gradOutput, const char* method) const {
  Shape expected = input.sizes();
  expected.push_back(embeddingDim);
  if (!gradOutput.defined() || gradOutput.sizes() != expected || gradOutput.dtype() != weight.dtype()) {
    throw Error(where(method) + "expected gradOutput " + tensor::shape_str(expected) + " of the weight's dtype " +
                tensor::name(weight.dtype()) + " (for indices " + tensor::shape_str(input.sizes()) + "), got " +
                (gradOutput.defined() ? gradOutput.description() : std::string("an undefined tensor")));
  }
}

const Tensor& Embedding::updateOutput(const Tensor& input) {
  checkIndices(input, "updateOutput");
  const Tensor idx = input.contiguous();
  Shape shape = input.sizes();
  shape.push_back(embeddingDim);
  ensure(output, shape, weight);
  const int64_t n = idx.numel(), D = embeddingDim;
  tensor::dispatch_f32_f64(weight.dtype(), "nn.Embedding", [&](auto tag) {
    using T = decltype(tag);
    const int64_t* ip = idx.data<int64_t>();
    const T* w = weight.data<T>();
    T* y = output.data<T>();
    for (int64_t i = 0; i < n; ++i) std::copy(w + ip[i] * D, w + (ip[i] + 1) * D, y + i * D);
  });
  return output;
}

const Tensor& Embedding::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  checkIndices(input, "updateGradInput");
  checkGradOutput(input, gradOutput, "updateGradInput");
  gradInput = Tensor();
  return gradInput;
}

void Embedding::accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale) {
  checkIndices(input, "accGradParameters");
  checkParameters("accGradParameters", true);
  checkGradOutput(input, gradOutput, "accGradParameters");
  const Tensor idx = input.contiguous(), gy = gradOutput.contiguous();
  const int64_t n = idx.numel(), D = embeddingDim;
  const int64_t pad = paddingIdx.value_or(-1);
  tensor::dispatch_f32_f64(weight.dtype(), "nn.Embedding", [&](auto tag) {
    using T = decltype(tag);
    const int64_t* ip = idx.data<int64_t>();
    const T* g = gy.data<T>();
    T* gw = gradWeight.data<T>();
    const T s = static_cast<T>(scale);
    for (int64_t i = 0; i < n; ++i) {
      if (ip[i] == pad) continue;
      T* row = gw + ip[i] * D;
      for (int64_t d = 0; d < D; ++d) row[d] += s * g[i * D + d];
    }
  });
}

std::string Embedding::str() const {
  return type_name() + "(" + std::to_string(numEmbeddings) + " -> " + std::to_string(embeddingDim) +
         (paddingIdx ? ", padding_idx=" + std::to_string(*paddingIdx) : std::string()) + ")";
}

tensor::Json Embedding::config() const {
  return tensor::Json::Object{{"numEmbeddings", numEmbeddings},
                              {"embeddingDim", embeddingDim},
                              {"padding_idx", paddingIdx ? tensor::Json(*paddingIdx) : tensor::Json(nullptr)}};
}

ModulePtr Embedding::fromConfig(const tensor::Json& config) {
  ConfigReader c(config, kTypeName);
  const int64_t num = c.integer("numEmbeddings"), dim = c.integer("embeddingDim");
  const std::optional<int64_t> pad = c.optionalInteger("padding_idx");
  c.finish();
  return std::make_shared<Embedding>(num, dim, pad);
}

}  // namespace nn

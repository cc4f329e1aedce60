// KVCache.cpp: the cache's tensors and its lengths, on the device and mirrored on the host.
#include "nn/KVCache.h"

#include <algorithm>
#include <sstream>

namespace nn {

using tensor::Error;
using tensor::Tensor;

namespace {
std::string lengths_str(const std::vector<int64_t>& v) {
  std::ostringstream s;
  s << "[";
  for (size_t i = 0; i < v.size(); ++i) s << (i ? ", " : "") << v[i];
  s << "]";
  return s.str();
}
}  // namespace

KVCache::KVCache(int64_t layers, int64_t batch, int64_t kvHeads, int64_t maxLength, int64_t headDim,
                 tensor::DType dtype, tensor::Device device, const KVCacheOptions& options)
    : batch_(batch),
      kvHeads_(kvHeads),
      maxLength_(maxLength),
      headDim_(headDim),
      dtype_(dtype),
      device_(device),
      options_(options) {
  if (layers < 1 || batch < 0 || kvHeads < 1 || maxLength < 1 || headDim < 1 || !tensor::is_floating(dtype)) {
    throw Error(std::string(kTypeName) +
                ": expected layers, kv_heads, max_length and head_dim >= 1, batch >= 0 and a floating dtype, got "
                "layers " +
                std::to_string(layers) + ", batch " + std::to_string(batch) + ", kv_heads " + std::to_string(kvHeads) +
                ", max_length " + std::to_string(maxLength) + ", head_dim " + std::to_string(headDim) + ", " +
                tensor::name(dtype));
  }
  for (int64_t l = 0; l < layers; ++l) {
    keys_.push_back(tensor::zeros({batch, kvHeads, maxLength, headDim}, dtype, device));
    values_.push_back(tensor::zeros({batch, kvHeads, maxLength, headDim}, dtype, device));
  }
  lengths_ = tensor::zeros({batch}, tensor::DType::Int64, device);
  hostLengths_.assign(static_cast<size_t>(batch), 0);
}

void KVCache::checkLayer(const char* method, int64_t layer) const {
  if (layer < 0 || layer >= layers()) {
    throw Error(std::string(kTypeName) + "::" + method + ": expected a layer in [0, " + std::to_string(layers()) +
                "), got " + std::to_string(layer));
  }
}

Tensor& KVCache::key(int64_t layer) {
  checkLayer("key", layer);
  return keys_[static_cast<size_t>(layer)];
}

Tensor& KVCache::value(int64_t layer) {
  checkLayer("value", layer);
  return values_[static_cast<size_t>(layer)];
}

int64_t KVCache::maxHostLength() const {
  return hostLengths_.empty() ? 0 : *std::max_element(hostLengths_.begin(), hostLengths_.end());
}

void KVCache::advance(int64_t tokens) {
  if (tokens < 0 || maxHostLength() + tokens > maxLength_) {
    throw Error(std::string(kTypeName) + "::advance: expected 0 <= tokens and every length + tokens <= max_length " +
                std::to_string(maxLength_) + ", got " + std::to_string(tokens) + " tokens after lengths " +
                lengths_str(hostLengths_));
  }
  if (tokens == 0) return;
  lengths_.add_(static_cast<double>(tokens));
  for (int64_t& l : hostLengths_) l += tokens;
  stepTokens_ = -1;
}

void KVCache::beginStep(int64_t tokens) {
  if (tokens < 0) {
    throw Error(std::string(kTypeName) + "::beginStep: expected tokens >= 0, got " + std::to_string(tokens));
  }
  if (!stepLengths_.defined()) {
    stepLengths_ = tensor::empty({batch_}, tensor::DType::Int64, device_);
    stepWords_.words = tensor::empty({batch_}, tensor::DType::Float32, device_);
  }
  stepLengths_.copy_(lengths_);
  stepLengths_.add_(static_cast<double>(tokens));
  stepTokens_ = tokens;
  ++stepCount_;
}

void KVCache::setLengths(const std::vector<int64_t>& lengths) {
  const bool ok = static_cast<int64_t>(lengths.size()) == batch_ &&
                  std::all_of(lengths.begin(), lengths.end(), [&](int64_t l) { return l >= 0 && l <= maxLength_; });
  if (!ok) {
    throw Error(std::string(kTypeName) + "::setLengths: expected " + std::to_string(batch_) + " lengths in [0, " +
                std::to_string(maxLength_) + "], got " + lengths_str(lengths));
  }
  if (batch_ > 0) lengths_.copy_(tensor::from_vector<int64_t>(lengths, {batch_}));  // in place: see KVCache.h
  hostLengths_ = lengths;
  stepTokens_ = -1;
}

void KVCache::reset() {
  lengths_.zero_();
  std::fill(hostLengths_.begin(), hostLengths_.end(), 0);
  stepTokens_ = -1;
}

std::string KVCache::str() const {
  std::ostringstream s;
  s << kTypeName << "(layers=" << layers() << ", batch=" << batch_ << ", kv_heads=" << kvHeads_
    << ", max_length=" << maxLength_ << ", head_dim=" << headDim_ << ", " << tensor::name(dtype_) << " on "
    << device_.str() << (options_.fixedShape ? ", fixed_shape" : "") << ")";
  return s.str();
}

}  // namespace nn

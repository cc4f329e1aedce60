// TransformerDecoderLayer.cpp
#include "cudnn/TransformerDecoderLayer.h"

#include "cudnn/TensorOpBase.h"

namespace cudnn {

void TransformerDecoderLayer::checkDevices(const char* method, const tensor::Tensor& tgt,
                                           const tensor::Tensor& /*memory*/, const tensor::Tensor& gradOutput) const {
  const std::string w = where(method);
  check_on_device(w, tgt, tensor::Tensor());  // memory: on tgt's device, as the nn layer has checked
  if (gradOutput.defined()) check_grad_on_device(w, tgt, gradOutput);
}

}  // namespace cudnn

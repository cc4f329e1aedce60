// Dropout.cpp
#include "cudnn/Dropout.h"

#include "cudnn/core/Descriptors.h"

namespace cudnn {

void Dropout::checkInput(const Tensor& input, const char* method) const {
  check_cuda(where(method), input, "input");
  checkP(method);
}

}  // namespace cudnn

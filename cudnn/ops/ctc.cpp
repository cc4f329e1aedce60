// ctc.cpp
#include "cudnn/ops/ctc.h"

#include <cuda_runtime.h>

#include <algorithm>

#include "cudnn/core/Check.h"
#include "cudnn/core/Descriptors.h"
#include "cudnn/core/Handle.h"
#include "tensor/Cuda.h"
#include "tensor/cuda/CudaCheck.h"

namespace cudnn {

namespace {
using CTCLossDescriptor =
    Descriptor<cudnnCTCLossDescriptor_t, cudnnCreateCTCLossDescriptor, cudnnDestroyCTCLossDescriptor>;

// `values` as int32 on the device: an UInt8 tensor of their bytes (the tensor layer has no int32).
Tensor device_ints(const std::vector<int>& values, tensor::Device device) {
  Tensor t = tensor::empty({static_cast<int64_t>(std::max<size_t>(values.size(), 1) * sizeof(int))},
                           tensor::DType::UInt8, device);
  if (!values.empty()) {
    // from pageable memory: the call returns once the bytes are staged, so `values` may go
    CUDA_CHECK(
        cudaMemcpyAsync(t.raw_data(), values.data(), values.size() * sizeof(int), cudaMemcpyHostToDevice, stream()));
  }
  return t;
}
}  // namespace

void ctc_loss(const Tensor& x, const std::vector<int>& labels, const std::vector<int>& labelLengths,
              const std::vector<int>& inputLengths, const Tensor& costs, const Tensor& grads) {
  tensor::cuda::DeviceGuard guard(x.device().index);
  CTCLossDescriptor ctc;
  constexpr int kMaxLabelLength = 255;  // what PyTorch sets; the criterion sends nothing longer
  CUDNN_CHECK(cudnnSetCTCLossDescriptor_v9(ctc.get(), CUDNN_DATA_FLOAT, CUDNN_LOSS_NORMALIZATION_SOFTMAX,
                                           CUDNN_CTC_ZERO_OOB_GRADIENTS, kMaxLabelLength));
  TensorDescriptor xDesc, gDesc;
  const cudnnTensorDescriptor_t xd = xDesc.set(x, 3), gd = gDesc.set(grads, 3);
  constexpr cudnnCTCLossAlgo_t algo = CUDNN_CTC_LOSS_ALGO_DETERMINISTIC;
  size_t bytes = 0;
  CUDNN_CHECK(cudnnGetCTCLossWorkspaceSize_v8(handle(), algo, ctc.get(), xd, gd, &bytes));
  Workspace ws(bytes);
  const Tensor l = device_ints(labels, x.device()), ll = device_ints(labelLengths, x.device()),
               il = device_ints(inputLengths, x.device());
  CUDNN_CHECK(cudnnCTCLoss_v8(handle(), algo, ctc.get(), xd, x.raw_data(), static_cast<const int*>(l.raw_data()),
                              static_cast<const int*>(ll.raw_data()), static_cast<const int*>(il.raw_data()),
                              costs.raw_data(), gd, grads.raw_data(), bytes, ws.data()));
}

}  // namespace cudnn

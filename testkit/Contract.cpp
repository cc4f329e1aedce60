// Contract.cpp
#include "testkit/Contract.h"

#include <optional>

#include "convert/Convert.h"
#include "testkit/Inputs.h"
#ifdef CUDNN_NN_HAVE_CUDA
#include "cudnn/core/Config.h"
#endif

namespace nn::testkit {

using tensor::DType;
using tensor::Tensor;

Report check_twin_contract(const std::function<nn::ModulePtr()>& makeReference,
                           const std::function<nn::ModulePtr()>& makeTwin, const Tensor& input,
                           const ContractOptions& o) {
#ifdef CUDNN_NN_HAVE_CUDA
  // the float32 tolerances are TF32-free ones
  cudnn::ScopedConfig tf32_off("allow_tf32=false");
#endif
  Report r;
  r.subject = "twin contract of " + makeTwin()->type_name() + " at input " + tensor::shape_str(input.sizes());
  auto options = [&](DType dt, bool noncontiguous) {
    TwinOptions t;
    t.dtype = dt;
    t.tolerance = o.tolerance(dt);
    t.noncontiguous = noncontiguous;
    t.device = o.device;
    return t;
  };
  for (DType dt : o.dtypes) {
    for (bool training : {true, false}) {
      for (bool noncontiguous : {false, true}) {
        if (noncontiguous && input.numel() <= 1) continue;
        nn::ModulePtr ref = makeReference(), twin = makeTwin();
        if (!training) ref->evaluate();
        Report one = check_twin(*ref, *twin, input, options(dt, noncontiguous));
        if (!training) one.subject += ", evaluation";
        r.merge(one);
      }
    }
  }
  if (o.nonfinite) {
    nn::ModulePtr ref = makeReference(), twin = makeTwin();
    r.merge(check_twin_nonfinite(*ref, *twin, input, {}, options(DType::Float32, false)));
    nn::ModulePtr ref2 = makeReference(), twin2 = makeTwin();
    r.merge(check_twin_nonfinite_gradient(*ref2, *twin2, input, {}, options(DType::Float32, false)));
  }
  if (o.batchDim >= 0 && o.batchDim < input.dim()) {
    tensor::Shape empty = input.sizes();
    empty[static_cast<size_t>(o.batchDim)] = 0;
    for (bool training : {true, false}) {
      nn::ModulePtr ref = makeReference(), twin = makeTwin();
      if (!training) ref->evaluate();
      r.merge(check_twin_empty_batch(*ref, *twin, tensor::zeros(empty), options(DType::Float32, false)));
    }
  }
  if (o.device.is_cuda()) {
    nn::ModulePtr twin = makeTwin();
    twin->to(o.device);
    r.merge(check_steady_state(*twin, input.to(o.device, DType::Float32)));
  }
  if (o.convert) r.merge(check_convert_roundtrip(makeReference(), input, o.twinType));
  if (o.modelFile) {
    nn::ModulePtr ref = makeReference();
    r.merge(check_model_file_roundtrip(*ref, input.to(DType::Float32)));
    nn::ModulePtr twin = makeTwin();
    twin->to(o.device);
    r.merge(check_model_file_roundtrip(*twin, input.to(o.device, DType::Float32)));
  }
  return r;
}

}  // namespace nn::testkit

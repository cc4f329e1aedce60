// TwinCheck.h: the cudnn.torch promise, as checks: an nn module (float64, CPU) and its twin
// (on a device, in a chosen dtype) with the same state give the same output, gradInput,
// parameter gradients and buffers, within stated tolerances; NaN and Inf land in the same
// places; an empty batch gives the same empty shapes; the twin allocates nothing in steady
// state; and its state survives a safetensors round trip, a convert round trip nn -> twin -> nn
// and a model-file round trip. The twin is any module: the library's cudnn twins, or a user's
// own registered with nn::register_twin (convert/Convert.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "nn/Criterion.h"
#include "nn/Module.h"
#include "testkit/Report.h"

namespace nn::testkit {

struct TwinTolerance {
  double forward = 1e-5;                             // ||twin - nn|| / ||nn|| on the output and buffers
  double backward = 1e-4;                            // on gradInput and every parameter gradient
  static TwinTolerance for_dtype(tensor::DType dt);  // float32 (TF32 off), float16, bfloat16, float64
};

struct TwinOptions {
  tensor::DType dtype = tensor::DType::Float32;  // the twin's
  std::optional<TwinTolerance> tolerance;        // TwinTolerance::for_dtype(dtype) when unset
  bool noncontiguous = false;                    // the twin gets a non-contiguous copy of the input
  tensor::Device device = tensor::Device::cuda(0);
  TwinTolerance tol() const { return tolerance ? *tolerance : TwinTolerance::for_dtype(dtype); }
};

// `reference` is an nn module; `twin` its twin built with the same arguments. The reference
// goes to float64; the twin to the options' device and dtype, then gets the reference's state;
// both see `input` (the twin a converted copy) and one random gradOutput, after the same seed.
// Training mode is the reference's. Then the twin's state survives a safetensors round trip.
Report check_twin(nn::Module& reference, nn::Module& twin, const tensor::Tensor& input,
                  const TwinOptions& options = {});

// The same for criteria and a target (a target of the input's dtype, MSE's, is converted with
// the input: to float64 for nn, to the twin's dtype for the twin; class targets are kept).
Report check_twin_criterion(nn::Criterion& reference, nn::Criterion& twin, const tensor::Tensor& input,
                            const tensor::Tensor& target, const TwinOptions& options = {});

// Twin against nn on `input` with NaN, +Inf and -Inf written in (with_nonfinite, Inputs.h):
// element by element, the same kinds at the same places of the output, gradInput (from a
// finite gradOutput), every parameter gradient and every buffer; finite values within the
// tolerance.
Report check_twin_nonfinite(nn::Module& reference, nn::Module& twin, const tensor::Tensor& input,
                            const std::vector<int64_t>& positions = {}, const TwinOptions& options = {});
// Twin against nn on a finite `input` with NaN, +Inf and -Inf written into a random gradOutput
// (with_nonfinite at `positions`): the same kinds at the same places of gradInput and every
// parameter gradient; finite values within the tolerance.
Report check_twin_nonfinite_gradient(nn::Module& reference, nn::Module& twin, const tensor::Tensor& input,
                                     const std::vector<int64_t>& positions = {}, const TwinOptions& options = {});
// The same for a criterion: the losses are both NaN, the same infinity, or close; the gradients
// agree element by element.
Report check_twin_criterion_nonfinite(nn::Criterion& reference, nn::Criterion& twin, const tensor::Tensor& input,
                                      const tensor::Tensor& target, const std::vector<int64_t>& positions = {},
                                      const TwinOptions& options = {});

// An input with no samples (`emptyInput`, float32 on the CPU: a batch dimension of size 0)
// gives the twin nn's output shape and (in training) nn's gradInput shape, without an error,
// and leaves both modules' parameter gradients as they were.
Report check_twin_empty_batch(nn::Module& reference, nn::Module& twin, const tensor::Tensor& emptyInput,
                              const TwinOptions& options = {});

// After a warm-up, forward + backward of `twin` on `input` (on a CUDA device) allocates no new
// device memory (buffers are reused, temporaries come from the caching allocator).
Report check_steady_state(nn::Module& twin, const tensor::Tensor& input);

// convert(module, cudnn::backend) gives `twinType` ("cudnn.X" for "nn.X" when empty; a user's
// pair: the name it was registered with) and the module's outputs (float32, a loose bound: TF32
// may be on); its state on the GPU, bit-identical; converting back gives the nn type with
// bit-identical state and the training mode kept; converting a twin to the GPU again keeps its
// very storage. Needs a GPU.
Report check_convert_roundtrip(nn::ModulePtr module, const tensor::Tensor& input, const std::string& twinType = "");
// The same for a criterion: the cudnn criterion gives nn's loss and gradient, converting it to
// cudnn again gives the same object, converting back gives bit-identical state.
Report check_criterion_convert_roundtrip(nn::CriterionPtr criterion, const tensor::Tensor& input,
                                         const tensor::Tensor& target);

// save_model then load_model (in memory: describe_model and the safetensors bytes) gives a
// network of the same types, modes and bit-identical state, whose output on `input` is the
// original's (after the same seed; the loaded network is moved to the input's device). A type
// model files do not know is a failure naming it (register_model_type, convert/ModelFile.h).
Report check_model_file_roundtrip(nn::Module& net, const tensor::Tensor& input);

}  // namespace nn::testkit

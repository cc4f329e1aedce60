// Register.h: makes ext::Swish (and, in a build with CUDA, its twin ext::CudnnSwish) known to
// the library: model files save and load them (nn::register_model_type), and, with the twin,
// nn::convert swaps them both ways (nn::register_twin). Call once, before either is used.
#pragma once

namespace ext {

void register_swish();
bool has_cuda_twin();  // this build has ext::CudnnSwish

}  // namespace ext

// Register.cpp
#include "Register.h"

#include <mutex>

#include "Swish.h"
#include "convert/Convert.h"
#include "convert/ModelFile.h"
#ifdef EXT_WITH_CUDA
#include "CudnnSwish.h"
#endif

namespace ext {

void register_swish() {
  // once: a second nn::register_twin of the same pair is refused
  static std::once_flag once;
  std::call_once(once, [] {
    nn::register_model_type(std::string(Swish::kTypeName), nn::LeafModelFactory(Swish::fromConfig));
#ifdef EXT_WITH_CUDA
    nn::register_model_type(std::string(CudnnSwish::kTypeName), nn::LeafModelFactory(CudnnSwish::fromConfig));
    nn::register_twin<Swish, CudnnSwish>();
#endif
  });
}

bool has_cuda_twin() {
#ifdef EXT_WITH_CUDA
  return true;
#else
  return false;
#endif
}

}  // namespace ext

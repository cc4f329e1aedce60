// Unavailable.cpp: tensor/Cuda.h and kernels::cuda() for a build without CUDA. Queries say
// there is no device; everything that would touch one throws "built without CUDA", from
// this one place (docs/architecture.md, "Layers").
#include <string>

#include "tensor/Cuda.h"
#include "tensor/Kernels.h"
#include "tensor/MultiTensor.h"

namespace tensor {

namespace {
[[noreturn]] void unavailable(const char* function) {
  throw Error(std::string(function) + ": cudnn-nn was built without CUDA");
}
}  // namespace

namespace cuda {

bool built_with_cuda() { return false; }
bool is_available() { return false; }
int device_count() { return 0; }
int current_device() { unavailable("tensor::cuda::current_device"); }
void set_device(int) { unavailable("tensor::cuda::set_device"); }
void synchronize(int) { unavailable("tensor::cuda::synchronize"); }
void* stream(int) { unavailable("tensor::cuda::stream"); }
void* fork_side(int) { unavailable("tensor::cuda::fork_side"); }
void join_side(int) { unavailable("tensor::cuda::join_side"); }
MemoryStats memory_stats(int) { return {}; }
void reset_peak_memory_stats(int) { unavailable("tensor::cuda::reset_peak_memory_stats"); }
void empty_cache() { unavailable("tensor::cuda::empty_cache"); }
void* allocate(size_t, int) { unavailable("tensor::cuda::allocate"); }
void deallocate(void*, int) {}  // nothing can have been allocated; must not throw
void release(void*, int) {}
void set_memory_limit(size_t, int) { unavailable("tensor::cuda::set_memory_limit"); }
size_t memory_limit(int) { return 0; }
void shutdown() {}  // nothing to release
void register_shutdown_hook(void (*)()) {}
void copy_bytes(void*, bool, const void*, bool, size_t, int) {
  unavailable("tensor::cuda::copy_bytes");
}

void sgd_step(const std::vector<Tensor>&, const std::vector<Tensor>&, const std::vector<Tensor>&,
              const std::vector<uint8_t>&, const SgdStep&, const Tensor&) {
  unavailable("tensor::cuda::sgd_step");
}
void adam_step(const std::vector<Tensor>&, const std::vector<Tensor>&, const std::vector<Tensor>&,
               const std::vector<Tensor>&, const std::vector<double>&, const std::vector<double>&, const AdamStep&) {
  unavailable("tensor::cuda::adam_step");
}
void adam_step_capturable(const std::vector<Tensor>&, const std::vector<Tensor>&, const std::vector<Tensor>&,
                          const std::vector<Tensor>&, const std::vector<Tensor>&, const Tensor&, const AdamStep&,
                          const Tensor&) {
  unavailable("tensor::cuda::adam_step_capturable");
}
Tensor multi_tensor_norm(const std::vector<Tensor>&, double) { unavailable("tensor::cuda::multi_tensor_norm"); }
Tensor clip_by_norm(const std::vector<Tensor>&, double, double) { unavailable("tensor::cuda::clip_by_norm"); }
void unscale_and_check(const std::vector<Tensor>&, const Tensor&, const Tensor&) {
  unavailable("tensor::cuda::unscale_and_check");
}
void scale_by(const std::vector<Tensor>&, const Tensor&) { unavailable("tensor::cuda::scale_by"); }
void zero_tensors(const std::vector<Tensor>&) { unavailable("tensor::cuda::zero_tensors"); }
void scaler_prepare_unscale(const Tensor&, const Tensor&, const Tensor&) {
  unavailable("tensor::cuda::scaler_prepare_unscale");
}
void scaler_update(const Tensor&, const Tensor&, const Tensor&, double, double, int64_t, bool) {
  unavailable("tensor::cuda::scaler_update");
}

Graph::~Graph() = default;
Graph::Graph(Graph&&) noexcept = default;
Graph& Graph::operator=(Graph&&) noexcept = default;
Graph Graph::capture(const std::function<void()>&, int) { unavailable("tensor::cuda::Graph::capture"); }
void Graph::replay() const { unavailable("tensor::cuda::Graph::replay"); }
size_t Graph::nodes() const { return 0; }
bool Graph::capturing(int) { return false; }
const uint64_t* Graph::random_state_for_capture(int, Generator&, uint64_t, uint64_t&) { return nullptr; }
uint64_t Graph::capture_draws(int, const Generator&) { return 0; }
void Graph::set_capture_draws(int, const Generator&, uint64_t) {
  unavailable("tensor::cuda::Graph::set_capture_draws");
}
void Graph::reset() noexcept {}

DeviceGuard::DeviceGuard(int) { unavailable("tensor::cuda::DeviceGuard"); }
DeviceGuard::~DeviceGuard() = default;

}  // namespace cuda

namespace kernels {
const Backend& cuda() { unavailable("tensor::kernels::cuda"); }
void cuda_set_random_state(uint64_t*, uint64_t, uint64_t, int) {
  unavailable("tensor::kernels::cuda_set_random_state");
}
}  // namespace kernels

}  // namespace tensor

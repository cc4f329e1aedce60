// test_Memory.cpp: the GPU memory paths. Out of memory under tensor::cuda::set_memory_limit:
// the error names the request, the device, its free and total memory and the allocator's
// bytes; a training step that fails in the forward pass or in the optimizer step leaves the
// parameters and the optimizer state as they were, and after the limit is raised the same
// network trains to the bit-identical result of a twin that never failed. Teardown:
// tensor::cuda::shutdown() releases the cuDNN/cuBLAS handles and cached blocks, tensors alive
// across it stay valid, and the library works again after it. Workspaces (Note [Workspaces] in
// cudnn/core/Handle.h): a convolution's goes back to the caching allocator after the call, a
// timed search's trial workspaces go back to the driver, and a captured convolution's stays
// the graph's, so eager work after the capture cannot overwrite what a replay uses. A timed
// search's trials stay within conv.search_workspace, its choice is the smallest workspace
// within conv.search_tolerance of the fastest, and its results are nn's (Note [Trial
// workspaces] in cudnn/ops/conv_search.cpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cudnn/CrossEntropyCriterion.h"
#include "cudnn/Linear.h"
#include "cudnn/ReLU.h"
#include "cudnn/SpatialConvolution.h"
#include "cudnn/core/Config.h"
#include "cudnn/core/Handle.h"
#include "cudnn/ops/conv.h"
#include "nn/Adam.h"
#include "nn/Sequential.h"
#include "nn/SpatialConvolution.h"
#include "tensor/Cuda.h"
#include "tests/support/TwinCheck.h"

using namespace tensor;

namespace {
const Device gpu = Device::cuda(0);

std::shared_ptr<nn::Sequential> make_net() {
  auto net = std::make_shared<nn::Sequential>();
  net->add(std::make_shared<cudnn::Linear>(64, 256));
  net->add(std::make_shared<cudnn::ReLU>());
  net->add(std::make_shared<cudnn::Linear>(256, 10));
  return net;
}

struct Trainer {
  std::shared_ptr<nn::Sequential> net = make_net();
  cudnn::CrossEntropyCriterion criterion;
  std::unique_ptr<nn::Adam> opt;

  explicit Trainer(const std::map<std::string, Tensor>& state) {
    net->loadStateDict(state);
    net->to(gpu);
    criterion.to(gpu);
    opt = std::make_unique<nn::Adam>(*net, 1e-2);
  }
  void forward_backward(const Tensor& x, const Tensor& t) {
    opt->zeroGrad();
    const Tensor& y = net->forward(x);
    criterion.forward(y, t);
    net->backward(x, criterion.backward(y, t));
  }
  void step(const Tensor& x, const Tensor& t) {
    forward_backward(x, t);
    opt->step();
  }
};

// Each tensor of `state` bit-identical to `before`'s (both on any device).
void expect_same_state(const std::map<std::string, Tensor>& state, const std::map<std::string, Tensor>& before) {
  REQUIRE(state.size() == before.size());
  for (const auto& [name, t] : state) {
    INFO(name);
    CHECK(max_abs_diff(t.cpu(), before.at(name).cpu()) == 0);
  }
}

std::map<std::string, Tensor> cpu_copy(const std::map<std::string, Tensor>& state) {
  std::map<std::string, Tensor> out;
  for (const auto& [name, t] : state) out[name] = t.cpu().clone();
  return out;
}

// Runs f, which must throw tensor::Error for lack of memory; returns the message.
template <class F>
std::string oom_message(F&& f) {
  std::string message;
  try {
    f();
  } catch (const tensor::Error& e) {
    message = e.what();
  }
  INFO("message: ", message);
  CHECK(message.find("tensor::cuda::allocate: out of memory on cuda:0: cannot allocate ") != std::string::npos);
  CHECK(message.find(" free of ") != std::string::npos);
  CHECK(message.find("after releasing ") != std::string::npos);
  CHECK(message.find("(tensor::cuda::set_memory_limit)") != std::string::npos);
  return message;
}

// Clears the limit however a test case ends.
struct LimitGuard {
  ~LimitGuard() { cuda::set_memory_limit(0, 0); }
};
}  // namespace

TEST_CASE(
    "out of memory: a clear error, a training step that fails changes nothing, and it trains after the limit is "
    "raised") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  LimitGuard guard;
  Generator gen(8101);
  const auto initial = make_net()->stateDict();
  const Tensor x = uniform({32, 64}, -1, 1, gen).to(gpu);
  const Tensor t =
      tensor::from_vector<int64_t>(
          {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1}, {32})
          .to(gpu);
  Trainer ok(initial), failing(initial);
  for (int k = 0; k < 2; ++k) ok.step(x, t);  // the reference: two steps, no limit

  // 1. a limit that the forward pass cannot fit in
  cuda::empty_cache();
  const auto before = cpu_copy(failing.net->stateDict());
  cuda::set_memory_limit(cuda::memory_stats(0).allocated_bytes + 1024, 0);
  CHECK(cuda::memory_limit(0) == cuda::memory_stats(0).allocated_bytes + 1024);
  oom_message([&] { failing.step(x, t); });
  expect_same_state(failing.net->stateDict(), before);
  CHECK(failing.opt->stateDict().empty());

  // 2. room for forward and backward, not for Adam's first step (two moments and a
  // temporary per parameter): it fails part-way through making its buffers
  cuda::set_memory_limit(0, 0);
  failing.forward_backward(x, t);
  cuda::empty_cache();
  size_t param_bytes = 0;
  for (const Tensor& p : failing.net->parameters()) param_bytes += static_cast<size_t>(p.numel()) * 4;
  cuda::set_memory_limit(cuda::memory_stats(0).allocated_bytes + param_bytes, 0);
  oom_message([&] { failing.opt->step(); });
  expect_same_state(failing.net->stateDict(), before);
  CHECK(failing.opt->stateDict().empty());  // no moment, no step counter

  // 3. the limit raised: the same two steps give the reference's parameters and state, bit for bit
  cuda::set_memory_limit(0, 0);
  for (int k = 0; k < 2; ++k) failing.step(x, t);
  expect_same_state(failing.net->stateDict(), ok.net->stateDict());
  expect_same_state(failing.opt->stateDict(), ok.opt->stateDict());
}

TEST_CASE("out of memory: a request beyond the device's memory names its size and the device's free memory") {
  const std::string message = [] {
    try {
      (void)tensor::empty({int64_t{1} << 40}, DType::Float32, gpu);  // 4 TiB
    } catch (const tensor::Error& e) {
      return std::string(e.what());
    }
    return std::string();
  }();
  INFO("message: ", message);
  CHECK(message.find("out of memory on cuda:0: cannot allocate 4398046511104 bytes (4.00 TiB); the device has ") !=
        std::string::npos);
  CHECK(message.find("(tensor::cuda::set_memory_limit)") == std::string::npos);  // no limit was set
  // the allocator still works
  CHECK(max_abs_diff(tensor::ones({4}, DType::Float32, gpu).cpu(), tensor::ones({4})) == 0);
}

TEST_CASE("tensor::cuda::shutdown releases handles, workspaces and cached blocks; tensors stay valid; work resumes") {
  Generator gen(8102);
  cudnn::SpatialConvolution conv(3, 8, 3, 3);
  conv.to(gpu);
  const Tensor x = uniform({2, 3, 9, 9}, -1, 1, gen).to(gpu);
  const Tensor y0 = conv.forward(x).clone();
  { const Tensor scratch = zeros({1 << 20}, DType::Float32, gpu); }  // a cached block
  CHECK(cudnn::handle() != nullptr);

  cuda::shutdown();
  const auto stats = cuda::memory_stats(0);
  CHECK(stats.cached_bytes == 0);                 // nothing cached: only live tensors hold memory
  CHECK(max_abs_diff(conv.forward(x), y0) == 0);  // same weights, same result
  cuda::shutdown();
  cuda::shutdown();  // idempotent
  CHECK(max_abs_diff(conv.forward(x), y0) == 0);
}

namespace {
// What the caching allocator takes for a request of `bytes` (Note [Caching allocator]).
size_t rounded(size_t bytes) {
  const size_t g = bytes <= (size_t{1} << 20) ? 512 : size_t{2} << 20;
  return (bytes + g - 1) / g * g;
}

// x [n, 16, hw, hw] and a 5x5 filter, padded to keep the size, with the forward algorithm
// pinned (FFT's workspace is large; explicit GEMM's is the im2col buffer); "" follows the flags.
struct PinnedConv {
  Tensor x, w, y;
  cudnn::ConvSpec geo;
  cudnn::ConvPlan plan;
  PinnedConv(int64_t n, int64_t hw, Generator& gen, const char* mode) {
    x = uniform({n, 16, hw, hw}, -1, 1, gen, DType::Float32, gpu);
    w = uniform({16, 16, 5, 5}, -1, 1, gen, DType::Float32, gpu);
    y = empty({n, 16, hw, hw}, DType::Float32, gpu);
    geo.pad = {0, 2, 2};
    if (*mode) plan.setMode(mode, "", "");
  }
  void forward() { plan.forward(x, w, y, geo); }
  size_t workspace() const { return plan.workspace_bytes(cudnn::ConvPass::Forward); }
};

// The first of `modes` that cuDNN runs as pinned, with a workspace, for these shapes (which
// legacy algorithms it offers varies with versions and devices); "" when none does.
const char* with_workspace(Generator& gen, std::initializer_list<const char*> modes) {
  for (const char* mode : modes) {
    PinnedConv probe(8, 32, gen, mode);
    probe.forward();
    const int pinned = cudnn::AlgoSetting::parse(cudnn::ConvPass::Forward, mode).algo;
    if (probe.workspace() > 0 && probe.plan.algorithm(cudnn::ConvPass::Forward) == pinned) return mode;
  }
  return "";
}
}  // namespace

TEST_CASE("workspaces: a lease gives its bytes back when it ends: to the cache, or a search's to the driver") {
  const size_t mib = size_t{1} << 20;
  cuda::synchronize(0);
  cuda::empty_cache();
  const cuda::MemoryStats before = cuda::memory_stats(0);
  {
    cudnn::Workspace none(0);
    CHECK(none.data() == nullptr);
    cudnn::Workspace call(8 * mib);
    REQUIRE(call.data() != nullptr);
    CHECK(call.size() == 8 * mib);
    CHECK(cuda::memory_stats(0).allocated_bytes == before.allocated_bytes + 8 * mib);
    void* block = call.data();
    CHECK(call.grow(4 * mib) == block);  // large enough: kept
    cudnn::Workspace moved = std::move(call);
    CHECK(moved.data() == block);
    CHECK(call.data() == nullptr);
  }
  const cuda::MemoryStats cached = cuda::memory_stats(0);
  CHECK(cached.allocated_bytes == before.allocated_bytes);
  CHECK(cached.cached_bytes == before.cached_bytes + 8 * mib);  // the next request's
  {
    cudnn::Workspace search(64 * mib, cudnn::Workspace::Use::Search);
    search.grow(96 * mib);  // larger: the 64 MiB go back before the 96 are taken
    CHECK(search.size() == 96 * mib);
    CHECK(cuda::memory_stats(0).reserved_bytes == cached.reserved_bytes + 96 * mib);
  }
  const cuda::MemoryStats after = cuda::memory_stats(0);
  CHECK(after.reserved_bytes == cached.reserved_bytes);  // the trials' bytes went back to the driver
  CHECK(after.device_frees == cached.device_frees + 2);
  CHECK(after.peak_reserved_bytes >= cached.reserved_bytes + 96 * mib);
}

TEST_CASE("workspaces: a convolution's workspace is back in the caching allocator after the call") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  Generator gen(8103);
  const char* mode = with_workspace(gen, {"fft", "fft_tiling", "large"});  // large workspaces
  INFO("forward algorithm ", mode);
  REQUIRE(*mode);
  PinnedConv conv(8, 32, gen, mode);
  cuda::synchronize(0);
  cuda::empty_cache();
  cuda::reset_peak_memory_stats(0);
  const cuda::MemoryStats before = cuda::memory_stats(0);
  conv.forward();
  const size_t ws = conv.workspace();
  REQUIRE(ws > 0);
  const cuda::MemoryStats after = cuda::memory_stats(0);
  INFO("workspace ", ws, " bytes");
  CHECK(after.peak_allocated_bytes >= before.allocated_bytes + ws);  // held during the call
  CHECK(after.allocated_bytes == before.allocated_bytes);            // not after it
  CHECK(after.cached_bytes >= ws);  // reserved, not allocated: the next operation's to take
  conv.forward();                   // which the next call does, with no cudaMalloc
  CHECK(cuda::memory_stats(0).device_mallocs == after.device_mallocs);
  CHECK(cuda::memory_stats(0).allocated_bytes == before.allocated_bytes);
}

TEST_CASE("workspaces: a timed search gives its trial workspaces back; only the chosen one stays cached") {
  cudnn::ScopedConfig flags("allow_tf32=false,benchmark=true");
  cudnn::clear_algorithm_cache();
  Generator gen(8104);
  PinnedConv conv(16, 64, gen, "");  // every algorithm and engine timed, FFT's large workspace among them
  cuda::synchronize(0);
  cuda::empty_cache();
  cuda::reset_peak_memory_stats(0);
  const cuda::MemoryStats before = cuda::memory_stats(0);
  conv.forward();
  const cuda::MemoryStats after = cuda::memory_stats(0);
  const size_t ws = conv.workspace();
  INFO("chosen workspace ", ws, " bytes; reserved ", before.reserved_bytes, " -> peak ", after.peak_reserved_bytes,
       " -> ", after.reserved_bytes);
  CHECK(after.allocated_bytes == before.allocated_bytes);
  // beyond the tensors only the chosen engine's workspace and the search's scratch output stay
  CHECK(after.reserved_bytes <= before.reserved_bytes + rounded(ws) + rounded(conv.y.nbytes()));
}

TEST_CASE("workspaces: a captured convolution keeps its workspace while the graph lives; replays stay right") {
  cudnn::ScopedConfig flags("allow_tf32=false");
  Generator gen(8105);
  // explicit GEMM ("large": its workspace is the im2col buffer, its kernels plain ones a
  // capture records), or FFT where this cuDNN lacks it
  const char* mode = with_workspace(gen, {"large", "fft_tiling", "fft"});
  REQUIRE(*mode);
  INFO("forward algorithm ", mode);
  PinnedConv conv(8, 32, gen, mode);
  conv.forward();  // the choice is made before the capture, as Note [CUDA graphs] asks
  const size_t ws = conv.workspace();
  REQUIRE(ws > 0);
  cuda::Graph graph = cuda::Graph::capture([&] { conv.forward(); });
  // Eager work after the capture: a convolution with a larger workspace, then tensors of the
  // captured workspace's size holding a pattern. Were any of them handed the graph's
  // workspace, a replay would overwrite it.
  PinnedConv larger(16, 48, gen, mode);
  larger.forward();
  REQUIRE(larger.workspace() > ws);
  std::vector<Tensor> eager;
  for (int k = 0; k < 4; ++k) eager.push_back(full({static_cast<int64_t>((ws + 3) / 4)}, 7.0, DType::Float32, gpu));
  PinnedConv reference(8, 32, gen, mode);
  for (int replay = 0; replay < 2; ++replay) {
    conv.x.copy_(uniform(conv.x.sizes(), -1, 1, gen));
    graph.replay();
    reference.x.copy_(conv.x);
    reference.w.copy_(conv.w);
    reference.forward();
    CHECK(max_abs_diff(conv.y, reference.y) == 0);  // the same algorithm on the same data
  }
  for (const Tensor& t : eager) CHECK(max_abs_diff(t.cpu(), full(t.sizes(), 7.0)) == 0);
}

// Note [Trial workspaces] in cudnn/ops/conv_search.cpp: a timed search's trials and its choice.
namespace {
const size_t kTrialFloor = size_t{16} << 20;  // kTrialWorkspaceFloor

// A float32 9x9 convolution (x [16, 32, 48, 48], w [64, 32, 9, 9], y [16, 64, 40, 40], about
// 12 MB of tensors): FFT and several engines want far more workspace than the trial cap.
struct SearchedConv {
  Tensor x, w, y;
  cudnn::ConvSpec geo;
  cudnn::ConvPlan plan;
  explicit SearchedConv(Generator& gen) {
    x = uniform({16, 32, 48, 48}, -1, 1, gen, DType::Float32, gpu);
    w = uniform({64, 32, 9, 9}, -1, 1, gen, DType::Float32, gpu);
    y = empty({16, 64, 40, 40}, DType::Float32, gpu);
  }
  void forward() { plan.forward(x, w, y, geo); }
  size_t tensor_bytes() const { return x.nbytes() + w.nbytes() + y.nbytes(); }
  // The search's peak allocation above what was allocated before it.
  size_t search_peak() {
    cuda::synchronize(0);
    cuda::reset_peak_memory_stats(0);
    const size_t before = cuda::memory_stats(0).allocated_bytes;
    forward();
    cuda::synchronize(0);
    return cuda::memory_stats(0).peak_allocated_bytes - before;
  }
};
}  // namespace

TEST_CASE("trial workspaces: a timed search never leases more than conv.search_workspace allows") {
  cudnn::ScopedConfig flags("allow_tf32=false,benchmark=true,conv.search_workspace=1");
  cudnn::clear_algorithm_cache();
  Generator gen(8106);
  SearchedConv conv(gen);
  const size_t cap = std::max(kTrialFloor, conv.tensor_bytes());  // 16 MiB here
  const size_t peak = conv.search_peak();
  INFO("cap ", cap, " bytes; the search's peak ", peak, " bytes, chosen workspace ",
       conv.plan.workspace_bytes(cudnn::ConvPass::Forward));
  CHECK(peak <= rounded(cap));  // the trials' leases, the chosen one's, and no scratch output (beta 0)
  CHECK(conv.plan.workspace_bytes(cudnn::ConvPass::Forward) <= cap);
  const std::vector<cudnn::ConvPlan::Timing> timed = conv.plan.timings(cudnn::ConvPass::Forward);
  REQUIRE(!timed.empty());
  for (const auto& t : timed) CHECK(t.workspace <= cap);

  // The same search with the trial cap off (workspace_limit alone) leases more: the check above can fail.
  cudnn::ScopedConfig off("conv.search_workspace=0");
  cudnn::clear_algorithm_cache();
  SearchedConv wide(gen);
  const size_t wide_peak = wide.search_peak();
  INFO("uncapped peak ", wide_peak, " bytes");
  CHECK(wide_peak > rounded(cap));
  size_t largest = 0;
  for (const auto& t : wide.plan.timings(cudnn::ConvPass::Forward)) largest = std::max(largest, t.workspace);
  CHECK(largest > cap);
  cudnn::clear_algorithm_cache();
}

TEST_CASE("trial workspaces: by default 4x the tensors for float32 data, 2x for 16-bit") {
  // L3's convolution at batch 32 in float16 (about 15 MiB of tensors): FFT_TILING's workspace
  // lies between 2x and 4x of them, so the two caps give different candidate lists
  Generator gen(8109);
  struct Conv16 {
    Tensor x, w, y;
    cudnn::ConvSpec geo;
    cudnn::ConvPlan plan;
    explicit Conv16(Generator& gen)
        : x(uniform({32, 128, 32, 32}, -1, 1, gen, DType::Float16, gpu)),
          w(uniform({128, 128, 9, 9}, -0.1, 0.1, gen, DType::Float16, gpu)),
          y(empty({32, 128, 24, 24}, DType::Float16, gpu)) {}
    size_t largest_timed() {
      plan.forward(x, w, y, geo);
      size_t largest = 0;
      for (const auto& t : plan.timings(cudnn::ConvPass::Forward)) largest = std::max(largest, t.workspace);
      return largest;
    }
  };
  CHECK(cudnn::config().conv_search_workspace == cudnn::Config::kSearchWorkspaceAuto);
  Conv16 wide(gen);
  const size_t bytes = wide.x.nbytes() + wide.w.nbytes() + wide.y.nbytes();
  {
    cudnn::ScopedConfig flags("benchmark=true,conv.search_workspace=4");
    cudnn::clear_algorithm_cache();
    const size_t largest = wide.largest_timed();
    INFO("tensors ", bytes, " bytes; largest timed workspace with the cap at 4x: ", largest);
    CHECK(largest > 2 * bytes);  // a candidate the 16-bit default leaves out
    CHECK(largest <= 4 * bytes);
  }
  cudnn::ScopedConfig flags("benchmark=true");  // conv.search_workspace=auto
  cudnn::clear_algorithm_cache();
  Conv16 capped(gen);
  const size_t largest = capped.largest_timed();
  INFO("largest timed workspace by default: ", largest);
  CHECK(largest <= std::max(kTrialFloor, 2 * bytes));
  CHECK(capped.plan.workspace_bytes(cudnn::ConvPass::Forward) <= std::max(kTrialFloor, 2 * bytes));
  cudnn::clear_algorithm_cache();
}

// allow_tf32=false refuses the TF32 engines, the fastest float32 ones: a search that timed them
// measured the tolerance from, and listed, candidates that never run (Note [Refused candidates]).
TEST_CASE("trial workspaces: the choice is, within conv.search_tolerance of the fastest, the smallest workspace") {
  Generator gen(8107);
  for (const char* tolerance : {"0", "0.02", "1000000"}) {
    cudnn::ScopedConfig flags(std::string("allow_tf32=false,benchmark=true,conv.search_tolerance=") + tolerance);
    cudnn::clear_algorithm_cache();
    SearchedConv conv(gen);
    conv.forward();
    const double tol = cudnn::config().conv_search_tolerance;
    const std::vector<cudnn::ConvPlan::Timing> timed = conv.plan.timings(cudnn::ConvPass::Forward);
    REQUIRE(!timed.empty());
    const double fastest = timed.front().ms;
    const int algo = conv.plan.algorithm(cudnn::ConvPass::Forward);
    const size_t ws = conv.plan.workspace_bytes(cudnn::ConvPass::Forward);
    size_t smallest = SIZE_MAX;  // the smallest workspace within the tolerance
    for (const auto& t : timed) {
      if (t.ms <= fastest * (1 + tol)) smallest = std::min(smallest, t.workspace);
    }
    bool within = false;  // the chosen candidate is one of those within the tolerance
    for (const auto& t : timed) within = within || (t.algorithm == algo && t.ms <= fastest * (1 + tol));
    std::string rows;  // what the search timed, for a failure's message
    for (const auto& t : timed) {
      rows.append(" ").append(std::to_string(t.algorithm)).append(":").append(std::to_string(t.ms));
      rows.append(" ms/").append(std::to_string(t.workspace)).append(" B");
    }
    INFO("conv.search_tolerance=", std::string(tolerance), ": chose ", algo, " with workspace ", ws, "; fastest ",
         fastest, " ms; smallest workspace within the tolerance ", smallest, "; timed:", rows);
    CHECK(within);
    CHECK(ws == smallest);
    if (tol > 1) {
      // every candidate is within: the smallest workspace of all, not the fastest's (unless it is that)
      size_t least = SIZE_MAX;
      for (const auto& t : timed) least = std::min(least, t.workspace);
      CHECK(ws == least);
      if (timed.front().workspace == least) MESSAGE("the fastest candidate also has the smallest workspace here");
    }
  }
  cudnn::clear_algorithm_cache();
}

// A refused candidate is not timed, so it is neither listed nor the yardstick of the tolerance:
// under deterministic=true Find's rows for backward-filter ALGO_0 and ALGO_3 are left out.
TEST_CASE("trial workspaces: a timed search times only candidates the try loop may run") {
  cudnn::ScopedConfig flags("deterministic=true,benchmark=true,conv.search_tolerance=0");
  cudnn::clear_algorithm_cache();
  Generator gen(8109);
  const Tensor x = uniform({16, 8, 20, 20}, -1, 1, gen, DType::Float32, gpu);
  const Tensor g = uniform({16, 8, 20, 20}, -1, 1, gen, DType::Float32, gpu);
  Tensor dw = empty({8, 8, 3, 3}, DType::Float32, gpu);
  cudnn::ConvSpec geo;  // 2-d: the last two slots
  geo.pad = {0, 1, 1};
  cudnn::ConvPlan plan;
  plan.backward_filter(x, g, dw, geo);
  const std::vector<cudnn::ConvPlan::Timing> timed = plan.timings(cudnn::ConvPass::BackwardFilter);
  REQUIRE(!timed.empty());
  for (const auto& t : timed) {
    INFO("timed algorithm ", t.algorithm, ": ", t.ms, " ms");
    CHECK(t.algorithm != 0);  // CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0 and _3: not deterministic
    CHECK(t.algorithm != 3);
  }
  // tolerance 0: the fastest timed row runs, since every row may
  CHECK(plan.algorithm(cudnn::ConvPass::BackwardFilter) == timed.front().algorithm);
  cudnn::clear_algorithm_cache();
}

TEST_CASE(
    "trial workspaces: results under a tight cap and a wide tolerance equal nn's; accumulation survives the trials") {
  Generator gen(8108);
  const Tensor x = uniform({8, 16, 32, 32}, -1, 1, gen);
  {
    // allow_tf32=false: the float32 comparison is meant to be FMA-exact, not TF32's 1e-3
    cudnn::ScopedConfig flags("allow_tf32=false,benchmark=true,conv.search_workspace=0.25,conv.search_tolerance=0.5");
    cudnn::clear_algorithm_cache();
    nn::SpatialConvolution reference(16, 24, 9, 9, 1, 1, 4, 4);
    cudnn::SpatialConvolution twin(16, 24, 9, 9, 1, 1, 4, 4);
    testing::expect_twin_matches(reference, twin, x, DType::Float32);
    cudnn::clear_algorithm_cache();
    testing::expect_twin_matches(reference, twin, x, DType::Float16, testing::TwinTolerance::for_dtype(DType::Float16));
  }
  // dw = 2 * grad + dw0 (beta 1): a timed search must time into a scratch output, not dw
  cudnn::ScopedConfig flags("allow_tf32=false");
  const Tensor xg = x.to(gpu);
  const Tensor dy = uniform({8, 24, 32, 32}, -1, 1, gen, DType::Float32, gpu);
  const Tensor dw0 = uniform({24, 16, 9, 9}, -1, 1, gen, DType::Float32, gpu);
  cudnn::ConvSpec geo;
  geo.pad = {0, 4, 4};
  cudnn::ConvPlan plain;
  Tensor want = dw0.clone();
  plain.backward_filter(xg, dy, want, geo, 2, 1);
  cudnn::ScopedConfig timed("benchmark=true");
  cudnn::clear_algorithm_cache();
  cudnn::ConvPlan searched;
  Tensor got = dw0.clone();
  searched.backward_filter(xg, dy, got, geo, 2, 1);
  REQUIRE(!searched.timings(cudnn::ConvPass::BackwardFilter).empty());
  CHECK(rel_norm_error(got.cpu(), want.cpu()) < 1e-4);
  cudnn::clear_algorithm_cache();
}

// test_Cuda.cpp: the CUDA half of the tensor layer checked against the CPU half: copies
// between devices and dtypes, strided views, every kernel, seeded random fills and the
// caching allocator. Linked with tests/support/gpu_main.cpp, which skips the whole
// executable when no GPU is visible. Tolerances (scaled relative error, Caffe's) are in
// `tolerance`: a few ulps of the dtype, since exp, log, pow, ... come from CUDA's libdevice.
#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "tensor/Cuda.h"
#include "tensor/Kernels.h"
#include "tensor/Tensor.h"
#include "tensor/cuda/GraphMemsets.h"

using namespace tensor;

namespace {

const Device kGpu = Device::cuda(0);
const std::vector<DType> kAllDTypes = {DType::Float32, DType::Float64, DType::Float16,
                                       DType::BFloat16, DType::Int64,   DType::UInt8};
const std::vector<DType> kFloatDTypes = {DType::Float32, DType::Float64, DType::Float16,
                                         DType::BFloat16};

// Largest scaled relative error accepted between a CPU and a GPU result computed in `dtype`
// with a transcendental function; the integers compare the truncated results.
double tolerance(DType dtype) {
  switch (dtype) {
    case DType::Float64: return 1e-12;
    case DType::Float32: return 1e-5;
    case DType::Float16: return 2e-3;   // 2 ulp of 2^-10
    case DType::BFloat16: return 1.6e-2;  // 2 ulp of 2^-7
    default: return 1.0;  // integers: a result may truncate on the other side of an integer
  }
}

// A CPU tensor of `dtype` drawn from [lo, hi) (rounded for the integer types; UInt8 from
// [max(lo, 0), hi)).
Tensor random_cpu(const Shape& shape, DType dtype, Generator& gen, double lo = -3, double hi = 3) {
  if (dtype == DType::UInt8) lo = std::max(lo, 0.0);
  Tensor t = uniform(shape, lo, hi, gen, DType::Float64);
  if (!is_floating(dtype)) t = t.round();
  return t.to(dtype);
}

// Equal value by value, including the sign of zero; NaN matches NaN (CUDA and x86 differ in
// the payload of a NaN made by float64 -> float32).
bool identical(const Tensor& a, const Tensor& b) {
  if (a.sizes() != b.sizes() || a.dtype() != b.dtype()) return false;
  const std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  for (size_t i = 0; i < x.size(); ++i) {
    const bool same = (std::isnan(x[i]) && std::isnan(y[i])) ||
                      (x[i] == y[i] && std::signbit(x[i]) == std::signbit(y[i]));
    if (!same) return false;
  }
  return true;
}

int64_t count_different(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  int64_t n = 0;
  for (size_t i = 0; i < x.size(); ++i) n += x[i] != y[i];
  return n;
}

uint64_t mallocs() { return cuda::memory_stats(0).device_mallocs; }

}  // namespace

TEST_CASE("cuda: runtime queries, device guard and streams") {
  REQUIRE(cuda::built_with_cuda());
  REQUIRE(cuda::is_available());
  REQUIRE(cuda::device_count() >= 1);
  const int current = cuda::current_device();
  CHECK(current >= 0);
  CHECK(current < cuda::device_count());
  {
    cuda::DeviceGuard guard(0);
    CHECK(cuda::current_device() == 0);
  }
  CHECK(cuda::current_device() == current);
  CHECK(cuda::stream(0) != nullptr);
  CHECK(cuda::stream(0) == cuda::stream(0));
  CHECK_NOTHROW(cuda::synchronize());
  CHECK_NOTHROW(cuda::synchronize(0));
  CHECK_THROWS_AS(cuda::set_device(cuda::device_count()), Error);
  CHECK_THROWS_AS(cuda::stream(cuda::device_count()), Error);
}

TEST_CASE("cuda: the side stream is forked from the device's stream and joined back, eager and captured") {
  // Note [The device's side stream]: what the side stream runs sees the device
  // stream's work before the fork, and the device stream's work after the join sees its work.
  Tensor y = zeros({1 << 20}, DType::Float32, kGpu), z = zeros({1 << 20}, DType::Float32, kGpu);
  auto forked_copy = [&](double value) {
    y.fill_(value);  // on the device's stream, before the fork
    auto side = static_cast<cudaStream_t>(cuda::fork_side(0));
    CHECK(side != static_cast<cudaStream_t>(cuda::stream(0)));
    REQUIRE(cudaMemcpyAsync(z.raw_data(), y.raw_data(), y.nbytes(), cudaMemcpyDeviceToDevice, side) == cudaSuccess);
    cuda::join_side(0);
    z.mul_(3);  // after the join
  };
  forked_copy(1);
  CHECK(z.min().item() == 3);
  CHECK(z.max().item() == 3);
  cuda::Graph g = cuda::Graph::capture([&] { forked_copy(2); }, 0);
  z.fill_(0);
  g.replay();
  cuda::synchronize(0);
  CHECK(z.min().item() == 6);
  CHECK(z.max().item() == 6);
  CHECK_THROWS_AS(cuda::fork_side(cuda::device_count()), Error);
}

TEST_CASE("cuda: cpu -> cuda -> cpu round trips every dtype") {
  Generator g(1);
  for (DType dt : kAllDTypes) {
    INFO(std::string(name(dt)));
    const Tensor cpu = random_cpu({37, 53}, dt, g, -100, 100);
    const Tensor gpu = cpu.to(kGpu);
    CHECK(gpu.is_cuda());
    CHECK(gpu.dtype() == dt);
    CHECK(gpu.sizes() == cpu.sizes());
    CHECK(identical(gpu.cpu(), cpu));
    CHECK(identical(cpu.to(kGpu).to(kGpu).clone().cpu(), cpu));  // device -> device copy
    const Tensor scalar = scalar_tensor(7, dt).to(kGpu);
    CHECK(scalar.item() == 7);
    const Tensor none = empty({0, 3}, dt, kGpu);
    CHECK(none.cpu().numel() == 0);
  }
  Tensor t = zeros({4, 5}, DType::Float32, kGpu);
  t.set({2, 3}, 1.5);
  CHECK(t.get({2, 3}) == 1.5);
  CHECK(t.sum().item() == 1.5);
}

TEST_CASE("cuda: dtype conversion on the device matches the CPU bit for bit") {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> specials = {
      0.0,   -0.0,   1.0,   -1.0,   0.5,    1.5,    2.5,     -2.5,   255.0, 255.9,
      256.0, -300.0, 65504, 65519,  65520,  1e5,    1e-8,    6e-8,   3e-5,  1.0 / 3,
      3e38,  4e38,   1e300, -1e300, 9.2e18, -1e19,  1.00048828125,   1.0 + 1.0 / 256,
      inf,   -inf,   std::nan("")};
  // Finite values >= 2^63 are left out of conversions to int64: the CPU's static_cast of
  // 2^63 is undefined behaviour (x86 gives INT64_MIN), the GPU saturates to INT64_MAX.
  std::vector<double> int64_safe;
  for (double v : specials) {
    if (!(std::isfinite(v) && v >= 9.3e18)) int64_safe.push_back(v);
  }
  Generator g(2);
  for (DType from : kAllDTypes) {
    const Tensor random = random_cpu({64, 33}, from, g, -1000, 1000);
    for (DType to : kAllDTypes) {
      const Tensor special = from_vector<double>(to == DType::Int64 ? int64_safe : specials).to(from);
      INFO(std::string(name(from)) << " -> " << std::string(name(to)));
      CHECK(identical(random.to(kGpu).to(to).cpu(), random.to(to)));
      CHECK(identical(special.to(kGpu).to(to).cpu(), special.to(to)));
    }
  }
  // float32 -> float16 on the device, bit for bit with the CPU's rounding.
  const Tensor f = normal({4096}, 0, 1000, g, DType::Float32);
  const std::vector<Half> cpu_bits = f.to(DType::Float16).to_vector<Half>();
  const std::vector<Half> gpu_bits = f.to(kGpu).to(DType::Float16).to_vector<Half>();
  int64_t different = 0;
  for (size_t i = 0; i < cpu_bits.size(); ++i) different += cpu_bits[i].bits != gpu_bits[i].bits;
  CHECK(different == 0);
}

TEST_CASE("cuda: 16-bit conversions agree bit for bit, every pattern and NaN payloads included") {
  // float16 / bfloat16 -> float for all 65536 patterns (Note [16-bit NaNs] in tensor/Half.h)
  std::vector<Half> all_half(65536);
  std::vector<BFloat16> all_bf16(65536);
  for (uint32_t b = 0; b < 65536; ++b) {
    all_half[b] = Half::from_bits(static_cast<uint16_t>(b));
    all_bf16[b] = BFloat16::from_bits(static_cast<uint16_t>(b));
  }
  auto float_bits = [](const Tensor& t) {
    const std::vector<float> v = t.to_vector<float>();
    std::vector<uint32_t> u(v.size());
    std::memcpy(u.data(), v.data(), v.size() * 4);
    return u;
  };
  for (const Tensor& t : {from_vector<Half>(all_half), from_vector<BFloat16>(all_bf16)}) {
    INFO(std::string(name(t.dtype())));
    CHECK(float_bits(t.to(kGpu).to(DType::Float32).cpu()) == float_bits(t.to(DType::Float32)));
  }
  // float -> float16 / bfloat16: random bit patterns (every exponent, subnormals, NaN payloads)
  Generator g(11);
  std::vector<uint32_t> patterns(1 << 20);
  for (uint32_t& u : patterns) u = static_cast<uint32_t>(g.uniform() * 4294967296.0);
  for (uint32_t u : {0x7f800001u, 0x7fc12345u, 0xffa00000u, 0x477ff000u, 0x477fefffu, 0x33000000u, 0x33000001u,
                     0x387ff000u, 0x7f7f8000u, 0x7f7fffffu, 0x3f808000u, 0x3f818000u}) {
    patterns.push_back(u);
  }
  std::vector<float> samples(patterns.size());
  std::memcpy(samples.data(), patterns.data(), patterns.size() * 4);
  const Tensor f = from_vector<float>(samples);
  auto half_bits = [](const Tensor& t) {
    std::vector<uint16_t> u;
    for (Half h : t.to_vector<Half>()) u.push_back(h.bits);
    return u;
  };
  auto bf16_bits = [](const Tensor& t) {
    std::vector<uint16_t> u;
    for (BFloat16 h : t.to_vector<BFloat16>()) u.push_back(h.bits);
    return u;
  };
  CHECK(half_bits(f.to(kGpu).to(DType::Float16).cpu()) == half_bits(f.to(DType::Float16)));
  CHECK(bf16_bits(f.to(kGpu).to(DType::BFloat16).cpu()) == bf16_bits(f.to(DType::BFloat16)));
}

TEST_CASE("cuda: strided copies to, from and on the device") {
  Generator g(3);
  const Tensor base = random_cpu({6, 8, 5}, DType::Float64, g);
  const Tensor gbase = base.to(kGpu);
  const std::vector<std::function<Tensor(const Tensor&)>> views = {
      [](const Tensor& t) { return t.transpose(0, 2); },
      [](const Tensor& t) { return t.narrow(1, 2, 4); },
      [](const Tensor& t) { return t.select(1, 3); },
      [](const Tensor& t) { return t.permute({2, 0, 1}).narrow(2, 1, 5); },
      [](const Tensor& t) { return t.narrow(1, 0, 1).expand({6, 8, 5}); },
      [](const Tensor& t) { return t.select(0, 2).select(1, 4).unsqueeze(0).expand({3, 8}); },
  };
  for (size_t i = 0; i < views.size(); ++i) {
    INFO("view " << i);
    const Tensor expected = views[i](base);
    CHECK(identical(expected.to(kGpu).cpu(), expected));                    // strided cpu -> cuda
    CHECK(identical(views[i](gbase).cpu(), expected));                      // strided cuda -> cpu
    CHECK(identical(views[i](gbase).contiguous().cpu(), expected));         // strided on device
    CHECK(identical(views[i](gbase).to(DType::Float32).cpu(), expected.to(DType::Float32)));
    CHECK(identical(views[i](gbase).to(DType::Float16).cpu(), expected.to(DType::Float16)));
  }
  // Strided destinations on the device, from the CPU and from the device.
  Tensor dst = zeros({5, 8, 6}, DType::Float64, kGpu);
  dst.transpose(0, 2).copy_(base);
  CHECK(identical(dst.cpu(), base.transpose(0, 2).contiguous()));
  Tensor dst2 = zeros({5, 8, 6}, DType::Float32, kGpu);
  dst2.transpose(0, 2).copy_(gbase);  // converts and scatters on the device
  CHECK(identical(dst2.cpu(), base.transpose(0, 2).to(DType::Float32).contiguous()));
  Tensor row = zeros({8}, DType::Float64, kGpu);
  Tensor grid = zeros({6, 8}, DType::Float64, kGpu);
  row.copy_(base.select(0, 1).select(1, 2));
  grid.copy_(row);  // broadcast [8] -> [6 x 8] on the device
  CHECK(identical(grid.cpu(), base.select(0, 1).select(1, 2).expand({6, 8}).contiguous()));
  // A strided CPU destination from the device.
  Tensor host = zeros({5, 8, 6}, DType::Float64);
  host.transpose(0, 2).copy_(gbase);
  CHECK(identical(host, base.transpose(0, 2).contiguous()));
  // Beyond the kernel's dimension limit: an error, not a crash.
  const Tensor deep = zeros(Shape(17, 2), DType::Float32, kGpu);
  std::vector<int64_t> reversed(17);
  for (int64_t d = 0; d < 17; ++d) reversed[static_cast<size_t>(d)] = 16 - d;
  CHECK_THROWS_AS(deep.permute(reversed).contiguous(), Error);
}

TEST_CASE("cuda: fill matches the CPU for every dtype") {
  for (DType dt : kAllDTypes) {
    for (double v : {0.0, 3.7, -1.25, 300.5, 1e10, -1e20}) {
      INFO(std::string(name(dt)) << " fill " << v);
      CHECK(identical(full({3, 7}, v, dt, kGpu).cpu(), full({3, 7}, v, dt)));
      Tensor strided = zeros({7, 3}, dt, kGpu);
      strided.t().fill_(v);
      CHECK(identical(strided.cpu(), full({7, 3}, v, dt)));
    }
  }
}

TEST_CASE("cuda: unary ops match the CPU") {
  struct Case {
    const char* name;
    std::function<Tensor(const Tensor&)> op;
    double lo, hi;
    bool exact;  // computed with IEEE-exact operations only
  };
  const std::vector<Case> cases = {
      {"neg", [](const Tensor& t) { return t.neg(); }, -3, 3, true},
      {"abs", [](const Tensor& t) { return t.abs(); }, -3, 3, true},
      {"exp", [](const Tensor& t) { return t.exp(); }, -3, 3, false},
      {"log", [](const Tensor& t) { return t.log(); }, 0.25, 4, false},
      {"sqrt", [](const Tensor& t) { return t.sqrt(); }, 0.25, 4, true},
      {"rsqrt", [](const Tensor& t) { return t.rsqrt(); }, 0.25, 4, true},
      {"tanh", [](const Tensor& t) { return t.tanh(); }, -3, 3, false},
      {"sigmoid", [](const Tensor& t) { return t.sigmoid(); }, -3, 3, false},
      {"square", [](const Tensor& t) { return t.square(); }, -3, 3, true},
      {"reciprocal", [](const Tensor& t) { return t.reciprocal(); }, 0.25, 4, true},
      {"sign", [](const Tensor& t) { return t.sign(); }, -3, 3, true},
      {"relu", [](const Tensor& t) { return t.relu(); }, -3, 3, true},
      {"floor", [](const Tensor& t) { return t.floor(); }, -3, 3, true},
      {"ceil", [](const Tensor& t) { return t.ceil(); }, -3, 3, true},
      {"round", [](const Tensor& t) { return t.round(); }, -3, 3, true},
  };
  Generator g(4);
  for (DType dt : kAllDTypes) {
    for (const Case& c : cases) {
      INFO(std::string(c.name) << " on " << std::string(name(dt)));
      const Tensor in = random_cpu({65, 33}, dt, g, c.lo, c.hi);
      const Tensor expected = c.op(in.t());  // non-contiguous input on both sides
      const Tensor got = c.op(in.to(kGpu).t());
      CHECK(got.is_cuda());
      if (c.exact) {
        CHECK(identical(got.cpu(), expected));
      } else if (is_floating(dt)) {
        CHECK(max_rel_error(got, expected) <= tolerance(dt));
      } else {
        CHECK(max_abs_diff(got, expected) <= tolerance(dt));
      }
    }
  }
  // Integers outside every op's domain: defined results (0 for non-finite), no crash.
  for (DType dt : {DType::Int64, DType::UInt8}) {
    const Tensor in = from_vector<double>({0, 1, 2, 200, 255}).to(dt);
    for (const Case& c : cases) {
      INFO(std::string(c.name) << " on edge values of " << std::string(name(dt)));
      CHECK(max_abs_diff(c.op(in.to(kGpu)), c.op(in)) <= tolerance(dt));
    }
  }
  // Halves round to even; NaN survives relu.
  const Tensor halves = from_vector<double>({-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5});
  CHECK(identical(halves.to(kGpu).round().cpu(), from_vector<double>({-2, -2, -0.0, 0, 2, 2, 4})));
  CHECK(std::isnan(from_vector<float>({std::nanf("")}).to(kGpu).relu().item()));
}

TEST_CASE("cuda: binary ops and comparisons match the CPU, broadcasting") {
  struct Case {
    const char* name;
    std::function<Tensor(const Tensor&, const Tensor&)> op;
  };
  const std::vector<Case> cases = {
      {"add", [](const Tensor& a, const Tensor& b) { return a.add(b, 0.5); }},
      {"sub", [](const Tensor& a, const Tensor& b) { return a.sub(b, 2.0); }},
      {"mul", [](const Tensor& a, const Tensor& b) { return a.mul(b); }},
      {"div", [](const Tensor& a, const Tensor& b) { return a.div(b); }},
      {"maximum", [](const Tensor& a, const Tensor& b) { return a.maximum(b); }},
      {"minimum", [](const Tensor& a, const Tensor& b) { return a.minimum(b); }},
      {"eq", [](const Tensor& a, const Tensor& b) { return a.eq(b); }},
      {"ne", [](const Tensor& a, const Tensor& b) { return a.ne(b); }},
      {"lt", [](const Tensor& a, const Tensor& b) { return a.lt(b); }},
      {"le", [](const Tensor& a, const Tensor& b) { return a.le(b); }},
      {"gt", [](const Tensor& a, const Tensor& b) { return a.gt(b); }},
      {"ge", [](const Tensor& a, const Tensor& b) { return a.ge(b); }},
  };
  Generator g(5);
  for (DType dt : kAllDTypes) {
    // Coarse values (multiples of 1/2) so that equal pairs occur; b avoids 0 for the floats,
    // includes it for the integers (integer division by zero gives 0 on both devices).
    const Tensor a = random_cpu({17, 1, 9}, DType::Float64, g, -6, 6).mul(2).round().div(2).to(dt);
    Tensor b = random_cpu({5, 1}, DType::Float64, g, 0.5, 6).mul(2).round().div(2);
    if (!is_floating(dt)) b = b.sub(1).round();
    b = b.to(dt);
    for (const Case& c : cases) {
      INFO(std::string(c.name) << " on " << std::string(name(dt)));
      const Tensor expected = c.op(a, b);
      const Tensor got = c.op(a.to(kGpu), b.to(kGpu));
      CHECK(got.dtype() == expected.dtype());
      CHECK(identical(got.cpu(), expected));
      CHECK(identical(c.op(b.to(kGpu), a.to(kGpu)).cpu(), c.op(b, a)));
    }
  }
  // NaN propagates through maximum and minimum from either side.
  const Tensor x = from_vector<float>({std::nanf(""), 1, 2}).to(kGpu);
  const Tensor y = from_vector<float>({1, std::nanf(""), 0}).to(kGpu);
  for (const Tensor& r : {x.maximum(y), x.minimum(y), y.maximum(x), y.minimum(x)}) {
    const std::vector<float> v = r.to_vector<float>();
    CHECK(std::isnan(v[0]));
    CHECK(std::isnan(v[1]));
  }
}

// Note [Packed element-wise kernels]: contiguous, aligned operands of one dtype move in 16-byte
// packs, the last numel % V elements one by one; misaligned ones take the general kernel.
TEST_CASE("cuda: packed element-wise kernels match the CPU: tails, in place, misaligned views, every dtype") {
  Generator g(51);
  for (DType dt : kAllDTypes) {
    for (int64_t n : {1, 7, 8, 9, 17, 1000, 4099}) {
      INFO(std::string(name(dt)), " n ", n);
      const Tensor a = random_cpu({n}, DType::Float64, g, -6, 6).mul(2).round().div(2).to(dt);
      Tensor b = random_cpu({n}, DType::Float64, g, 0.5, 6).mul(2).round().div(2);
      if (!is_floating(dt)) b = b.sub(1).round();
      b = b.to(dt);
      const Tensor ga = a.to(kGpu), gb = b.to(kGpu);
      CHECK(identical(ga.add(gb, 0.5).cpu(), a.add(b, 0.5)));
      CHECK(identical(ga.mul(gb).cpu(), a.mul(b)));
      CHECK(identical(ga.sub(2.5).cpu(), a.sub(2.5)));
      CHECK(identical(ga.clamp(0, 2).cpu(), a.clamp(0, 2)));
      if (is_floating(dt)) CHECK(identical(ga.relu().cpu(), a.relu()));
      CHECK(identical(ga.gt(gb).cpu(), a.gt(b)));  // uint8 output: the general kernel
      Tensor in_place = ga.clone();
      in_place.add_(gb, 2.0);
      CHECK(identical(in_place.cpu(), a.add(b, 2.0)));
      Tensor filled = empty({n}, dt, kGpu);
      filled.fill_(3);
      CHECK(identical(filled.cpu(), full({n}, 3.0).to(dt)));
      // one element into the storage: no 16-byte alignment
      Tensor shifted = empty({n + 1}, dt, kGpu).narrow(0, 1, n);
      shifted.copy_(ga);
      shifted.add_(gb, 0.5);
      CHECK(identical(shifted.cpu(), a.add(b, 0.5)));
    }
  }
}

TEST_CASE("cuda: pow, scalar ops, clamp and the scalar-first kernels match the CPU") {
  Generator g(6);
  const kernels::Backend& cpu_k = kernels::cpu();
  const kernels::Backend& gpu_k = kernels::cuda();
  for (DType dt : kAllDTypes) {
    INFO(std::string(name(dt)));
    const Tensor a = random_cpu({31, 7}, dt, g, 0.25, 4);
    const Tensor b = random_cpu({31, 7}, dt, g, -2, 2);
    const Tensor ga = a.to(kGpu), gb = b.to(kGpu);
    const double tol = tolerance(dt);
    CHECK(identical(ga.add(1.25).cpu(), a.add(1.25)));
    CHECK(identical(ga.mul(-0.75).cpu(), a.mul(-0.75)));
    CHECK(identical(ga.div(3.0).cpu(), a.div(3.0)));
    CHECK(identical(gb.gt(0.5).cpu(), b.gt(0.5)));
    CHECK(identical(gb.eq(1).cpu(), b.eq(1)));
    CHECK(identical(gb.le(-1).cpu(), b.le(-1)));
    CHECK(identical(gb.clamp(-1, 1.5).cpu(), b.clamp(-1, 1.5)));
    CHECK(identical(ga.pow(2).cpu(), a.pow(2)));
    for (double e : {0.5, 3.0, -1.0, 1.7}) {
      INFO("pow " << e);
      CHECK(max_rel_error(ga.pow(e), a.pow(e)) <= tol);
    }
    // Binary::Pow and scalar-first forms are reachable only through the kernels.
    Tensor out_cpu = empty(a.sizes(), dt), out_gpu = empty(a.sizes(), dt, kGpu);
    cpu_k.binary(kernels::Binary::Pow, a, b, out_cpu, 1);
    gpu_k.binary(kernels::Binary::Pow, ga, gb, out_gpu, 1);
    CHECK(max_rel_error(out_gpu, out_cpu) <= tol);
    for (auto op : {kernels::Binary::Sub, kernels::Binary::Div, kernels::Binary::Pow,
                    kernels::Binary::Max}) {
      INFO("scalar-first op " << static_cast<int>(op));
      cpu_k.binary_scalar(op, a, 2.5, true, out_cpu);
      gpu_k.binary_scalar(op, ga, 2.5, true, out_gpu);
      CHECK(max_rel_error(out_gpu, out_cpu) <= tol);
    }
    Tensor cmp_cpu = empty(a.sizes(), DType::UInt8), cmp_gpu = empty(a.sizes(), DType::UInt8, kGpu);
    cpu_k.binary_scalar(kernels::Binary::Lt, a, 2.0, true, cmp_cpu);
    gpu_k.binary_scalar(kernels::Binary::Lt, ga, 2.0, true, cmp_gpu);
    CHECK(identical(cmp_gpu.cpu(), cmp_cpu));
  }
}

TEST_CASE("cuda: in-place ops on strided tensors match the CPU") {
  Generator g(7);
  for (DType dt : kFloatDTypes) {
    INFO(std::string(name(dt)));
    Tensor c = random_cpu({9, 12}, dt, g, 0.5, 2);
    Tensor d = c.to(kGpu);
    const Tensor a = random_cpu({12, 9}, dt, g, -2, 2);
    const Tensor b = random_cpu({12, 1}, dt, g, 0.5, 2);
    const Tensor ga = a.to(kGpu), gb = b.to(kGpu);
    Tensor ct = c.t(), dt_view = d.t();  // in-place through a transposed view
    ct.add_(a, 0.5);
    dt_view.add_(ga, 0.5);
    ct.mul_(b);
    dt_view.mul_(gb);
    ct.addcmul_(a, b, 0.3);
    dt_view.addcmul_(ga, gb, 0.3);
    ct.addcdiv_(a, b, -0.7);
    dt_view.addcdiv_(ga, gb, -0.7);
    ct.clamp_(-1.5, 1.5).add_(2).sqrt_().neg_().mul_(1.5).add_(0.25);
    dt_view.clamp_(-1.5, 1.5).add_(2).sqrt_().neg_().mul_(1.5).add_(0.25);
    CHECK(identical(d.cpu(), c));
  }
}

TEST_CASE("cuda: reductions match the CPU") {
  Generator g(8);
  const std::vector<Shape> shapes = {{7, 300, 5}, {1000, 3}, {3, 1000}, {2, 70000, 3},
                                     {5000, 64},  {64, 40},  {1},       {4, 1, 6}};
  for (DType dt : kAllDTypes) {
    for (const Shape& shape : shapes) {
      INFO(std::string(name(dt)) << " " << shape_str(shape));
      const Tensor x = random_cpu(shape, dt, g, -3, 3);
      const Tensor gx = x.to(kGpu);
      // Sums: the CPU accumulates in double, the GPU in float for the 32- and 16-bit types.
      const double sum_tol = dt == DType::Float32 ? 1e-5 : tolerance(dt);
      CHECK(max_rel_error(gx.sum(), x.sum()) <= (is_floating(dt) ? sum_tol : 0.0));
      for (int64_t d = 0; d < x.dim(); ++d) {
        INFO("dim " << d);
        CHECK(max_rel_error(gx.sum(d), x.sum(d)) <= (is_floating(dt) ? sum_tol : 0.0));
        const auto [gmax, gidx] = gx.max(d, true);
        const auto [cmax, cidx] = x.max(d, true);
        CHECK(identical(gmax.cpu(), cmax));
        CHECK(identical(gidx.cpu(), cidx));  // first occurrence on ties, on both devices
        const auto [gmin, gmin_idx] = gx.min(d);
        const auto [cmin, cmin_idx] = x.min(d);
        CHECK(identical(gmin.cpu(), cmin));
        CHECK(identical(gmin_idx.cpu(), cmin_idx));
        if (is_floating(dt)) CHECK(max_rel_error(gx.mean(d), x.mean(d)) <= sum_tol);
      }
      CHECK(identical(gx.max().cpu(), x.max()));
      CHECK(identical(gx.min().cpu(), x.min()));
    }
  }
  // NaN wins max and min, and the first NaN gives the index.
  const float nan = std::nanf("");
  const Tensor with_nan = from_vector<float>({1, nan, 5, nan, -2, 7}, {2, 3});
  const auto [values, indices] = with_nan.to(kGpu).max(1);
  CHECK(std::isnan(values.get({0})));
  CHECK(std::isnan(values.get({1})));
  CHECK(indices.get({0}) == 1);
  CHECK(indices.get({1}) == 0);
  CHECK(std::isnan(with_nan.to(kGpu).min().item()));
  CHECK(with_nan.to(kGpu).argmax(0).cpu().to_vector<int64_t>() == std::vector<int64_t>{1, 0, 1});
}

TEST_CASE("cuda: the full sum of 10M float32 values is accurate") {
  // (its speed belongs to a benchmark, not a test)
  Generator g(9);
  const Tensor x = uniform({10'000'000}, 0, 1, g, DType::Float32, kGpu);
  const double expected = x.cpu().sum().item();  // accumulated in double on the CPU
  const double got = x.sum().item();
  CHECK(std::abs(got - expected) / expected <= 1e-6);
}

TEST_CASE("cuda: uniform_, normal_ and bernoulli_ give the CPU's values for the same seed") {
  for (DType dt : kFloatDTypes) {
    INFO(std::string(name(dt)));
    Generator gc(1234), gg(1234);
    const Shape shape{97, 103};
    // Uniform and Bernoulli use only IEEE-exact operations: identical on both devices.
    CHECK(identical(empty(shape, dt, kGpu).uniform_(-2, 5, gg).cpu(), empty(shape, dt).uniform_(-2, 5, gc)));
    CHECK(identical(empty(shape, dt, kGpu).bernoulli_(0.3, gg).cpu(), empty(shape, dt).bernoulli_(0.3, gc)));
    // Normal goes through log and cos, whose CUDA and C library versions may differ by an ulp
    // in float64; once rounded to a narrower dtype the values agree.
    const Tensor normal_cpu = empty(shape, dt).normal_(0.5, 2, gc);
    const Tensor normal_gpu = empty(shape, dt, kGpu).normal_(0.5, 2, gg);
    if (dt == DType::Float64) {
      CHECK(max_rel_error(normal_gpu, normal_cpu) <= 1e-14);
      MESSAGE("float64 normal_: " << count_different(normal_gpu, normal_cpu) << " of "
                                  << normal_cpu.numel() << " values differ in the last bits");
    } else {
      CHECK(identical(normal_gpu.cpu(), normal_cpu));
    }
    // A strided target draws the same numbers as a contiguous one, in row-major order.
    Tensor strided_gpu = zeros({103, 97}, dt, kGpu);
    strided_gpu.t().uniform_(0, 1, gg);
    Tensor strided_cpu = zeros({103, 97}, dt);
    strided_cpu.t().uniform_(0, 1, gc);
    CHECK(identical(strided_gpu.cpu(), strided_cpu));
  }
  Generator gc(5), gg(5);
  CHECK(identical(empty({1000}, DType::UInt8, kGpu).bernoulli_(0.5, gg).cpu(),
                  empty({1000}, DType::UInt8).bernoulli_(0.5, gc)));
}

TEST_CASE("cuda: the caching allocator reuses blocks and reports its memory") {
  cuda::empty_cache();  // blocks cached by earlier tests would be handed out first
  CHECK(cuda::allocate(0, 0) == nullptr);
  CHECK_NOTHROW(cuda::deallocate(cuda::allocate(0, 0), 0));
  CHECK_NOTHROW(cuda::deallocate(nullptr, 0));

  // A freed block is handed to the next request of the same size class.
  void* small = cuda::allocate(1000, 0);
  cuda::deallocate(small, 0);
  CHECK(cuda::allocate(900, 0) == small);
  cuda::deallocate(small, 0);
  void* large = cuda::allocate(10u << 20, 0);
  cuda::deallocate(large, 0);
  CHECK(cuda::allocate(7u << 20, 0) == large);  // 10 MiB serves 7 MiB (8 MiB rounded)...
  void* other = cuda::allocate(3u << 20, 0);    // ...but not 3 MiB (4 MiB rounded)
  CHECK(other != large);
  cuda::deallocate(other, 0);
  cuda::deallocate(large, 0);

  // Steady state: a loop creating and dropping the same tensors never calls cudaMalloc.
  Generator g(10);
  auto step = [&] {
    const Tensor a = uniform({256, 1000}, -1, 1, g, DType::Float32, kGpu);
    const Tensor b = a.mul(a).add(1).sqrt();
    return b.sum(1).sum().item() + a.max(0).first.sum().item();
  };
  for (int i = 0; i < 3; ++i) step();
  const cuda::MemoryStats warm = cuda::memory_stats(0);
  for (int i = 0; i < 50; ++i) step();
  const cuda::MemoryStats after = cuda::memory_stats(0);
  CHECK(after.device_mallocs == warm.device_mallocs);
  CHECK(after.allocated_bytes == warm.allocated_bytes);
  CHECK(after.peak_allocated_bytes >= after.allocated_bytes);

  {
    const cuda::MemoryStats before = cuda::memory_stats(0);
    const Tensor held = empty({1 << 20}, DType::Float32, kGpu);
    const cuda::MemoryStats holding = cuda::memory_stats(0);
    CHECK(holding.allocated_bytes >= before.allocated_bytes + held.nbytes());
    CHECK(holding.reserved_bytes >= holding.allocated_bytes);
    CHECK(holding.peak_allocated_bytes >= holding.allocated_bytes);
  }

  {
    // reset_peak_memory_stats starts the peak again from what tensors hold now
    { const Tensor big = empty({1 << 22}, DType::Float32, kGpu); }
    const cuda::MemoryStats high = cuda::memory_stats(0);
    REQUIRE(high.peak_allocated_bytes >= high.allocated_bytes + (size_t{1} << 24));
    cuda::reset_peak_memory_stats(0);
    CHECK(cuda::memory_stats(0).peak_allocated_bytes == high.allocated_bytes);
    const Tensor small = empty({1 << 10}, DType::Float32, kGpu);
    const cuda::MemoryStats low = cuda::memory_stats(0);
    CHECK(low.peak_allocated_bytes == low.allocated_bytes);
    CHECK(low.peak_allocated_bytes < high.peak_allocated_bytes);
  }

  // empty_cache gives every unused block back.
  const cuda::MemoryStats cached = cuda::memory_stats(0);
  REQUIRE(cached.reserved_bytes > cached.allocated_bytes);
  cuda::empty_cache();
  const cuda::MemoryStats emptied = cuda::memory_stats(0);
  CHECK(emptied.reserved_bytes == emptied.allocated_bytes);
  CHECK(emptied.device_frees > cached.device_frees);
  const uint64_t before_regrow = mallocs();
  step();
  CHECK(mallocs() > before_regrow);  // the cache was really empty

  // Misuse is reported, never thrown, from deallocate (it runs in destructors).
  int not_a_device_pointer = 0;
  CHECK_NOTHROW(cuda::deallocate(&not_a_device_pointer, 0));
}

TEST_CASE("cuda: allocated counts what requests hold, reserved the blocks; peaks of both; release gives back") {
  cuda::empty_cache();
  const size_t mib = size_t{1} << 20;
  // A 7 MiB request (8 MiB rounded) served from a cached 10 MiB block: 8 MiB allocated, as
  // PyTorch's split block would count, and the other 2 MiB reserved only.
  void* large = cuda::allocate(10 * mib, 0);
  cuda::deallocate(large, 0);
  const cuda::MemoryStats cached = cuda::memory_stats(0);
  CHECK(cached.cached_bytes == 10 * mib);
  CHECK(cuda::allocate(7 * mib, 0) == large);
  const cuda::MemoryStats served = cuda::memory_stats(0);
  CHECK(served.allocated_bytes == cached.allocated_bytes + 8 * mib);
  CHECK(served.reserved_bytes == cached.reserved_bytes);
  CHECK(served.cached_bytes == 0);
  cuda::deallocate(large, 0);
  CHECK(cuda::memory_stats(0).allocated_bytes == cached.allocated_bytes);
  CHECK(cuda::memory_stats(0).cached_bytes == 10 * mib);

  // peak_reserved_bytes follows the driver's blocks; reset_peak_memory_stats starts it again
  cuda::reset_peak_memory_stats(0);
  const size_t base = cuda::memory_stats(0).reserved_bytes;
  CHECK(cuda::memory_stats(0).peak_reserved_bytes == base);
  void* big = cuda::allocate(32 * mib, 0);  // larger than any cached block: a new one
  CHECK(cuda::memory_stats(0).peak_reserved_bytes == base + 32 * mib);

  // release: the block goes back to the driver, not the cache
  const cuda::MemoryStats held = cuda::memory_stats(0);
  cuda::release(big, 0);
  const cuda::MemoryStats released = cuda::memory_stats(0);
  CHECK(released.reserved_bytes == held.reserved_bytes - 32 * mib);
  CHECK(released.cached_bytes == held.cached_bytes);
  CHECK(released.allocated_bytes == held.allocated_bytes - 32 * mib);
  CHECK(released.device_frees == held.device_frees + 1);
  CHECK(released.peak_reserved_bytes == base + 32 * mib);  // the peak remembers it
  cuda::reset_peak_memory_stats(0);
  CHECK(cuda::memory_stats(0).peak_reserved_bytes == released.reserved_bytes);
  CHECK_NOTHROW(cuda::release(nullptr, 0));
  int not_a_device_pointer = 0;
  CHECK_NOTHROW(cuda::release(&not_a_device_pointer, 0));  // reported, never thrown
}

TEST_CASE("cuda: an impossible allocation throws and leaves the device usable") {
  const int64_t one_pib_of_floats = int64_t{1} << 48;  // 2^48 float32 = 1 PiB
  try {
    const Tensor huge = empty({one_pib_of_floats}, DType::Float32, kGpu);
    FAIL("allocating 1 PiB succeeded");
  } catch (const Error& e) {
    const std::string what = e.what();
    INFO(what);
    CHECK(what.find("1125899906842624") != std::string::npos);
    CHECK(what.find("cuda:0") != std::string::npos);
  }
  CHECK(ones({1000}, DType::Float32, kGpu).sum().item() == 1000);
  CHECK_THROWS_AS(cuda::allocate(SIZE_MAX, 0), Error);
}

TEST_CASE("cuda: a memory limit refuses what would exceed it, after releasing the cache, and names itself") {
  cuda::empty_cache();
  const size_t base = cuda::memory_stats(0).reserved_bytes;
  { const Tensor warm = empty({1 << 18}, DType::Float32, kGpu); }  // 1 MiB, now cached
  CHECK(cuda::memory_stats(0).reserved_bytes > base);
  cuda::set_memory_limit(base + (3u << 20), 0);
  CHECK(cuda::memory_limit(0) == base + (3u << 20));
  CHECK_NOTHROW(empty({1 << 18}, DType::Float32, kGpu));  // served from the cache
  std::string message;
  try {
    (void)empty({1 << 20}, DType::Float32, kGpu);  // 4 MiB: over the limit even with the cache released
  } catch (const Error& e) {
    message = e.what();
  }
  cuda::set_memory_limit(0, 0);
  INFO(message);
  CHECK(message.find("tensor::cuda::allocate: out of memory on cuda:0: cannot allocate 4194304 bytes (4.00 MiB)") == 0);
  CHECK(message.find("free of ") != std::string::npos);
  CHECK(message.find("its limit is ") != std::string::npos);
  CHECK(cuda::memory_stats(0).cached_bytes == 0);         // the cache was released
  CHECK_NOTHROW(empty({1 << 20}, DType::Float32, kGpu));  // no limit: fine again
}

TEST_CASE("cuda: shutdown gives cached blocks and the stream back; live tensors stay; work resumes") {
  const Tensor live = arange(0, 1000, 1, DType::Float32).to(kGpu);
  { const Tensor cached = empty({1 << 20}, DType::Float32, kGpu); }
  cuda::shutdown();
  const cuda::MemoryStats s = cuda::memory_stats(0);
  CHECK(s.cached_bytes == 0);
  CHECK(s.reserved_bytes >= s.allocated_bytes);
  CHECK(s.allocated_bytes >= live.nbytes());
  CHECK(identical(live.cpu(), arange(0, 1000, 1, DType::Float32)));  // a new stream, the same data
  CHECK(identical(live.mul(2).cpu(), arange(0, 2000, 2, DType::Float32)));
  cuda::shutdown();  // twice is fine
}

TEST_CASE("cuda graph: replay runs the recorded work on the values the tensors hold at replay") {
  Generator gen(7001);
  Tensor x = uniform({1000}, -1, 1, gen, DType::Float32, kGpu);
  Tensor y = zeros({1000}, DType::Float32, kGpu);
  auto work = [&] { y.copy_(x).mul_(2).add_(1); };
  work();  // warm-up, as for any capture
  cuda::Graph g = cuda::Graph::capture(work);
  REQUIRE(g.defined());
  CHECK(g.device() == 0);
  CHECK(g.nodes() >= 3);
  for (int k = 0; k < 3; ++k) {
    const Tensor fresh = uniform({1000}, -1, 1, gen, DType::Float32);
    x.copy_(fresh);  // inputs are refreshed in place
    g.replay();
    CHECK(max_abs_diff(y.cpu(), fresh.mul(2).add(1)) < 1e-6);
  }
  cuda::Graph moved = std::move(g);
  CHECK_FALSE(g.defined());
  CHECK_THROWS_WITH_AS(g.replay(), doctest::Contains("the graph is empty"), Error);
  moved.replay();
  cuda::synchronize(0);
}

TEST_CASE(
    "cuda graph: memset nodes become kernel nodes with the same bytes, values and edges (Note [Memset nodes "
    "in CUDA graphs])") {
  // A graph built by hand: A = 0x11 (bytes) -> A = 0x22 (bytes) -> rows of 16-bit 0xbeef in B
  // -> 32-bit 0xdeadbeef in C -> 1 MiB of 0x5a in D, a chain whose order decides A; B's rows
  // have a pitch wider than their width, so the bytes between them must stay as they were. D is
  // beyond the 64 KiB rewritten: it stays a memset node.
  uint8_t* a = nullptr;
  uint16_t* b = nullptr;
  uint32_t* c = nullptr;
  uint8_t* d = nullptr;
  REQUIRE(cudaMalloc(&d, 1 << 20) == cudaSuccess);
  REQUIRE(cudaMalloc(&a, 1000) == cudaSuccess);
  REQUIRE(cudaMalloc(&b, 7 * 512) == cudaSuccess);
  REQUIRE(cudaMalloc(&c, 300 * 4) == cudaSuccess);
  REQUIRE(cudaMemset(b, 0x77, 7 * 512) == cudaSuccess);
  cudaGraph_t graph = nullptr;
  REQUIRE(cudaGraphCreate(&graph, 0) == cudaSuccess);
  const cudaMemsetParams params[] = {{a, 0, 0x11, 1, 1000, 1},
                                     {a, 0, 0x22, 1, 1000, 1},
                                     {b, 512, 0xbeef, 2, 100, 7},
                                     {c, 0, 0xdeadbeefu, 4, 300, 1},
                                     {d, 0, 0x5a, 1, 1 << 20, 1}};
  cudaGraphNode_t previous = nullptr;
  for (const cudaMemsetParams& p : params) {
    cudaGraphNode_t node = nullptr;
    REQUIRE(cudaGraphAddMemsetNode(&node, graph, previous ? &previous : nullptr, previous ? 1 : 0, &p) == cudaSuccess);
    previous = node;
  }
  CHECK(cuda::memset_nodes_to_kernels(graph) == 4);
  size_t n = 0;
  REQUIRE(cudaGraphGetNodes(graph, nullptr, &n) == cudaSuccess);
  std::vector<cudaGraphNode_t> nodes(n);
  REQUIRE(cudaGraphGetNodes(graph, nodes.data(), &n) == cudaSuccess);
  CHECK(n == 5);
  size_t roots = 0, edges = 0, kernels = 0;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type;
    REQUIRE(cudaGraphNodeGetType(node, &type) == cudaSuccess);
    kernels += type == cudaGraphNodeTypeKernel;
    size_t deps = 0;
    REQUIRE(cudaGraphNodeGetDependencies(node, nullptr, nullptr, &deps) == cudaSuccess);
    roots += deps == 0;
    edges += deps;
  }
  CHECK(kernels == 4);
  CHECK(roots == 1);  // still one chain
  CHECK(edges == 4);
  cudaGraphExec_t exec = nullptr;
  REQUIRE(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
  REQUIRE(cudaGraphLaunch(exec, nullptr) == cudaSuccess);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  std::vector<uint8_t> ha(1000);
  std::vector<uint16_t> hb(7 * 256);
  std::vector<uint32_t> hc(300);
  REQUIRE(cudaMemcpy(ha.data(), a, 1000, cudaMemcpyDeviceToHost) == cudaSuccess);
  REQUIRE(cudaMemcpy(hb.data(), b, 7 * 512, cudaMemcpyDeviceToHost) == cudaSuccess);
  REQUIRE(cudaMemcpy(hc.data(), c, 300 * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(std::all_of(ha.begin(), ha.end(), [](uint8_t v) { return v == 0x22; }));
  for (int row = 0; row < 7; ++row) {
    for (int i = 0; i < 256; ++i) CHECK(hb[row * 256 + i] == (i < 100 ? 0xbeef : 0x7777));
  }
  CHECK(std::all_of(hc.begin(), hc.end(), [](uint32_t v) { return v == 0xdeadbeefu; }));
  std::vector<uint8_t> hd(1 << 20);
  REQUIRE(cudaMemcpy(hd.data(), d, 1 << 20, cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(std::all_of(hd.begin(), hd.end(), [](uint8_t v) { return v == 0x5a; }));
  CHECK(cudaGraphExecDestroy(exec) == cudaSuccess);
  CHECK(cudaGraphDestroy(graph) == cudaSuccess);
  CHECK(cudaFree(a) == cudaSuccess);
  CHECK(cudaFree(b) == cudaSuccess);
  CHECK(cudaFree(c) == cudaSuccess);
  CHECK(cudaFree(d) == cudaSuccess);
}

TEST_CASE("cuda graph: a graph with allocation nodes keeps its memset nodes (CUDA cannot remove edges there)") {
  cudaGraph_t graph = nullptr;
  REQUIRE(cudaGraphCreate(&graph, 0) == cudaSuccess);
  cudaMemAllocNodeParams alloc{};
  alloc.poolProps.allocType = cudaMemAllocationTypePinned;
  alloc.poolProps.location.type = cudaMemLocationTypeDevice;
  alloc.poolProps.location.id = 0;
  alloc.bytesize = 4096;
  cudaGraphNode_t allocated = nullptr, set = nullptr, freed = nullptr;
  REQUIRE(cudaGraphAddMemAllocNode(&allocated, graph, nullptr, 0, &alloc) == cudaSuccess);
  const cudaMemsetParams zero{alloc.dptr, 0, 0, 1, 4096, 1};
  REQUIRE(cudaGraphAddMemsetNode(&set, graph, &allocated, 1, &zero) == cudaSuccess);
  REQUIRE(cudaGraphAddMemFreeNode(&freed, graph, &set, 1, alloc.dptr) == cudaSuccess);
  CHECK(cuda::memset_nodes_to_kernels(graph) == 0);
  cudaGraphNodeType type;
  REQUIRE(cudaGraphNodeGetType(set, &type) == cudaSuccess);
  CHECK(type == cudaGraphNodeTypeMemset);
  size_t n = 0;
  REQUIRE(cudaGraphGetNodes(graph, nullptr, &n) == cudaSuccess);
  CHECK(n == 3);
  CHECK(cudaGraphDestroy(graph) == cudaSuccess);
  CHECK(cudaGetLastError() == cudaSuccess);
}

TEST_CASE("cuda graph: a memset captured between kernels runs in its place on every replay") {
  Tensor y = full({4096}, 5.0, DType::Float32, kGpu);
  auto work = [&] {
    y.mul_(3);  // overwritten by the memset: it must not run after it
    REQUIRE(cudaMemsetAsync(y.raw_data(), 0, y.nbytes(), static_cast<cudaStream_t>(cuda::stream(0))) == cudaSuccess);
    y.add_(1);
  };
  work();
  CHECK(identical(y.cpu(), full({4096}, 1.0, DType::Float32)));
  cuda::Graph g = cuda::Graph::capture(work);
  for (double start : {5.0, -2.0}) {
    y.fill_(start);
    g.replay();
    CHECK(identical(y.cpu(), full({4096}, 1.0, DType::Float32)));
  }
  cuda::synchronize(0);
}

TEST_CASE("cuda graph: memory allocated or freed inside a capture stays the graph's until it is destroyed") {
  Generator gen(7002);
  Tensor x = uniform({4096}, -1, 1, gen, DType::Float32, kGpu);
  Tensor y = zeros({4096}, DType::Float32, kGpu);
  Tensor before = zeros({4096}, DType::Float32, kGpu);  // allocated before, freed inside
  auto work = [&] {
    const Tensor tmp = x.mul(3);  // a temporary: allocated and freed while capturing
    y.copy_(tmp.add(1));
    before = Tensor();
  };
  cuda::Graph g = cuda::Graph::capture(work);
  // Eager tensors of the same size, made after the capture, must not share the graph's
  // blocks: filled with garbage, they would corrupt the replay if they did.
  std::vector<Tensor> eager;
  for (int k = 0; k < 4; ++k) eager.push_back(full({4096}, 1e30, DType::Float32, kGpu));
  const Tensor fresh = uniform({4096}, -1, 1, gen, DType::Float32);
  x.copy_(fresh);
  g.replay();
  for (Tensor& t : eager) t.fill_(-1e30);  // written after the replay, in stream order
  CHECK(max_abs_diff(y.cpu(), fresh.mul(3).add(1)) < 1e-5);
  for (const Tensor& t : eager) CHECK(max_abs_diff(t.cpu(), full({4096}, -1e30)) == 0);
  // Destroyed: its pool returns to the cache, so a new request of that size needs no cudaMalloc.
  const uint64_t mallocs = cuda::memory_stats(0).device_mallocs;
  g = cuda::Graph();
  const Tensor reused = empty({4096}, DType::Float32, kGpu);
  CHECK(cuda::memory_stats(0).device_mallocs == mallocs);
}

TEST_CASE("cuda graph: a block released inside a capture stays the graph's, not the driver's") {
  Tensor y = zeros({1024}, DType::Float32, kGpu);
  const Tensor x = full({1024}, 2.0, DType::Float32, kGpu);
  cuda::synchronize(0);
  const uint64_t frees = cuda::memory_stats(0).device_frees;
  cuda::Graph g = cuda::Graph::capture([&] {
    void* scratch = cuda::allocate(4u << 20, 0);  // as a search's trial workspace would be
    y.copy_(x.mul(3));
    cuda::release(scratch, 0);  // a cudaFree here would invalidate the capture
  });
  CHECK(cuda::memory_stats(0).device_frees == frees);
  g.replay();
  CHECK(max_abs_diff(y.cpu(), full({1024}, 6.0)) == 0);
}

TEST_CASE("cuda graph: a host synchronisation inside the capture is an error naming it; nothing is kept") {
  Tensor x = ones({16}, DType::Float32, kGpu);
  const size_t reserved = cuda::memory_stats(0).reserved_bytes;
  const std::string e = [&] {
    try {
      cuda::Graph::capture([&] {
        x.add_(1);
        (void)x.sum().item();  // reads a value to the host
      });
    } catch (const Error& err) {
      return std::string(err.what());
    }
    return std::string("(no error)");
  }();
  CHECK(e.find("tensor::cuda::Graph::capture on cuda:0") != std::string::npos);
  CHECK(e.find("may not wait for the device") != std::string::npos);
  // the device is usable and the capture's x.add_(1) never ran
  x.add_(1);
  CHECK(max_abs_diff(x.cpu(), full({16}, 2.0)) == 0);
  CHECK(cuda::memory_stats(0).reserved_bytes >= reserved);
  // a second capture works
  cuda::Graph g = cuda::Graph::capture([&] { x.mul_(2); });
  g.replay();
  CHECK(max_abs_diff(x.cpu(), full({16}, 4.0)) == 0);
}

// Note [Random fills in CUDA graphs]: a captured fill reads the generator's seed and offset at
// replay, so every replay draws what the same fill run eagerly would draw from the generator's
// state at that moment (and a CPU fill draws the same numbers: Note [Counter-based randomness]).
TEST_CASE("cuda graph: a captured random fill draws fresh numbers at every replay, the eager fill's") {
  Tensor t = zeros({1000}, DType::Float32, kGpu);
  Tensor mask = zeros({1000}, DType::Float32, kGpu);
  Tensor strided = zeros({50, 40}, DType::Float32, kGpu).t();  // not contiguous: filled through a temporary
  Generator gen(7003), eager(7003);
  cuda::Graph g = cuda::Graph::capture([&] {
    t.uniform_(-1, 1, gen).mul_(2);
    mask.bernoulli_(0.25, gen);
    strided.normal_(0, 1, gen);
  });
  CHECK(gen.offset() == 0);  // the capture drew nothing
  std::vector<Tensor> seen;
  for (int k = 0; k < 4; ++k) {
    if (k == 3) {  // a reseed between replays takes effect
      gen.manual_seed(99);
      eager.manual_seed(99);
    }
    g.replay();
    const Tensor want_t = uniform({1000}, -1, 1, eager, DType::Float32).mul(2);
    const Tensor want_mask = zeros({1000}, DType::Float32).bernoulli_(0.25, eager);
    const Tensor want_strided = zeros({50, 40}, DType::Float32).t().normal_(0, 1, eager);
    CHECK(identical(t.cpu(), want_t));
    CHECK(identical(mask.cpu(), want_mask));
    CHECK(max_abs_diff(strided.cpu(), want_strided) < 1e-5);  // log, cos: device vs host libm
    CHECK(gen.offset() == eager.offset());
    seen.push_back(t.cpu());
  }
  CHECK(max_abs_diff(seen[0], seen[1]) > 0);  // fresh numbers, not a frozen draw
  CHECK(max_abs_diff(seen[1], seen[2]) > 0);
}

// CpuKernels.cpp: the CPU implementation of tensor/Kernels.h. One strided element loop
// (dimensions coalesced, split into blocks run with OpenMP) serves every element-wise
// kernel; reductions run over a contiguous [outer x n x inner] layout.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <type_traits>
#include <utility>
#include <vector>

#include "tensor/BinaryDispatch.h"
#include "tensor/Kernels.h"

namespace tensor::kernels {

namespace {

constexpr int64_t kBlock = 16384;  // elements per parallel block
constexpr int kMaxDims = 16;

template <size_t N>
struct Operands {
  std::array<char*, N> base;
  std::array<Shape, N> strides;  // bytes
};

// Note [Memory order]
// Element-wise kernels walk the dims in the output's memory order (largest stride first),
// not in index order: a channels-last output (NHWC strides on an NCHW shape) then reads as
// one run, and when every operand shares its strides (the usual case: dense operands of
// one memory format) the dims all merge into one and the loop is flat, as it is for
// row-major tensors. Only the visiting order changes; each element gets the same value.
std::vector<size_t> memory_order(const Shape& sizes, const Shape& strides) {
  std::vector<size_t> order;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] != 1) order.push_back(d);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return strides[a] > strides[b]; });
  return order;
}

// Calls f(ptrs) for every element of `sizes`, where ptrs[k] points into operand k.
template <size_t N, class F>
void for_each_element(const Shape& sizes_in, Operands<N> ops, F&& f) {
  // Drop size-1 dims, visit the rest in operand 0's memory order (Note [Memory order]) and
  // merge dims that are contiguous with each other in every operand.
  Shape sizes;
  std::array<Shape, N> strides;
  for (const size_t d : memory_order(sizes_in, ops.strides[0])) {
    const bool mergeable = !sizes.empty() && [&] {
      for (size_t k = 0; k < N; ++k) {
        if (strides[k].back() != ops.strides[k][d] * sizes_in[d]) return false;
      }
      return true;
    }();
    if (mergeable) {
      sizes.back() *= sizes_in[d];
      for (size_t k = 0; k < N; ++k) strides[k].back() = ops.strides[k][d];
    } else {
      sizes.push_back(sizes_in[d]);
      for (size_t k = 0; k < N; ++k) strides[k].push_back(ops.strides[k][d]);
    }
  }
  const int64_t numel = shape_numel(sizes_in);
  if (numel == 0) return;
  if (sizes.empty()) {
    std::array<char*, N> p = ops.base;
    f(p);
    return;
  }
  const int nd = static_cast<int>(sizes.size());
  TENSOR_CHECK(nd <= kMaxDims, "tensor kernels: at most ", kMaxDims, " dimensions, got ", nd);
  const int64_t inner = sizes[nd - 1];
  std::array<int64_t, N> inner_stride;
  for (size_t k = 0; k < N; ++k) inner_stride[k] = strides[k][nd - 1];
  const int64_t nblocks = (numel + kBlock - 1) / kBlock;

#pragma omp parallel for schedule(static) if (nblocks > 1)
  for (int64_t block = 0; block < nblocks; ++block) {
    const int64_t begin = block * kBlock;
    const int64_t end = std::min(numel, begin + kBlock);
    int64_t coord[kMaxDims];
    int64_t rem = begin;
    for (int d = nd - 1; d >= 0; --d) {
      coord[d] = rem % sizes[d];
      rem /= sizes[d];
    }
    int64_t i = begin;
    while (i < end) {
      std::array<char*, N> p;
      for (size_t k = 0; k < N; ++k) {
        p[k] = ops.base[k];
        for (int d = 0; d < nd; ++d) p[k] += coord[d] * strides[k][d];
      }
      const int64_t run = std::min(end - i, inner - coord[nd - 1]);
      for (int64_t j = 0; j < run; ++j) {
        f(p);
        for (size_t k = 0; k < N; ++k) p[k] += inner_stride[k];
      }
      i += run;
      coord[nd - 1] += run;
      for (int d = nd - 1; d > 0 && coord[d] == sizes[d]; --d) {
        coord[d] = 0;
        ++coord[d - 1];
      }
    }
  }
}

template <class T>
Shape byte_strides(const Tensor& t) {
  Shape s = t.strides();
  for (auto& v : s) v *= static_cast<int64_t>(sizeof(T));
  return s;
}

Shape byte_strides(const Tensor& t) {
  Shape s = t.strides();
  for (auto& v : s) v *= static_cast<int64_t>(itemsize(t.dtype()));
  return s;
}

template <class T>
using compute_t = std::conditional_t<std::is_integral_v<T>, double, acc_t<T>>;

// Converts a computed value to T; non-finite values cannot be integers, so those become 0.
template <class T, class V>
T cast_to(V v) {
  if constexpr (std::is_integral_v<T>) {
    const double d = static_cast<double>(v);
    if (!std::isfinite(d)) return T(0);
    // double(max) of int64 rounds up to 2^63, which does not convert: saturate before casting
    constexpr double lo = static_cast<double>(std::numeric_limits<T>::lowest());
    constexpr double hi = static_cast<double>(std::numeric_limits<T>::max());
    if (d >= hi) return std::numeric_limits<T>::max();
    if (d <= lo) return std::numeric_limits<T>::lowest();
    return static_cast<T>(std::trunc(d));
  } else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return T(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

template <class T>
double to_double(T v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return static_cast<double>(static_cast<float>(v));
  } else {
    return static_cast<double>(v);
  }
}

// Operands that are all dense with the same strides (the usual case: freshly made tensors of
// one memory format) hold the same element at the same flat index, so the kernels below loop
// over plain arrays, which the compiler vectorises, instead of for_each_element's pointer
// steps by run-time strides. Same elements, same values, same order within each element.
template <class... Ts>
bool dense_alike(const Tensor& out, const Ts&... ins) {
  return out.is_non_overlapping_and_dense() && ((ins.strides() == out.strides()) && ...);
}

// Calls body(begin, end) over [0, numel) in kBlock pieces, in parallel as for_each_element.
template <class F>
void for_flat_blocks(int64_t numel, F&& body) {
  const int64_t nblocks = (numel + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (nblocks > 1)
  for (int64_t block = 0; block < nblocks; ++block) body(block * kBlock, std::min(numel, (block + 1) * kBlock));
}

// Element-wise: out (typed Out) = fn(inputs (typed In)...), value -> value.
template <class Out, class In, class Fn, class... Ins>
void map_n(const Tensor& out, Fn fn, const Ins&... ins) {
  constexpr size_t N = 1 + sizeof...(Ins);
  if (dense_alike(out, ins...)) {
    Out* o = static_cast<Out*>(out.raw_data());
    const std::array<const In*, N - 1> x{static_cast<const In*>(ins.raw_data())...};
    for_flat_blocks(out.numel(), [&](int64_t begin, int64_t end) {
      [&]<size_t... I>(std::index_sequence<I...>) {
        for (int64_t i = begin; i < end; ++i) o[i] = fn(x[I][i]...);
      }(std::make_index_sequence<N - 1>{});
    });
    return;
  }
  Operands<N> ops{{static_cast<char*>(out.raw_data()), static_cast<char*>(ins.raw_data())...},
                  {byte_strides<Out>(out), byte_strides<In>(ins)...}};
  for_each_element(out.sizes(), ops, [&](std::array<char*, N>& p) {
    [&]<size_t... I>(std::index_sequence<I...>) {
      *reinterpret_cast<Out*>(p[0]) = fn(*reinterpret_cast<const In*>(p[I + 1])...);
    }(std::make_index_sequence<N - 1>{});
  });
}

template <class Out, class In, class Fn>
void map1(const Tensor& in, const Tensor& out, Fn fn) {
  map_n<Out, In>(out, fn, in);
}

template <class Out, class In, class Fn>
void map2(const Tensor& a, const Tensor& b, const Tensor& out, Fn fn) {
  map_n<Out, In>(out, fn, a, b);
}

// ---------------------------------------------------------------- kernels

void fill(const Tensor& out, double value) {
  dispatch(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T v = cast_to<T>(value);
    map_n<T, T>(out, [v] { return v; });
  });
}

void copy(const Tensor& src, const Tensor& out) {
  if (src.dtype() == out.dtype()) {
    const size_t item = itemsize(out.dtype());
    if (dense_alike(out, src)) {  // one memcpy a block, not a call an element
      char* o = static_cast<char*>(out.raw_data());
      const char* i = static_cast<const char*>(src.raw_data());
      for_flat_blocks(out.numel(), [&](int64_t begin, int64_t end) {
        std::memcpy(o + begin * item, i + begin * item, static_cast<size_t>(end - begin) * item);
      });
      return;
    }
    Operands<2> ops{{static_cast<char*>(out.raw_data()), static_cast<char*>(src.raw_data())},
                    {byte_strides(out), byte_strides(src)}};
    for_each_element(out.sizes(), ops, [&](std::array<char*, 2>& p) { std::memcpy(p[0], p[1], item); });
    return;
  }
  dispatch(out.dtype(), [&](auto out_tag) {
    using O = decltype(out_tag);
    dispatch(src.dtype(), [&](auto in_tag) {
      using I = decltype(in_tag);
      if constexpr ((std::is_same_v<I, Half> || std::is_same_v<I, BFloat16>) &&
                    (std::is_same_v<O, Half> || std::is_same_v<O, BFloat16> || std::is_same_v<O, float>)) {
        map1<O, I>(src, out, [](I v) { return O(static_cast<float>(v)); });
      } else {
        map1<O, I>(src, out, [](I v) { return cast_to<O>(to_double(v)); });
      }
    });
  });
}

template <class C>
C apply_unary(Unary op, C x) {
  switch (op) {
    case Unary::Neg: return -x;
    case Unary::Abs: return std::abs(x);
    case Unary::Exp: return std::exp(x);
    case Unary::Log: return std::log(x);
    case Unary::Sqrt: return std::sqrt(x);
    case Unary::Rsqrt: return C(1) / std::sqrt(x);
    case Unary::Tanh: return std::tanh(x);
    case Unary::Sigmoid: return C(1) / (C(1) + std::exp(-x));
    case Unary::Square: return x * x;
    case Unary::Reciprocal: return C(1) / x;
    case Unary::Sign: return static_cast<C>((x > C(0)) - (x < C(0)));
    case Unary::Relu: return x > C(0) ? x : (std::isnan(x) ? x : C(0));
    case Unary::Floor: return std::floor(x);
    case Unary::Ceil: return std::ceil(x);
    case Unary::Round: return std::nearbyint(x);
  }
  return x;
}

template <Unary Op>
void unary_typed(const Tensor& in, const Tensor& out) {
  dispatch(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    map1<T, T>(in, out, [](T v) { return cast_to<T>(apply_unary<C>(Op, static_cast<C>(to_double(v)))); });
  });
}

void unary(Unary op, const Tensor& in, const Tensor& out) {
  switch (op) {
#define CASE(X) case Unary::X: return unary_typed<Unary::X>(in, out);
    CASE(Neg) CASE(Abs) CASE(Exp) CASE(Log) CASE(Sqrt) CASE(Rsqrt) CASE(Tanh) CASE(Sigmoid)
    CASE(Square) CASE(Reciprocal) CASE(Sign) CASE(Relu) CASE(Floor) CASE(Ceil) CASE(Round)
#undef CASE
  }
}

template <class C>
C apply_binary(Binary op, C a, C b, C alpha) {
  switch (op) {
    case Binary::Add: return a + alpha * b;
    case Binary::Sub: return a - alpha * b;
    case Binary::Mul: return a * b;
    case Binary::Div: return a / b;
    case Binary::Max: return (std::isnan(a) || a > b) ? a : b;
    case Binary::Min: return (std::isnan(a) || a < b) ? a : b;
    case Binary::Pow: return std::pow(a, b);
    case Binary::Eq: return a == b;
    case Binary::Ne: return a != b;
    case Binary::Lt: return a < b;
    case Binary::Le: return a <= b;
    case Binary::Gt: return a > b;
    case Binary::Ge: return a >= b;
  }
  return a;
}

template <Binary Op>
void binary_typed(const Tensor& a, const Tensor& b, const Tensor& out, double alpha) {
  dispatch(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const C al = static_cast<C>(alpha);
    if constexpr (Op >= Binary::Eq) {
      map2<uint8_t, T>(a, b, out, [](T x, T y) {
        return static_cast<uint8_t>(apply_binary<C>(Op, static_cast<C>(to_double(x)), static_cast<C>(to_double(y)), C(1)) != C(0));
      });
    } else {
      map2<T, T>(a, b, out, [al](T x, T y) {
        return cast_to<T>(apply_binary<C>(Op, static_cast<C>(to_double(x)), static_cast<C>(to_double(y)), al));
      });
    }
  });
}

void binary(Binary op, const Tensor& a, const Tensor& b, const Tensor& out, double alpha) {
  with_binary_op(op, [&](auto k) { binary_typed<decltype(k)::value>(a, b, out, alpha); });
}

template <Binary Op>
void binary_scalar_typed(const Tensor& a, double s, bool scalar_first, const Tensor& out) {
  dispatch(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const C sc = static_cast<C>(s);
    auto compute = [sc, scalar_first](T x) {
      const C v = static_cast<C>(to_double(x));
      return scalar_first ? apply_binary<C>(Op, sc, v, C(1)) : apply_binary<C>(Op, v, sc, C(1));
    };
    if constexpr (Op >= Binary::Eq) {
      map1<uint8_t, T>(a, out, [compute](T x) { return static_cast<uint8_t>(compute(x) != C(0)); });
    } else {
      map1<T, T>(a, out, [compute](T x) { return cast_to<T>(compute(x)); });
    }
  });
}

void binary_scalar(Binary op, const Tensor& a, double s, bool scalar_first, const Tensor& out) {
  with_binary_op(op, [&](auto k) { binary_scalar_typed<decltype(k)::value>(a, s, scalar_first, out); });
}

void pow_scalar(const Tensor& in, double exponent, const Tensor& out) {
  dispatch(in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const C e = static_cast<C>(exponent);
    if (exponent == 2.0) {
      map1<T, T>(in, out, [](T x) { const C v = static_cast<C>(to_double(x)); return cast_to<T>(v * v); });
    } else {
      map1<T, T>(in, out, [e](T x) { return cast_to<T>(std::pow(static_cast<C>(to_double(x)), e)); });
    }
  });
}

void clamp(const Tensor& in, double lo, double hi, const Tensor& out) {
  dispatch(in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const C l = static_cast<C>(lo), h = static_cast<C>(hi);
    map1<T, T>(in, out, [l, h](T x) {
      const C v = static_cast<C>(to_double(x));
      return cast_to<T>(std::isnan(v) ? v : std::min(std::max(v, l), h));
    });
  });
}

template <bool Divide>
void addc(const Tensor& out, const Tensor& a, const Tensor& b, double value) {
  dispatch(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const C v = static_cast<C>(value);
    map_n<T, T>(
        out,
        [v](T o, T a, T b) {
          const C x = static_cast<C>(to_double(a)), y = static_cast<C>(to_double(b));
          return cast_to<T>(static_cast<C>(to_double(o)) + v * (Divide ? x / y : x * y));
        },
        out, a, b);
  });
}

void addcmul(const Tensor& out, const Tensor& a, const Tensor& b, double value) { addc<false>(out, a, b, value); }
void addcdiv(const Tensor& out, const Tensor& a, const Tensor& b, double value) { addc<true>(out, a, b, value); }

// Sums accumulate in double for the floating types (float64 sums stay float64-exact enough
// and float32 sums of millions of terms stay accurate). Integers accumulate in uint64_t and
// are read without a detour through double: signed overflow would be undefined behaviour,
// while unsigned sums wrap, and converting back gives int64's two's-complement wrap-around
// (what NumPy and PyTorch return for an overflowing integer sum).
template <class T>
using sum_t = std::conditional_t<std::is_integral_v<T>, uint64_t, double>;

template <class S, class T>
S sum_term(T v) {
  if constexpr (std::is_integral_v<S>) {
    return static_cast<S>(v);  // int64 -> uint64 is modular: well defined
  } else {
    return static_cast<S>(to_double(v));
  }
}

template <class T, class S>
T sum_result(S acc) {
  if constexpr (std::is_integral_v<S>) {
    return static_cast<T>(static_cast<int64_t>(acc));  // modular since C++20
  } else {
    return cast_to<T>(acc);
  }
}

void reduce(Reduce op, const Tensor& in, int64_t outer, int64_t n, int64_t inner,
            const Tensor& values, const Tensor& indices) {
  dispatch(in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* x = static_cast<const T*>(in.raw_data());
    T* out = static_cast<T*>(values.raw_data());
    int64_t* idx = indices.defined() ? indices.data<int64_t>() : nullptr;
    const int64_t outputs = outer * inner;
    if (op == Reduce::Sum) {
      using S = sum_t<T>;
      if (outputs == 1) {
        S acc = 0;
#pragma omp parallel for reduction(+ : acc) if (n > 4 * kBlock)
        for (int64_t i = 0; i < n; ++i) acc += sum_term<S>(x[i]);
        out[0] = sum_result<T>(acc);
        return;
      }
#pragma omp parallel for if (outputs * n > 4 * kBlock)
      for (int64_t o = 0; o < outer; ++o) {
        std::vector<S> acc(static_cast<size_t>(inner), S(0));
        const T* row = x + o * n * inner;
        for (int64_t k = 0; k < n; ++k) {
          for (int64_t i = 0; i < inner; ++i) acc[i] += sum_term<S>(row[k * inner + i]);
        }
        for (int64_t i = 0; i < inner; ++i) out[o * inner + i] = sum_result<T>(acc[i]);
      }
      return;
    }
    const bool want_max = op == Reduce::Max;
#pragma omp parallel for if (outputs * n > 4 * kBlock)
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const T* p = x + o * n * inner + i;
        double best = to_double(p[0]);
        int64_t best_k = 0;
        for (int64_t k = 1; k < n && !std::isnan(best); ++k) {
          const double v = to_double(p[k * inner]);
          if (std::isnan(v) || (want_max ? v > best : v < best)) {
            best = v;
            best_k = k;
          }
        }
        out[o * inner + i] = p[best_k * inner];
        if (idx) idx[o * inner + i] = best_k;
      }
    }
  });
}

void random(Random dist, const Tensor& out, double p1, double p2, uint64_t seed, uint64_t offset,
            const uint64_t* state) {
  TENSOR_CHECK(state == nullptr, "tensor::kernels::cpu::random: device state words given to a CPU fill");
  dispatch(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* o = static_cast<T*>(out.raw_data());
    const int64_t n = out.numel();
#pragma omp parallel for if (n > kBlock)
    for (int64_t i = 0; i < n; ++i) {
      const uint64_t counter = offset + static_cast<uint64_t>(i);
      double v = 0;
      if (dist == Random::Uniform) {
        v = p1 + (p2 - p1) * Philox::uniform(seed, counter);
      } else if (dist == Random::Normal) {
        double u1 = 0, u2 = 0;
        Philox::uniform_pair(seed, counter, u1, u2);
        v = p1 + p2 * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
      } else {
        v = Philox::uniform(seed, counter) < p1 ? 1.0 : 0.0;
      }
      o[i] = cast_to<T>(v);
    }
  });
}

}  // namespace

const Backend& cpu() {
  static const Backend backend{fill,     copy,    unary,   binary,  binary_scalar, pow_scalar,
                               clamp,    addcmul, addcdiv, reduce,  random};
  return backend;
}

}  // namespace tensor::kernels

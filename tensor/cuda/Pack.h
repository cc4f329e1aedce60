// Pack.h: V adjacent elements loaded and stored as one access (a 16-byte pack is one vector
// load or store on the GPU). Plain data, usable on the host too (the max-pooling gradient's
// per-thread code is tested there).
#pragma once

namespace tensor::cuda {

template <class T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

// The elements of T in one 16-byte pack.
template <class T>
inline constexpr int kPack16 = static_cast<int>(16 / sizeof(T));

}  // namespace tensor::cuda

// core/ScopedSetting.h: ScopedSetting<get, set> sets a process-wide setting that its op keeps
// outside Config (a get / set function pair) for a scope and restores the previous value on
// exit, as ScopedConfig does for the flags (tests, benchmarks): ScopedLayerNormEngine in
// ops/layer_norm.h, ScopedPoolBackward in ops/pool.h.
#pragma once

namespace cudnn {

template <auto Get, auto Set>
class ScopedSetting {
 public:
  using Value = decltype(Get());

  explicit ScopedSetting(Value v) : saved_(Get()) { Set(v); }
  ~ScopedSetting() { Set(saved_); }
  ScopedSetting(const ScopedSetting&) = delete;
  ScopedSetting& operator=(const ScopedSetting&) = delete;

 private:
  Value saved_;
};

}  // namespace cudnn

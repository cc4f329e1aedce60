// core/ScopedSetting.h: ScopedSetting<&Config::field> sets one flag of config() to a value for a
// scope and restores that flag's previous value on exit, where ScopedConfig restores them all
// (tests, benchmarks): ScopedLayerNormEngine in ops/layer_norm.h, ScopedPoolBackward in ops/pool.h.
#pragma once

#include <type_traits>
#include <utility>

#include "cudnn/Config.h"

namespace cudnn {

template <auto Field>
class ScopedSetting {
 public:
  using Value = std::remove_cvref_t<decltype(std::declval<Config&>().*Field)>;

  explicit ScopedSetting(Value v) : saved_(config().*Field) { config().*Field = v; }
  ~ScopedSetting() { config().*Field = saved_; }
  ScopedSetting(const ScopedSetting&) = delete;
  ScopedSetting& operator=(const ScopedSetting&) = delete;

 private:
  Value saved_;
};

}  // namespace cudnn

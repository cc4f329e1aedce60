// ModuleWrapper.h: a module that stands in a parent's slot for another one (the module it
// wraps) and otherwise passes everything through, as dist::ShardedDataParallel's block
// wrappers do (Note [Block wrappers] in distributed/ShardedDataParallel.cpp). A mixin, not a
// module: a wrapper derives from Module and from this. Containers that reach their children by
// type (nn::DecoderLM, nn::DecoderBlock, nn::TransformerEncoderLayer, nn::TransformerDecoderLayer,
// the fused pairs of nn/FusedPair.h) cast unwrapped(child), so a wrapper in a slot does not
// change what they see; they still run each child through its slot, so the wrapper's calls
// happen. The cudnn fused twins run a pair as one operation only when its slots hold the
// modules themselves (Note [Fused pairs with wrapped children] in cudnn/FusedConvolution.cpp).
#pragma once

namespace nn {

class Module;

class ModuleWrapper {
 public:
  virtual ~ModuleWrapper() = default;
  virtual Module& wrapped() const = 0;
};

// `m` itself, or, where it is a wrapper, the module it wraps (following wrappers of wrappers).
Module& unwrapped(Module& m);
const Module& unwrapped(const Module& m);

}  // namespace nn

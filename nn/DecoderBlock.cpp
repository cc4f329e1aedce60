// DecoderBlock.cpp: the two pre-norm residual sums around the children's forward and backward.
#include "nn/DecoderBlock.h"

#include "nn/Buffers.h"
#include "nn/KVCache.h"
#include "nn/ModuleConfig.h"
#include "nn/ModuleWrapper.h"
#include "nn/MultiheadAttention.h"
#include "tensor/Cuda.h"

namespace nn {

DecoderBlock::DecoderBlock(ModulePtr ln1, ModulePtr attn, ModulePtr ln2, ModulePtr mlp) {
  ModulePtr kids[] = {std::move(ln1), std::move(attn), std::move(ln2), std::move(mlp)};
  for (size_t i = 0; i < kSlots; ++i) {
    if (!kids[i]) throw Error(std::string(kTypeName) + ": expected a module for " + kChildNames[i] + ", got nullptr");
  }
  for (auto& k : kids) add(std::move(k));
  this->attn();  // the attention slot's type
}

std::string DecoderBlock::childName(size_t i) const { return i < kSlots ? kChildNames[i] : std::to_string(i); }

MultiheadAttention& DecoderBlock::attn() const {
  auto* m = dynamic_cast<MultiheadAttention*>(&unwrapped(child_at(*this, modules, Attn, "attn")));
  if (!m) {
    throw Error(type_name() + "::attn: expected an nn.MultiheadAttention, got " + modules[Attn]->type_name());
  }
  return *m;
}

void DecoderBlock::checkModules(const char* method) const {
  if (modules.size() != kSlots) {
    throw Error(where(method) + "expected 4 modules (ln_1, attn, ln_2, mlp), got " + std::to_string(modules.size()));
  }
  for (size_t i = 0; i < kSlots; ++i) child_at(*this, modules, i, method);
}

void DecoderBlock::checkInput(const Tensor& input, const char* method) const {
  const int64_t E = attn().embedDim;
  if (!input.defined() || input.dim() != 3 || input.size(2) != E) {
    throw Error(where(method) + "expected input [B x S x " + std::to_string(E) + "], got " +
                (input.defined() ? tensor::shape_str(input.sizes()) : std::string("an undefined tensor")));
  }
}

// Note [Activation checkpointing]
// A block's forward state is most of a training step's memory: per token, the norms' outputs,
// the qkv projections, the attention's output and saved statistics, the residual sum, the mlp's
// hidden activations (4 E or two of `hidden` wide) and the dropout masks, all kept until
// backward. With checkpointing a training forward keeps the block's output alone (its input is
// the caller's, which DecoderLM's Sequential keeps as it keeps every block's), and backward first
// runs the forward again, then the children's backward as always, then lets go again, as
// torch.utils.checkpoint does: one block's state alive at a time, for one more forward.
// Bit-identity with the run without it needs the recompute to draw the same dropout masks: the
// forward copies the default generator (seed and offset), the recompute runs from that copy, and
// the generator is then put back as backward found it, so what follows draws what it would have
// drawn. Inside a CUDA graph capture a fill draws at its position among the capture's draws,
// not at the generator's offset (Note [Random fills in CUDA graphs] in tensor/Cuda.h): the
// recompute sets the capture's count back to what it was before the forward
// (Graph::set_capture_draws) and then forward again, so a replay draws the forward's masks
// twice, as the eager run does. A forward that drew numbers inside a capture and a backward
// outside it (or the other way round) cannot draw them again: that is refused. The recompute does
// not write the output (it is the next block's input; the last sum is skipped).

void DecoderBlock::releaseActivations() {
  Container::releaseActivations();
  n1_ = a_ = h_ = n2_ = Tensor();
  released_ = false;  // nothing to recompute from: backward asks for a forward
}

void DecoderBlock::releaseForCheckpoint() {
  for (size_t i = 0; i < kSlots; ++i) child_at(*this, modules, i, "releaseActivations").releaseActivations();
  n1_ = a_ = h_ = n2_ = Tensor();
  released_ = true;
}

const Tensor& DecoderBlock::updateOutput(const Tensor& input) {
  checkModules("updateOutput");
  checkInput(input, "updateOutput");
  released_ = false;
  if (!checkpoint_ || !training_) {
    forwardPass(input, true);
    return output;
  }
  if (const auto& cache = attn().cache()) {
    throw Error(where("updateOutput") +
                "expected no KV cache with activation checkpointing in training mode (a cached forward is "
                "inference only), got " +
                cache->str());
  }
  tensor::Generator& gen = tensor::default_generator();
  const int device = input.is_cuda() ? input.device().index : -1;
  captured_ = device >= 0 && tensor::cuda::Graph::capturing(device);
  captureDraws_ = captured_ ? tensor::cuda::Graph::capture_draws(device, gen) : 0;
  generator_ = gen;
  forwardPass(input, true);
  drew_ = captured_ ? tensor::cuda::Graph::capture_draws(device, gen) != captureDraws_
                    : gen.seed() != generator_.seed() || gen.offset() != generator_.offset();
  releaseForCheckpoint();
  return output;
}

void DecoderBlock::recompute(const Tensor& input) {
  const char* method = "backward";
  if (!training_) {
    throw Error(where(method) +
                "expected training mode for the recompute of a checkpointed forward (it ran in "
                "training mode), got evaluate() mode");
  }
  const int device = input.is_cuda() ? input.device().index : -1;
  const bool capturing = device >= 0 && tensor::cuda::Graph::capturing(device);
  if (drew_ && capturing != captured_) {
    throw Error(where(method) + "expected the backward of a checkpointed forward that drew random numbers (dropout) " +
                (captured_ ? "inside the CUDA graph capture its forward ran in"
                           : "outside a CUDA graph capture, where its forward ran") +
                ", got " + (capturing ? "a capture under way" : "no capture under way") +
                ": the recompute could not draw the forward's masks again (Note [Activation checkpointing])");
  }
  // See Note [Activation checkpointing]: the generator as the forward found it, then as now; in
  // the capture the forward ran in, its count of draws too
  const bool rewind = capturing && captured_;
  tensor::Generator& gen = tensor::default_generator();
  struct Restore {
    tensor::Generator& gen;
    const tensor::Generator now;
    int device;
    bool rewind;
    uint64_t draws;
    ~Restore() {
      gen = now;
      try {
        if (rewind) tensor::cuda::Graph::set_capture_draws(device, gen, draws);
      } catch (...) {  // a capture is under way on `device`: it does not throw
      }
    }
  } restore{gen, gen, device, rewind, rewind ? tensor::cuda::Graph::capture_draws(device, gen) : 0};
  gen = generator_;
  if (rewind) tensor::cuda::Graph::set_capture_draws(device, gen, captureDraws_);
  forwardPass(input, false);
  released_ = false;
}

void DecoderBlock::forwardPass(const Tensor& input, bool writeOutput) {
  auto fwd = [&](size_t i, const Tensor& in) -> const Tensor& {
    return rethrowErrors(i, [&]() -> const Tensor& { return modules[i]->forward(in); });
  };
  // each child's output as forward() handed it back: on the input's device where the child
  // bridged it (Note [Device bridging] in nn/Module.cpp), so its backward gets the same
  // the sums by the branch's last product where the child takes them (Note [Sums in the
  // product's epilogue] in nn/Module.cpp): h_ and the output are then the children's outputs
  auto fwdAdding = [&](size_t i, const Tensor& in, const Tensor& addend) -> const Tensor& {
    return rethrowErrors(i, [&]() -> const Tensor& { return modules[i]->forwardAdding(in, addend); });
  };
  auto takes = [&](size_t i, const Tensor& in, const Tensor& addend) {
    return addend.is_contiguous() && child_at(*this, modules, i, "updateOutput").takesAddend(in);
  };
  n1_ = fwd(Ln1, input);
  if (takes(Attn, n1_, input)) {
    a_ = Tensor();
    h_ = fwdAdding(Attn, n1_, input);
  } else {
    a_ = fwd(Attn, n1_);
    if (a_.sizes() != input.sizes()) {
      throw Error(where("updateOutput") + "expected an attention output of the input's shape " +
                  tensor::shape_str(input.sizes()) + ", got " + tensor::shape_str(a_.sizes()));
    }
    tensor::add_out(ensure(h_, input.sizes(), input), input, a_);  // h_ may be a_'s storage: add_out allows it
  }
  n2_ = fwd(Ln2, h_);
  // a recompute leaves the output, the next block's input, as it is: the mlp's own buffer
  if (writeOutput && takes(Mlp, n2_, h_)) {
    output = fwdAdding(Mlp, n2_, h_);
    return;
  }
  const Tensor& m = fwd(Mlp, n2_);
  if (m.sizes() != input.sizes()) {
    throw Error(where("updateOutput") + "expected an mlp output of the input's shape " +
                tensor::shape_str(input.sizes()) + ", got " + tensor::shape_str(m.sizes()));
  }
  if (!writeOutput) return;  // a recompute: the output is there already
  tensor::add_out(ensure(output, input.sizes(), input), h_, m);
}

void DecoderBlock::backwardPass(const Tensor& input, const Tensor& gradOutput, double scale, Tensor& gradIn) {
  checkModules("backward");
  checkInput(input, "backward");
  check_grad_output_shape(where("backward"), input.sizes(), gradOutput);
  const bool checkpointed = released_;
  if (checkpointed) {
    try {
      recompute(input);
    } catch (...) {
      releaseForCheckpoint();
      throw;
    }
  }
  if (!h_.defined() || h_.sizes() != input.sizes()) {
    throw Error(where("backward") + "expected a forward() of input " + input.description() + " first");
  }
  try {
    childrenBackward(input, gradOutput, scale, gradIn);
  } catch (...) {
    if (checkpointed) releaseForCheckpoint();
    throw;
  }
  if (checkpointed) releaseForCheckpoint();
}

void DecoderBlock::childrenBackward(const Tensor& input, const Tensor& gradOutput, double scale, Tensor& gradIn) {
  auto bwd = [&](size_t i, const Tensor& in, const Tensor& g) -> const Tensor& {
    return rethrowErrors(i, [&]() -> const Tensor& { return modules[i]->backward(in, g, scale); });
  };
  // Note [Freeing intermediate gradients] (Container.cpp): a child's gradInput goes once the
  // sum that reads it is taken
  auto done = [&](size_t i) {
    if (freesIntermediateGradients()) modules[i]->releaseGradInput();
  };
  const Tensor gy = gradOutput.contiguous();
  const Tensor& gm = bwd(Mlp, n2_, gy);
  const Tensor& gn2 = bwd(Ln2, h_, gm);
  done(Mlp);
  tensor::add_out(ensure(gradH_, input.sizes(), gy), gy, gn2);
  done(Ln2);
  const Tensor& ga = bwd(Attn, n1_, gradH_);
  const Tensor& gx = bwd(Ln1, input, ga);
  done(Attn);
  if (gradInputNeeded()) {
    tensor::add_out(ensure(gradIn, input.sizes(), gy), gradH_, gx);
  } else {
    gradIn = Tensor();
  }
  done(Ln1);
  if (freesIntermediateGradients()) gradH_ = Tensor();
}

void DecoderBlock::backwardImpl(const Tensor& input, const Tensor& gradOutput, double scale) {
  backwardPass(input, gradOutput, scale, gradInput);
}

const Tensor& DecoderBlock::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  // the children's backward is the only way through them; their parameters are left as they
  // were by accumulating zero times the gradient
  backwardPass(input, gradOutput, 0.0, gradInput);
  return gradInput;
}

void DecoderBlock::accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale) {
  backwardPass(input, gradOutput, scale, gradScratch_);
}

std::string DecoderBlock::str() const {
  std::string s = type_name() + " {";
  for (size_t i = 0; i < modules.size(); ++i) {
    s += "\n  (" + childName(i) + "): " + indent_lines(modules[i] ? modules[i]->str() : "nullptr", "  ");
  }
  return s + "\n}";
}

ModulePtr DecoderBlock::fromConfig(const tensor::Json& config, std::vector<ModulePtr> children) {
  ConfigReader(config, kTypeName).finish();
  if (children.size() != kSlots) {
    throw Error(std::string(kTypeName) + ": expected 4 children (ln_1, attn, ln_2, mlp), got " +
                std::to_string(children.size()));
  }
  return std::make_shared<DecoderBlock>(children[0], children[1], children[2], children[3]);
}

}  // namespace nn

// DecoderBlock.cpp: the two pre-norm residual sums around the children's forward and backward.
#include "nn/DecoderBlock.h"

#include "nn/Buffers.h"
#include "nn/ModuleConfig.h"
#include "nn/MultiheadAttention.h"

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
  auto* m = dynamic_cast<MultiheadAttention*>(&child_at(*this, modules, Attn, "attn"));
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

const Tensor& DecoderBlock::updateOutput(const Tensor& input) {
  checkModules("updateOutput");
  checkInput(input, "updateOutput");
  auto fwd = [&](size_t i, const Tensor& in) -> const Tensor& {
    return rethrowErrors(i, [&]() -> const Tensor& { return modules[i]->forward(in); });
  };
  // each child's output as forward() handed it back: on the input's device where the child
  // bridged it (Note [Device bridging] in nn/Module.cpp), so its backward gets the same
  n1_ = fwd(Ln1, input);
  a_ = fwd(Attn, n1_);
  if (a_.sizes() != input.sizes()) {
    throw Error(where("updateOutput") + "expected an attention output of the input's shape " +
                tensor::shape_str(input.sizes()) + ", got " + tensor::shape_str(a_.sizes()));
  }
  tensor::add_out(ensure(h_, input.sizes(), input), input, a_);
  n2_ = fwd(Ln2, h_);
  const Tensor& m = fwd(Mlp, n2_);
  if (m.sizes() != input.sizes()) {
    throw Error(where("updateOutput") + "expected an mlp output of the input's shape " +
                tensor::shape_str(input.sizes()) + ", got " + tensor::shape_str(m.sizes()));
  }
  tensor::add_out(ensure(output, input.sizes(), input), h_, m);
  return output;
}

void DecoderBlock::backwardPass(const Tensor& input, const Tensor& gradOutput, double scale, Tensor& gradIn) {
  checkModules("backward");
  checkInput(input, "backward");
  check_grad_output_shape(where("backward"), input.sizes(), gradOutput);
  if (!h_.defined() || h_.sizes() != input.sizes()) {
    throw Error(where("backward") + "expected a forward() of input " + input.description() + " first");
  }
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

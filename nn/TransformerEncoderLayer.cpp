// TransformerEncoderLayer.cpp: the two residual blocks, calling the children's forward and
// backward on token rows [tokens x E] (the attention on the [S x B x E] shape).
#include "nn/TransformerEncoderLayer.h"

#include <cmath>
#include <sstream>

#include "nn/Buffers.h"
#include "nn/Dropout.h"
#include "nn/GELU.h"
#include "nn/LayerNorm.h"
#include "nn/Linear.h"
#include "nn/ModuleConfig.h"
#include "nn/ModuleWrapper.h"
#include "nn/MultiheadAttention.h"
#include "nn/ReLU.h"

namespace nn {

namespace {
template <class M>
M& slot_as(const TransformerEncoderLayer& layer, const std::vector<ModulePtr>& kids, size_t i, const char* what) {
  auto* m = dynamic_cast<M*>(&unwrapped(child_at(layer, kids, i, "child")));  // through a wrapper in the slot
  if (!m) {
    throw Error(layer.type_name() + "::" + TransformerEncoderLayer::kChildNames[i] + ": expected " + what + ", got " +
                kids[i]->type_name());
  }
  return *m;
}

// backward's gradOutput, and the forward() of this input it follows (sum2: forward's last sum)
void check_backward(const TransformerEncoderLayer& layer, const Tensor& input, const Tensor& gradOutput,
                    const Tensor& sum2) {
  if (!gradOutput.defined() || gradOutput.sizes() != input.sizes()) {
    throw Error(layer.where("backward") + "expected gradOutput of the input's shape " +
                tensor::shape_str(input.sizes()) + ", got " +
                (gradOutput.defined() ? gradOutput.description() : std::string("an undefined tensor")));
  }
  if (!sum2.defined() || sum2.size(0) != input.size(0) * input.size(1)) {
    throw Error(layer.where("backward") + "expected a forward() of input " + input.description() + " first");
  }
}
}  // namespace

TransformerEncoderLayer::TransformerEncoderLayer(int64_t dModel_, int64_t nhead_, int64_t dimFeedforward_,
                                                 double dropout_, std::string activation_, bool batchFirst_,
                                                 bool normFirst_, double layerNormEps_)
    : dModel(dModel_),
      nhead(nhead_),
      dimFeedforward(dimFeedforward_),
      dropout(dropout_),
      activation(std::move(activation_)),
      batchFirst(batchFirst_),
      normFirst(normFirst_),
      layerNormEps(layerNormEps_) {
  if (activation != "relu" && activation != "gelu") {
    throw Error(std::string(kTypeName) + ": expected activation 'relu' or 'gelu', got '" + activation + "'");
  }
  if (dimFeedforward < 1) {
    throw Error(std::string(kTypeName) + ": expected dim_feedforward >= 1, got " + std::to_string(dimFeedforward));
  }
  // the children's own checks would name the child, not this layer's arguments
  if (dModel < 1 || nhead < 1 || dModel % nhead != 0) {
    throw Error(std::string(kTypeName) + ": expected d_model >= 1 divisible by nhead >= 1, got d_model " +
                std::to_string(dModel) + " and nhead " + std::to_string(nhead));
  }
  if (!(dropout >= 0 && dropout < 1)) {
    std::ostringstream msg;
    msg << kTypeName << ": expected dropout in [0, 1), got " << dropout;
    throw Error(msg.str());
  }
  if (!(std::isfinite(layerNormEps) && layerNormEps >= 0)) {
    std::ostringstream msg;
    msg << kTypeName << ": expected a finite layer_norm_eps >= 0, got " << layerNormEps;
    throw Error(msg.str());
  }
  add(std::make_shared<MultiheadAttention>(dModel, nhead, dropout, true, batchFirst));
  add(std::make_shared<Linear>(dModel, dimFeedforward));
  add(std::make_shared<Dropout>(dropout));
  add(std::make_shared<Linear>(dimFeedforward, dModel));
  add(std::make_shared<LayerNorm>(Shape{dModel}, layerNormEps));
  add(std::make_shared<LayerNorm>(Shape{dModel}, layerNormEps));
  add(std::make_shared<Dropout>(dropout));
  add(std::make_shared<Dropout>(dropout));
  if (activation == "relu") {
    add(std::make_shared<ReLU>());
  } else {
    add(std::make_shared<GELU>());
  }
}

std::string TransformerEncoderLayer::childName(size_t i) const {
  return i < kSlots ? kChildNames[i] : std::to_string(i);
}

MultiheadAttention& TransformerEncoderLayer::selfAttn() const {
  return slot_as<MultiheadAttention>(*this, modules, SelfAttn, "an nn.MultiheadAttention");
}
Linear& TransformerEncoderLayer::linear1() const { return slot_as<Linear>(*this, modules, Linear1, "an nn.Linear"); }
Linear& TransformerEncoderLayer::linear2() const { return slot_as<Linear>(*this, modules, Linear2, "an nn.Linear"); }
LayerNorm& TransformerEncoderLayer::norm1() const {
  return slot_as<LayerNorm>(*this, modules, Norm1, "an nn.LayerNorm");
}
LayerNorm& TransformerEncoderLayer::norm2() const {
  return slot_as<LayerNorm>(*this, modules, Norm2, "an nn.LayerNorm");
}

void TransformerEncoderLayer::setCausal(bool c) { selfAttn().causal = c; }
bool TransformerEncoderLayer::causal() const { return selfAttn().causal; }
void TransformerEncoderLayer::setKeyLengths(const Tensor& lengths) { selfAttn().setKeyLengths(lengths); }

void TransformerEncoderLayer::checkModules(const char* method) const {
  if (modules.size() != kSlots) {
    throw Error(where(method) + "expected " + std::to_string(kSlots) + " modules (self_attn ... activation), got " +
                std::to_string(modules.size()));
  }
  for (size_t i = 0; i < kSlots; ++i) child_at(*this, modules, i, method);
}

void TransformerEncoderLayer::checkInput(const Tensor& input, const char* method) const {
  if (input.dim() != 3 || input.size(2) != dModel) {
    throw Error(where(method) + "expected input " + (batchFirst ? "[B x S x " : "[S x B x ") + std::to_string(dModel) +
                "], got " + tensor::shape_str(input.sizes()));
  }
}

const Tensor& TransformerEncoderLayer::updateOutput(const Tensor& input) {
  checkModules("updateOutput");
  checkInput(input, "updateOutput");
  const int64_t N = input.size(0) * input.size(1), E = dModel;
  const Shape shape3 = input.sizes();
  const Tensor x = input.contiguous().view({N, E});
  // each child's output as forward() handed it back: on the input's device where the child
  // bridged it (Note [Device bridging]), so the children's backward passes get the same
  auto fwd = [&](size_t i, const Tensor& in) -> const Tensor& {
    outs_[i] = rethrowErrors(i, [&]() -> const Tensor& { return modules[i]->forward(in); });
    return outs_[i];
  };
  // the feed-forward block on rows z
  auto feedForward = [&](const Tensor& z) -> const Tensor& {
    const Tensor& f1 = fwd(Linear1, z);
    const Tensor& f2 = fwd(Act, f1);
    const Tensor& f3 = fwd(DropoutFF, f2);
    const Tensor& f4 = fwd(Linear2, f3);
    return fwd(Dropout2, f4);
  };
  if (!normFirst) {
    const Tensor& a = fwd(SelfAttn, input);
    residualSum(sum1_, fwd(Dropout1, a.reshape({N, E})), x);
    const Tensor& h = fwd(Norm1, sum1_);
    residualSum(sum2_, feedForward(h), h);
    output = fwd(Norm2, sum2_).view(shape3);
  } else {
    const Tensor& n1 = fwd(Norm1, x);
    const Tensor& a = fwd(SelfAttn, n1.view(shape3));
    residualSum(sum1_, fwd(Dropout1, a.reshape({N, E})), x);
    const Tensor& n2 = fwd(Norm2, sum1_);
    residualSum(sum2_, feedForward(n2), sum1_);
    output = sum2_.view(shape3);
  }
  return output;
}

// Note [Residual sums in place]
// A residual sum x + branch(x) is added into the branch's output buffer, which becomes the sum:
// the branch ends in a dropout (p == 0 hands back the attention's or linear2's output itself,
// Note [Dropout as the identity]), and neither a dropout's nor a Linear's nor the attention's
// backward reads its own output, so overwriting it costs nothing and saves a [tokens x E]
// buffer and a copy per sum. A branch output that is not a packed [tokens x E] tensor on x's
// device (a bridged child's, say) is summed into a fresh copy instead.
void TransformerEncoderLayer::residualSum(Tensor& sum, const Tensor& branch, const Tensor& x) {
  const Tensor rows = branch.is_contiguous() ? branch.view({x.size(0), x.size(1)}) : Tensor();
  if (rows.defined() && rows.device() == x.device() && rows.dtype() == x.dtype() && !rows.is_same_view(x)) {
    sum = rows;
  } else {
    sum = branch.reshape(x.sizes()).clone();  // never the last call's alias, so a fresh buffer
  }
  sum.add_(x);
}

void TransformerEncoderLayer::backwardPass(const Tensor& input, const Tensor& gradOutput, double scale,
                                           Tensor& gradIn) {
  checkModules("backward");
  checkInput(input, "backward");
  check_backward(*this, input, gradOutput, sum2_);
  const int64_t N = input.size(0) * input.size(1), E = dModel;
  const Shape shape3 = input.sizes();
  const Tensor x = input.contiguous().view({N, E});
  const Tensor gy = gradOutput.contiguous().view({N, E});
  auto bwd = [&](size_t i, const Tensor& in, const Tensor& g) -> const Tensor& {
    return rethrowErrors(i, [&]() -> const Tensor& { return modules[i]->backward(in, g, scale); });
  };
  // Note [Freeing intermediate gradients] (Container.cpp) as the gradients flow: a child's
  // gradInput goes once the next child back has consumed it, not at the end of the layer
  auto done = [&](std::initializer_list<size_t> slots) {
    if (!freesIntermediateGradients()) return;
    for (size_t i : slots) modules[i]->releaseGradInput();
  };
  const bool needIn = gradInputNeeded();
  // the feed-forward block's backward from its output's gradient to its input z's
  auto feedForwardBackward = [&](const Tensor& z, const Tensor& g) -> const Tensor& {
    const Tensor& f1 = outs_[Linear1];
    const Tensor& f2 = outs_[Act];
    const Tensor& f3 = outs_[DropoutFF];
    const Tensor& f4 = outs_[Linear2];
    const Tensor& g4 = bwd(Dropout2, f4, g);
    const Tensor& g3 = bwd(Linear2, f3, g4);
    done({Dropout2});
    const Tensor& g2 = bwd(DropoutFF, f2, g3);
    const Tensor& g1 = bwd(Act, f1, g2);
    done({Linear2, DropoutFF});
    const Tensor& gz = bwd(Linear1, z, g1);
    done({Act});
    return gz;
  };
  // attention block: from the gradient of sum1 (= x + dropout1(sa(z))) to sa's input z's
  // (undefined where sa sees the layer's input and that needs no gradient)
  auto attentionBackward = [&](const Tensor& z3, const Tensor& g) -> const Tensor& {
    const Tensor a = outs_[SelfAttn].reshape({N, E});
    const Tensor& ga = bwd(Dropout1, a, g);
    const Tensor& gz = bwd(SelfAttn, z3, ga.view(shape3));
    done({Dropout1});
    return gz;
  };
  if (!normFirst) {
    const Tensor& h = outs_[Norm1];
    const Tensor& gSum2 = bwd(Norm2, sum2_, gy);
    const Tensor& gh = feedForwardBackward(h, gSum2);
    ensure(gradH_, {N, E}, gy).copy_(gSum2);
    gradH_.add_(gh);
    done({Norm2, Linear1});
    const Tensor& gSum1 = bwd(Norm1, sum1_, gradH_);
    if (freesIntermediateGradients()) gradH_ = Tensor();
    const Tensor& gx = attentionBackward(input, gSum1);
    if (needIn) {
      ensure(gradIn, {N, E}, gy).copy_(gSum1);
      gradIn.add_(gx.reshape({N, E}));
    }
  } else {
    const Tensor& n1 = outs_[Norm1];
    const Tensor& n2 = outs_[Norm2];
    const Tensor& gn2 = feedForwardBackward(n2, gy);
    const Tensor& gSum1 = bwd(Norm2, sum1_, gn2);
    done({Linear1});
    ensure(gradH_, {N, E}, gy).copy_(gy);
    gradH_.add_(gSum1);
    done({Norm2});
    const Tensor& gn1 = attentionBackward(n1.view(shape3), gradH_);
    const Tensor& gx = bwd(Norm1, x, gn1.reshape({N, E}));
    done({SelfAttn});
    if (needIn) {
      ensure(gradIn, {N, E}, gy).copy_(gradH_);
      gradIn.add_(gx);
    }
    if (freesIntermediateGradients()) gradH_ = Tensor();
  }
  gradIn = needIn ? gradIn.view(shape3) : Tensor();
}

void TransformerEncoderLayer::backwardImpl(const Tensor& input, const Tensor& gradOutput, double scale) {
  backwardPass(input, gradOutput, scale, gradInput);
  if (!gradInputNeeded()) gradInput = Tensor();
  releaseChildGradInputs();
}

const Tensor& TransformerEncoderLayer::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  // the children's backward is the only way through them; their parameters are left as they
  // were by accumulating zero times the gradient
  backwardPass(input, gradOutput, 0.0, gradInput);
  return gradInput;
}

void TransformerEncoderLayer::accGradParameters(const Tensor& input, const Tensor& gradOutput, double scale) {
  backwardPass(input, gradOutput, scale, gradScratch_);
}

std::string TransformerEncoderLayer::str() const {
  std::ostringstream s;
  s << type_name() << "(" << dModel << ", nhead=" << nhead << ", dim_feedforward=" << dimFeedforward
    << ", dropout=" << dropout << ", " << activation << (batchFirst ? ", batch_first" : "")
    << (normFirst ? ", norm_first" : "") << ") {";
  for (size_t i = 0; i < modules.size(); ++i) {
    s << "\n  (" << childName(i) << "): " << indent_lines(modules[i] ? modules[i]->str() : "nullptr", "  ");
  }
  s << "\n}";
  return s.str();
}

tensor::Json TransformerEncoderLayer::config() const {
  return tensor::Json::Object{{"d_model", dModel},
                              {"nhead", nhead},
                              {"dim_feedforward", dimFeedforward},
                              {"dropout", dropout},
                              {"activation", activation},
                              {"batch_first", batchFirst},
                              {"norm_first", normFirst},
                              {"layer_norm_eps", layerNormEps}};
}

ModulePtr TransformerEncoderLayer::fromConfig(const tensor::Json& config, std::vector<ModulePtr> children) {
  ConfigReader c(config, kTypeName);
  const int64_t d = c.integer("d_model"), h = c.integer("nhead"), ff = c.integer("dim_feedforward", 2048);
  const double dropout = c.number("dropout", 0.1);
  const std::string act = c.string("activation", "relu");
  const bool batchFirst = c.flag("batch_first", false), normFirst = c.flag("norm_first", false);
  const double eps = c.number("layer_norm_eps", 1e-5);
  c.finish();
  if (children.size() != kSlots) {
    throw Error(std::string(kTypeName) + ": expected " + std::to_string(kSlots) + " children, got " +
                std::to_string(children.size()));
  }
  auto m = std::make_shared<TransformerEncoderLayer>(d, h, ff, dropout, act, batchFirst, normFirst, eps);
  m->modules = std::move(children);
  m->checkModules("fromConfig");
  return m;
}

}  // namespace nn

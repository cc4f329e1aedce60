// TransformerDecoderLayer.cpp: the three residual blocks, calling the children's forward and
// backward on token rows [tokens x E] (the attentions on the [T x B x E] shape).
#include "nn/TransformerDecoderLayer.h"

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
M& slot_as(const TransformerDecoderLayer& layer, const std::vector<ModulePtr>& kids, size_t i, const char* what) {
  auto* m = dynamic_cast<M*>(&unwrapped(child_at(layer, kids, i, "child")));  // through a wrapper in the slot
  if (!m) {
    throw Error(layer.type_name() + "::" + TransformerDecoderLayer::kChildNames[i] + ": expected " + what + ", got " +
                kids[i]->type_name());
  }
  return *m;
}

// sum = branch + x, in branch's own buffer where it can: See Note [Residual sums in place] (in
// nn/TransformerEncoderLayer.cpp); here the branches end in dropout1..3 after self_attn,
// multihead_attn and linear2, none of whose backward reads its own output.
void residual_sum(Tensor& sum, const Tensor& branch, const Tensor& x) {
  const Tensor rows = branch.is_contiguous() ? branch.view({x.size(0), x.size(1)}) : Tensor();
  if (rows.defined() && rows.device() == x.device() && rows.dtype() == x.dtype() && !rows.is_same_view(x)) {
    sum = rows;
  } else {
    sum = branch.reshape(x.sizes()).clone();  // never the last call's alias, so a fresh buffer
  }
  sum.add_(x);
}

// out = a + b, in out's buffer
const Tensor& sum_into(Tensor& out, const Tensor& a, const Tensor& b) {
  ensure(out, a.sizes(), a).copy_(a);
  out.add_(b.reshape(a.sizes()));
  return out;
}
}  // namespace

TransformerDecoderLayer::TransformerDecoderLayer(int64_t dModel_, int64_t nhead_, int64_t dimFeedforward_,
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
  add(std::make_shared<MultiheadAttention>(dModel, nhead, dropout, true, batchFirst));
  add(std::make_shared<Linear>(dModel, dimFeedforward));
  add(std::make_shared<Dropout>(dropout));
  add(std::make_shared<Linear>(dimFeedforward, dModel));
  for (int i = 0; i < 3; ++i) add(std::make_shared<LayerNorm>(Shape{dModel}, layerNormEps));
  for (int i = 0; i < 3; ++i) add(std::make_shared<Dropout>(dropout));
  if (activation == "relu") {
    add(std::make_shared<ReLU>());
  } else {
    add(std::make_shared<GELU>());
  }
}

std::string TransformerDecoderLayer::childName(size_t i) const {
  return i < kSlots ? kChildNames[i] : std::to_string(i);
}

MultiheadAttention& TransformerDecoderLayer::selfAttn() const {
  return slot_as<MultiheadAttention>(*this, modules, SelfAttn, "an nn.MultiheadAttention");
}
MultiheadAttention& TransformerDecoderLayer::multiheadAttn() const {
  return slot_as<MultiheadAttention>(*this, modules, CrossAttn, "an nn.MultiheadAttention");
}
Linear& TransformerDecoderLayer::linear1() const { return slot_as<Linear>(*this, modules, Linear1, "an nn.Linear"); }
Linear& TransformerDecoderLayer::linear2() const { return slot_as<Linear>(*this, modules, Linear2, "an nn.Linear"); }
LayerNorm& TransformerDecoderLayer::norm1() const {
  return slot_as<LayerNorm>(*this, modules, Norm1, "an nn.LayerNorm");
}
LayerNorm& TransformerDecoderLayer::norm2() const {
  return slot_as<LayerNorm>(*this, modules, Norm2, "an nn.LayerNorm");
}
LayerNorm& TransformerDecoderLayer::norm3() const {
  return slot_as<LayerNorm>(*this, modules, Norm3, "an nn.LayerNorm");
}

void TransformerDecoderLayer::setTgtIsCausal(bool c) { selfAttn().causal = c; }
bool TransformerDecoderLayer::tgtIsCausal() const { return selfAttn().causal; }
void TransformerDecoderLayer::setMemoryIsCausal(bool c) { multiheadAttn().causal = c; }
bool TransformerDecoderLayer::memoryIsCausal() const { return multiheadAttn().causal; }
void TransformerDecoderLayer::setTgtMask(const Tensor& mask) { selfAttn().setAttnMask(mask); }
void TransformerDecoderLayer::setMemoryMask(const Tensor& mask) { multiheadAttn().setAttnMask(mask); }
void TransformerDecoderLayer::setTgtKeyPaddingMask(const Tensor& mask) { selfAttn().setKeyPaddingMask(mask); }
void TransformerDecoderLayer::setMemoryKeyPaddingMask(const Tensor& mask) { multiheadAttn().setKeyPaddingMask(mask); }
void TransformerDecoderLayer::setTgtKeyLengths(const Tensor& lengths) { selfAttn().setKeyLengths(lengths); }
void TransformerDecoderLayer::setMemoryKeyLengths(const Tensor& lengths) { multiheadAttn().setKeyLengths(lengths); }

void TransformerDecoderLayer::checkModules(const char* method) const {
  if (modules.size() != kSlots) {
    throw Error(where(method) + "expected " + std::to_string(kSlots) + " modules (self_attn ... activation), got " +
                std::to_string(modules.size()));
  }
  for (size_t i = 0; i < kSlots; ++i) child_at(*this, modules, i, method);
}

void TransformerDecoderLayer::checkDevices(const char*, const Tensor&, const Tensor&, const Tensor&) const {}

std::pair<Tensor, Tensor> TransformerDecoderLayer::entries(const Value& input, const char* method) const {
  const char* tgtShape = batchFirst ? "[B x T x " : "[T x B x ";
  const char* memShape = batchFirst ? "[B x S x " : "[S x B x ";
  const std::string E = std::to_string(dModel);
  const std::string contract = std::string("the table {tgt ") + tgtShape + E + "], memory " + memShape + E + "]}";
  if (!input.isTable() || input.size() != 2 || !input[0].isTensor() || !input[1].isTensor()) {
    throw Error(where(method) + "expected " + contract + ", got " + input.description());
  }
  const Tensor& tgt = input[0].tensorOrUndefined();
  const Tensor& mem = input[1].tensorOrUndefined();
  const int64_t bd = batchFirst ? 0 : 1;
  if (tgt.dim() != 3 || tgt.size(2) != dModel || mem.dim() != 3 || mem.size(2) != dModel ||
      mem.size(bd) != tgt.size(bd)) {
    throw Error(where(method) + "expected " + contract + " of one batch, got {" + tensor::shape_str(tgt.sizes()) +
                ", " + tensor::shape_str(mem.sizes()) + "}");
  }
  if (mem.dtype() != tgt.dtype() || mem.device() != tgt.device()) {
    throw Error(where(method) + "expected memory of tgt's dtype and device (" + tgt.description() + "), got " +
                mem.description());
  }
  return {tgt, mem};
}

const Tensor& TransformerDecoderLayer::updateOutput(const Tensor&) { refuseTensorInterface("updateOutput"); }

const Tensor& TransformerDecoderLayer::updateGradInput(const Tensor&, const Tensor&) {
  refuseTensorInterface("updateGradInput");
}

const Value& TransformerDecoderLayer::updateOutputValue(const Value& input) {
  checkModules("updateOutput");
  const std::pair<Tensor, Tensor> ins = entries(input, "updateOutput");
  const Tensor &tgt = ins.first, &memory = ins.second;  // named: the lambdas below capture them
  checkDevices("updateOutput", tgt, memory, Tensor());
  const int64_t N = tgt.size(0) * tgt.size(1), E = dModel;
  const Shape shape3 = tgt.sizes();
  const Tensor x = tgt.contiguous().view({N, E});
  // each child's output as forward() handed it back: on the input's device where the child
  // bridged it (Note [Device bridging]), so the children's backward passes get the same
  auto fwd = [&](size_t i, const Tensor& in) -> const Tensor& {
    outs_[i] = rethrowErrors(i, [&]() -> const Tensor& { return modules[i]->forward(in); });
    return outs_[i];
  };
  auto feedForward = [&](const Tensor& z) -> const Tensor& {
    const Tensor& f1 = fwd(Linear1, z);
    const Tensor& f2 = fwd(Act, f1);
    const Tensor& f3 = fwd(DropoutFF, f2);
    const Tensor& f4 = fwd(Linear2, f3);
    return fwd(Dropout3, f4);
  };
  auto crossAttention = [&](const Tensor& z) -> const Tensor& {
    multiheadAttn().setMemory(memory);
    const Tensor& c = fwd(CrossAttn, z.view(shape3));
    return fwd(Dropout2, c.reshape({N, E}));
  };
  if (!normFirst) {
    const Tensor& a = fwd(SelfAttn, tgt);
    residual_sum(sum1_, fwd(Dropout1, a.reshape({N, E})), x);
    const Tensor& h1 = fwd(Norm1, sum1_);
    residual_sum(sum2_, crossAttention(h1), h1);
    const Tensor& h2 = fwd(Norm2, sum2_);
    residual_sum(sum3_, feedForward(h2), h2);
    output = fwd(Norm3, sum3_).view(shape3);
  } else {
    const Tensor& n1 = fwd(Norm1, x);
    const Tensor& a = fwd(SelfAttn, n1.view(shape3));
    residual_sum(sum1_, fwd(Dropout1, a.reshape({N, E})), x);
    residual_sum(sum2_, crossAttention(fwd(Norm2, sum1_)), sum1_);
    residual_sum(sum3_, feedForward(fwd(Norm3, sum2_)), sum2_);
    output = sum3_.view(shape3);
  }
  outputValue = output;
  return outputValue;
}

void TransformerDecoderLayer::backwardPass(const Value& input, const Value& gradOutput, double scale, bool needTgt,
                                           Tensor& gradTgt, Tensor& gradMemory) {
  checkModules("backward");
  const std::pair<Tensor, Tensor> ins = entries(input, "backward");
  const Tensor &tgt = ins.first, &memory = ins.second;  // named: the lambdas below capture them
  if (!gradOutput.isTensor() || gradOutput.tensorOrUndefined().sizes() != tgt.sizes()) {
    throw Error(where("backward") + "expected gradOutput of tgt's shape " + tensor::shape_str(tgt.sizes()) + ", got " +
                gradOutput.description());
  }
  checkDevices("backward", tgt, memory, gradOutput.tensorOrUndefined());
  const int64_t N = tgt.size(0) * tgt.size(1), E = dModel;
  if (!sum3_.defined() || sum3_.size(0) != N || !multiheadAttn().memory().is_same_view(memory)) {
    throw Error(where("backward") + "expected a forward() of input " + input.description() + " first");
  }
  const Shape shape3 = tgt.sizes();
  const Tensor x = tgt.contiguous().view({N, E});
  const Tensor gy = gradOutput.tensorOrUndefined().contiguous().view({N, E});
  // handles, not references: a child's gradInput buffer stays alive while it is used here
  auto bwd = [&](size_t i, const Tensor& in, const Tensor& g) -> Tensor {
    return rethrowErrors(i, [&]() -> const Tensor& { return modules[i]->backward(in, g, scale); });
  };
  // from the feed-forward block's output gradient to its input z's
  auto feedForwardBackward = [&](const Tensor& z, const Tensor& g) -> Tensor {
    const Tensor g4 = bwd(Dropout3, outs_[Linear2], g);
    const Tensor g3 = bwd(Linear2, outs_[DropoutFF], g4);
    const Tensor g2 = bwd(DropoutFF, outs_[Act], g3);
    const Tensor g1 = bwd(Act, outs_[Linear1], g2);
    return bwd(Linear1, z, g1);
  };
  // from the gradient of sum2 (= z' + dropout2(mha(z))) to mha's input z's; memory's gradient too
  auto crossBackward = [&](const Tensor& z, const Tensor& g) -> Tensor {
    const Tensor gc = bwd(Dropout2, outs_[CrossAttn].reshape({N, E}), g);
    const Tensor gz = bwd(CrossAttn, z.view(shape3), gc.view(shape3));
    gradMemory = multiheadAttn().gradMemory.to(memory.device());
    return gz.reshape({N, E});
  };
  // from the gradient of sum1 (= x + dropout1(sa(z))) to sa's input z's (undefined where sa
  // sees tgt and that needs no gradient)
  auto selfBackward = [&](const Tensor& z3, const Tensor& g) -> Tensor {
    const Tensor ga = bwd(Dropout1, outs_[SelfAttn].reshape({N, E}), g);
    return bwd(SelfAttn, z3, ga.view(shape3));
  };
  if (!normFirst) {
    const Tensor gS3 = bwd(Norm3, sum3_, gy);
    const Tensor& gH2 = sum_into(gradA_, gS3, feedForwardBackward(outs_[Norm2], gS3));
    const Tensor gS2 = bwd(Norm2, sum2_, gH2);
    const Tensor& gH1 = sum_into(gradB_, gS2, crossBackward(outs_[Norm1], gS2));
    const Tensor gS1 = bwd(Norm1, sum1_, gH1);
    const Tensor gx = selfBackward(tgt, gS1);
    if (needTgt) sum_into(gradTgt, gS1, gx);
  } else {
    const Tensor gn3 = feedForwardBackward(outs_[Norm3], gy);
    const Tensor& gS2 = sum_into(gradA_, gy, bwd(Norm3, sum2_, gn3));
    const Tensor gn2 = crossBackward(outs_[Norm2], gS2);
    const Tensor& gS1 = sum_into(gradB_, gS2, bwd(Norm2, sum1_, gn2));
    const Tensor gn1 = selfBackward(outs_[Norm1].view(shape3), gS1);
    const Tensor gx = bwd(Norm1, x, gn1.reshape({N, E}));
    if (needTgt) sum_into(gradTgt, gS1, gx);
  }
  gradTgt = needTgt ? gradTgt.view(shape3) : Tensor();
  if (freesIntermediateGradients()) gradA_ = gradB_ = Tensor();
}

void TransformerDecoderLayer::backwardValueImpl(const Value& input, const Value& gradOutput, double scale) {
  Tensor gradMemory;
  backwardPass(input, gradOutput, scale, gradInputNeeded(), gradInput, gradMemory);
  gradInputValue = Table{gradInput.defined() ? Value(gradInput) : Value(), Value(gradMemory)};
  releaseChildGradInputs();
}

const Value& TransformerDecoderLayer::updateGradInputValue(const Value& input, const Value& gradOutput) {
  // the children's parameters are left as they were by accumulating zero times the gradient
  Tensor gradMemory;
  backwardPass(input, gradOutput, 0.0, gradInputNeeded(), gradInput, gradMemory);
  gradInputValue = Table{gradInput.defined() ? Value(gradInput) : Value(), Value(gradMemory)};
  return gradInputValue;
}

void TransformerDecoderLayer::accGradParametersValue(const Value& input, const Value& gradOutput, double scale) {
  backwardPass(input, gradOutput, scale, false, scratchTgt_, scratchMemory_);
}

std::string TransformerDecoderLayer::str() const {
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

tensor::Json TransformerDecoderLayer::config() const {
  return tensor::Json::Object{{"d_model", dModel},
                              {"nhead", nhead},
                              {"dim_feedforward", dimFeedforward},
                              {"dropout", dropout},
                              {"activation", activation},
                              {"batch_first", batchFirst},
                              {"norm_first", normFirst},
                              {"layer_norm_eps", layerNormEps}};
}

ModulePtr TransformerDecoderLayer::fromConfig(const tensor::Json& config, std::vector<ModulePtr> children) {
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
  auto m = std::make_shared<TransformerDecoderLayer>(d, h, ff, dropout, act, batchFirst, normFirst, eps);
  m->modules = std::move(children);
  m->checkModules("fromConfig");
  return m;
}

}  // namespace nn

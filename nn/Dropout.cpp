// Dropout.cpp: the mask and its application are tensor ops (bernoulli_, mul_), so the same
// draw comes out on every device from one seed (Note [Counter-based randomness]).
#include "nn/Dropout.h"

#include <cstdio>

#include "nn/Buffers.h"
#include "nn/ModuleConfig.h"

namespace nn {

namespace {
void check_p(const std::string& where, double p) {
  if (!(p >= 0 && p < 1)) throw Error(where + "expected 0 <= p < 1, got " + std::to_string(p));
}
}  // namespace

Dropout::Dropout(double p_, bool v1, bool inplace_) : p(p_), v2(!v1), inplace(inplace_) {
  check_p(std::string(kTypeName) + ": ", p);
}

void Dropout::setp(double p_) {
  check_p(where("setp"), p_);
  p = p_;
}

void Dropout::releaseActivations() {
  Module::releaseActivations();
  noise = Tensor();
  outputIsAlias_ = false;
}

void Dropout::checkInput(const Tensor& input, const char* method) const {
  check_float(where(method), input);
  checkP(method);
}

void Dropout::checkP(const char* method) const { check_p(where(method), p); }  // p is a public field

// Note [Dropout as the identity]
// With p == 0, or in evaluation under v2, dropout is the identity: output is the input itself
// (and gradInput the gradOutput itself), no copy, as PyTorch returns its input for p == 0.
// A Transformer layer built with dropout 0 has three of them on activations as large as the
// feed-forward's, so the copies were about a fifth of its training step's memory. The next
// pass that does compute (training with p > 0) lets go of the alias first: the buffer it would
// reuse is its caller's tensor.
bool Dropout::isIdentity() const { return p == 0 || (!training_ && v2); }

bool Dropout::start(Tensor& out, bool& outIsAlias, const Tensor& in) {
  if (isIdentity()) {
    out = in;
    outIsAlias = true;
    return true;
  }
  if (outIsAlias) out = Tensor();  // someone's tensor: never the buffer to write into
  outIsAlias = false;
  if (inplace) {
    out = in;
  } else {
    ensure(out, in.sizes(), in).copy_(in);
  }
  return false;
}

const Tensor& Dropout::updateOutput(const Tensor& input) {
  checkInput(input, "updateOutput");
  if (start(output, outputIsAlias_, input)) return output;
  if (p > 0) {
    if (training_) {
      ensure(noise, input.sizes(), input).bernoulli_(1 - p);
      if (v2) noise.div_(1 - p);
      output.mul_(noise);
    } else if (!v2) {
      output.mul_(1 - p);
    }
  }
  return output;
}

const Tensor& Dropout::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  checkInput(input, "updateGradInput");
  if (gradOutput.sizes() != input.sizes()) {
    throw Error(where("updateGradInput") + "expected gradOutput of " + tensor::shape_str(input.sizes()) +
                " (the input's shape), got " + tensor::shape_str(gradOutput.sizes()));
  }
  if (start(gradInput, gradInputIsAlias_, gradOutput)) return gradInput;
  if (p > 0) {
    if (training_) {
      if (!noise.defined() || noise.sizes() != input.sizes()) {
        throw Error(where("updateGradInput") + "expected a forward() in training mode first with input " +
                    tensor::shape_str(input.sizes()));
      }
      gradInput.mul_(noise);
    } else if (!v2) {
      gradInput.mul_(1 - p);
    }
  }
  return gradInput;
}

std::string Dropout::str() const {
  char buf[64];
  std::snprintf(buf, sizeof buf, "(%f)", p);
  return type_name() + buf;
}

tensor::Json Dropout::config() const { return tensor::Json::Object{{"p", p}, {"v1", !v2}, {"inplace", inplace}}; }

ModulePtr Dropout::fromConfig(const tensor::Json& config) {
  ConfigReader c(config, kTypeName);
  const double p = c.number("p", 0.5);
  const bool v1 = c.flag("v1", false), inplace = c.flag("inplace", false);
  c.finish();
  return std::make_shared<Dropout>(p, v1, inplace);
}

}  // namespace nn

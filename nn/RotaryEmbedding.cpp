// RotaryEmbedding.cpp: a copy of the input (or of gradOutput) rotated in place by the functional op.
#include "nn/RotaryEmbedding.h"

#include <cmath>
#include <sstream>

#include "nn/Buffers.h"
#include "nn/ModuleConfig.h"

namespace nn {

RotaryEmbedding::RotaryEmbedding(RotaryOptions options_) : options(options_) {
  if (!(std::isfinite(options.theta) && options.theta > 0)) {
    std::ostringstream msg;
    msg << kTypeName << ": expected a finite theta > 0, got " << options.theta;
    throw Error(msg.str());
  }
  if (options.rotaryDim < 0 || options.rotaryDim % 2 != 0) {
    throw Error(std::string(kTypeName) + ": expected an even rotary_dim >= 0 (0: the whole head), got " +
                std::to_string(options.rotaryDim));
  }
}

const Tensor& RotaryEmbedding::rotateInto(Tensor& buffer, const char* method, const Tensor& input,
                                          const Tensor* gradOutput, RotateFn rotate) {
  const std::string w = where(method);
  check_rotary_arguments(w, input, offsets_, options);
  if (gradOutput && (!gradOutput->defined() || gradOutput->sizes() != input.sizes() ||
                     gradOutput->dtype() != input.dtype() || gradOutput->device() != input.device())) {
    throw Error(w + "expected gradOutput of the input's shape, dtype and device (" + input.description() + "), got " +
                (gradOutput->defined() ? gradOutput->description() : std::string("an undefined tensor")));
  }
  const Tensor& src = gradOutput ? *gradOutput : input;
  ensure(buffer, src.sizes(), src);
  buffer.copy_(src);
  rotate(buffer, offsets_, options, gradOutput != nullptr);
  return buffer;
}

const Tensor& RotaryEmbedding::updateOutput(const Tensor& input) {
  check_float(where("updateOutput"), input);
  return rotateInto(output, "updateOutput", input, nullptr, &rotary_embedding_);
}

const Tensor& RotaryEmbedding::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  check_float(where("updateGradInput"), input);
  return rotateInto(gradInput, "updateGradInput", input, &gradOutput, &rotary_embedding_);
}

std::string RotaryEmbedding::str() const {
  std::ostringstream s;
  s << type_name() << "(theta=" << options.theta << ", " << rotary_style_name(options.style);
  if (options.rotaryDim != 0) s << ", rotary_dim=" << options.rotaryDim;
  s << ")";
  return s.str();
}

tensor::Json RotaryEmbedding::config() const {
  return tensor::Json::Object{{"style", std::string(rotary_style_name(options.style))},
                              {"theta", options.theta},
                              {"rotary_dim", options.rotaryDim}};
}

ModulePtr RotaryEmbedding::fromConfig(const tensor::Json& config) {
  ConfigReader c(config, kTypeName);
  RotaryOptions o;
  o.style = rotary_style_from_name(std::string(kTypeName) + ".fromConfig: ", c.string("style", "half"));
  o.theta = c.number("theta", 10000);
  o.rotaryDim = c.integer("rotary_dim", 0);
  c.finish();
  return std::make_shared<RotaryEmbedding>(o);
}

}  // namespace nn

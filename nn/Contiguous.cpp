// Contiguous.cpp
#include "nn/Contiguous.h"

#include "nn/ModuleConfig.h"

namespace nn {

namespace {
const char* format_name(tensor::MemoryFormat f) {
  return f == tensor::MemoryFormat::ChannelsLast ? "channels_last" : "contiguous";
}
}  // namespace

Contiguous::Contiguous(tensor::MemoryFormat format) : format_(format) {}

const Tensor& Contiguous::updateOutput(const Tensor& input) {
  if (!input.defined()) throw Error(where("updateOutput") + "expected an input, got an undefined tensor");
  if (format_ == tensor::MemoryFormat::ChannelsLast && input.dim() != 4 && input.dim() != 5) {
    throw Error(where("updateOutput") + "channels_last lays out 4-d (NHWC) or 5-d (NDHWC) tensors, got " +
                tensor::shape_str(input.sizes()));
  }
  output = input.contiguous(format_);
  return output;
}

const Tensor& Contiguous::updateGradInput(const Tensor& input, const Tensor& gradOutput) {
  check_grad_output_shape(where("updateGradInput"), input.sizes(), gradOutput);
  gradInput = gradOutput.contiguous(tensor::suggest_memory_format(input));
  return gradInput;
}

std::string Contiguous::str() const {
  return type_name() + (format_ == tensor::MemoryFormat::ChannelsLast ? "(channels_last)" : "");
}

tensor::Json Contiguous::config() const { return tensor::Json::Object{{"memoryFormat", format_name(format_)}}; }

ModulePtr Contiguous::fromConfig(const tensor::Json& config) {
  ConfigReader c(config, kTypeName);
  const std::string name = c.string("memoryFormat", "contiguous");
  c.finish();
  if (name != "contiguous" && name != "channels_last") {
    throw Error(std::string(kTypeName) + " config: expected memoryFormat 'contiguous' or 'channels_last', got '" +
                name + "'");
  }
  return std::make_shared<Contiguous>(name == "channels_last" ? tensor::MemoryFormat::ChannelsLast
                                                              : tensor::MemoryFormat::Contiguous);
}

}  // namespace nn

// FusedConvolution.cpp
#include "nn/FusedConvolution.h"

#include "nn/ModuleConfig.h"

namespace nn {

namespace {
std::string describe(const std::vector<ModulePtr>& modules) {
  std::string s;
  for (const auto& m : modules) s += (s.empty() ? "" : ", ") + (m ? m->type_name() : std::string("nullptr"));
  return std::to_string(modules.size()) + " modules (" + s + ")";
}
}  // namespace

FusedConvolution::FusedConvolution(ModulePtr convolution, ModulePtr activation)
    : Sequential({std::move(convolution), std::move(activation)}) {
  checkModules("FusedConvolution");
}

void FusedConvolution::checkModules(const char* method) const {
  const bool ok = modules.size() == 2 && dynamic_cast<const ConvolutionBase*>(modules[0].get()) &&
                  dynamic_cast<const PointwiseBase*>(modules[1].get());
  if (!ok) {
    throw Error(where(method) +
                "expected a convolution and an activation (nn.ConvolutionBase, nn.PointwiseBase), got " +
                describe(modules));
  }
}

ConvolutionBase& FusedConvolution::convolution(const char* method) const {
  checkModules(method);
  return dynamic_cast<ConvolutionBase&>(*modules[0]);
}

PointwiseBase& FusedConvolution::activation(const char* method) const {
  checkModules(method);
  return dynamic_cast<PointwiseBase&>(*modules[1]);
}

const Tensor& FusedConvolution::updateOutput(const Tensor& input) {
  checkModules("updateOutput");
  return Sequential::updateOutput(input);
}

std::string FusedConvolution::str() const {
  if (modules.size() != 2 || !modules[0] || !modules[1]) return type_name() + "(" + describe(modules) + ")";
  return type_name() + "(" + modules[0]->str() + " + " + modules[1]->str() + ")";
}

ModulePtr FusedConvolution::fromConfig(const tensor::Json& config, std::vector<ModulePtr> children) {
  ConfigReader(config, kTypeName).finish();
  if (children.size() != 2) {
    throw Error(std::string(kTypeName) + ": expected a convolution and an activation (2 children), got " +
                std::to_string(children.size()));
  }
  return std::make_shared<FusedConvolution>(children[0], children[1]);
}

}  // namespace nn

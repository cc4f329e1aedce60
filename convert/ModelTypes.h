// ModelTypes.h: the one table of module types model files know (internal to convert/;
// ModelTypes.cpp fills it, ModelFile.cpp reads it).
#pragma once

#include <map>
#include <string>

#include "convert/ModelFile.h"

namespace nn::detail {

// "nn.X" -> rebuilds an nn::X from its config and children (leaves throw when given children).
const std::map<std::string, ModelFactory>& builtin_model_types();

}  // namespace nn::detail

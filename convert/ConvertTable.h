// ConvertTable.h: the one table of twin pairs convert() uses (internal to convert/).
// ConvertTable.cpp fills it in a CUDA build; ConvertTableUnavailable.cpp leaves it empty
// and makes conversion to cudnn throw.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "nn/Criterion.h"
#include "nn/Module.h"

namespace nn::detail {

struct ConvertTable {
  // type name -> builds the counterpart by moving the module (or criterion) into it
  std::map<std::string, std::function<ModulePtr(Module&)>> modules;
  std::map<std::string, std::function<CriterionPtr(Criterion&)>> criteria;
};

bool built_with_cudnn();
const ConvertTable& table(Backend to);

}  // namespace nn::detail

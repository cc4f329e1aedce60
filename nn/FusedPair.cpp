// FusedPair.cpp: what the fused modules share (nn/FusedPair.h).
#include "nn/FusedPair.h"

namespace nn::detail {

std::string describe_children(const std::vector<ModulePtr>& modules) {
  std::string s;
  for (const auto& m : modules) s += (s.empty() ? "" : ", ") + (m ? m->type_name() : std::string("nullptr"));
  return std::to_string(modules.size()) + " modules (" + s + ")";
}

}  // namespace nn::detail

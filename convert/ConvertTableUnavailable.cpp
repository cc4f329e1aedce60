// ConvertTableUnavailable.cpp: the table of a build without cuDNN: nothing converts to
// cudnn, and there are no cudnn modules to convert back.
#include "convert/ConvertTable.h"

namespace nn::detail {

bool built_with_cudnn() { return false; }

const ConvertTable& table(Backend) {
  static const ConvertTable empty;
  return empty;
}

}  // namespace nn::detail

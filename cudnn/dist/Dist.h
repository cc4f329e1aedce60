// Deprecated path, kept for one release: data parallelism moved to distributed/ (namespace
// dist; cudnn::dist names the same namespace). Include "distributed/Dist.h".
#pragma once

#include "distributed/Dist.h"

namespace cudnn {
namespace dist = ::dist;
}  // namespace cudnn

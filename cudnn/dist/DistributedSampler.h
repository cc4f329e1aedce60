// Deprecated path, kept for one release: data parallelism moved to distributed/ (namespace
// dist; cudnn::dist names the same namespace). Include "distributed/DistributedSampler.h".
#pragma once

#include "distributed/DistributedSampler.h"

namespace cudnn {
namespace dist = ::dist;
}  // namespace cudnn

// Deprecated path, kept for one release: data parallelism moved to distributed/ (namespace
// dist; cudnn::dist names the same namespace). Include "distributed/Environment.h".
#pragma once

#include "distributed/Environment.h"

namespace cudnn {
namespace dist = ::dist;
}  // namespace cudnn

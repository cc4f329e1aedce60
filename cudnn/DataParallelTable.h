// Deprecated path, kept for one release: DataParallelTable moved to distributed/ (namespace
// dist). Include "distributed/DataParallelTable.h"; cudnn::DataParallelTable names dist's.
#pragma once

#include "distributed/DataParallelTable.h"

namespace cudnn {
using DataParallelTable = ::dist::DataParallelTable;
}  // namespace cudnn

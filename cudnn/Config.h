// cudnn/Config.h: moved to cudnn/core/Config.h (cudnn::config(), set_flags(), the flags).
// This forwarding header keeps programs written against 0.1's old path compiling for one
// more release; include "cudnn/core/Config.h" instead. It will be removed in 0.3.
#pragma once

#include "cudnn/core/Config.h"

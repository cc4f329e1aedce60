// core/Config.h: moved to cudnn/Config.h, which is installed (core/ is not). This forwarding
// header keeps the tree's older includes compiling; new code includes "cudnn/Config.h".
#pragma once

#include "cudnn/Config.h"

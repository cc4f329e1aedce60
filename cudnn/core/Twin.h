// core/Twin.h: moved to cudnn/Twin.h, which is installed (core/ is not). This forwarding
// header keeps the tree's older includes compiling; new code includes "cudnn/Twin.h".
#pragma once

#include "cudnn/Twin.h"

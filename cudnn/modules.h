// modules.h: every cudnn twin, for users and for convert's table. Sorted, one per line.
#pragma once

#include "cudnn/Config.h"

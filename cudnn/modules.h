// modules.h: every cudnn twin, for users and for convert's table. Sorted, one per line.
#pragma once

#include "cudnn/Config.h"
#include "cudnn/SpatialAveragePooling.h"
#include "cudnn/SpatialCrossMapLRN.h"
#include "cudnn/SpatialMaxPooling.h"
#include "cudnn/VolumetricAveragePooling.h"
#include "cudnn/VolumetricMaxPooling.h"

// modules.h: every cudnn twin, for users and for convert's table. Sorted, one per line.
#pragma once

#include "cudnn/Config.h"
#include "cudnn/SpatialConvolution.h"
#include "cudnn/SpatialDilatedConvolution.h"
#include "cudnn/SpatialFullConvolution.h"
#include "cudnn/TemporalConvolution.h"
#include "cudnn/VolumetricConvolution.h"
#include "cudnn/VolumetricFullConvolution.h"

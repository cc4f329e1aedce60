// modules.h: every cudnn twin, for users and for convert's table. Sorted, one per line.
#pragma once

#include "cudnn/BatchNormalization.h"
#include "cudnn/ClippedReLU.h"
#include "cudnn/Config.h"
#include "cudnn/ELU.h"
#include "cudnn/LogSoftMax.h"
#include "cudnn/ReLU.h"
#include "cudnn/Sigmoid.h"
#include "cudnn/SoftMax.h"
#include "cudnn/SpatialBatchNormalization.h"
#include "cudnn/SpatialLogSoftMax.h"
#include "cudnn/SpatialSoftMax.h"
#include "cudnn/Tanh.h"
#include "cudnn/VolumetricBatchNormalization.h"
#include "cudnn/VolumetricLogSoftMax.h"
#include "cudnn/VolumetricSoftMax.h"

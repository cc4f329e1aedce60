// modules.h: every cudnn twin, for users and for convert's table. Sorted, one per line.
#pragma once

#include "cudnn/ClassNLLCriterion.h"
#include "cudnn/Concat.h"
#include "cudnn/Config.h"
#include "cudnn/CrossEntropyCriterion.h"
#include "cudnn/Dropout.h"
#include "cudnn/Identity.h"
#include "cudnn/Linear.h"
#include "cudnn/MSECriterion.h"
#include "cudnn/Reshape.h"
#include "cudnn/Residual.h"
#include "cudnn/SpatialCrossEntropyCriterion.h"
#include "cudnn/View.h"
#include "cudnn/VolumetricCrossEntropyCriterion.h"

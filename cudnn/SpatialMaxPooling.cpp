// SpatialMaxPooling.cpp: all of it is in cudnn/Pooling.{h,cpp}.
#include "cudnn/SpatialMaxPooling.h"

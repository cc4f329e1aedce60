// VolumetricMaxPooling.cpp: all of it is in cudnn/Pooling.{h,cpp}.
#include "cudnn/VolumetricMaxPooling.h"

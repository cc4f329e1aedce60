// BLSTM.cpp: all of the computation is in cudnn::RNNBase.
#include "cudnn/BLSTM.h"

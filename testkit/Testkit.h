// Testkit.h: the testing kit in one include (library cudnn_nn_testkit, pkg-config
// cudnn-nn-testkit). Framework-free: every check returns a Report (Report.h) to hand to any
// test framework, or to require(), which throws.
#pragma once

#include "testkit/Compare.h"
#include "testkit/Contract.h"
#include "testkit/GradCheck.h"
#include "testkit/Inputs.h"
#include "testkit/Report.h"
#include "testkit/TwinCheck.h"

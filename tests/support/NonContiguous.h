// NonContiguous.h: the same values as a tensor in a layout that is NOT contiguous, for every rank
// and size but one element or none (testkit/Inputs.h says which layout). The twin comparisons
// (TwinCheck) and the bad-input matrix take their non-contiguous inputs from here.
#pragma once

#include <doctest/doctest.h>

#include <string>

#include "tensor/Tensor.h"
#include "testkit/Inputs.h"

namespace testing {

using nn::testkit::noncontiguous_copy;

}  // namespace testing

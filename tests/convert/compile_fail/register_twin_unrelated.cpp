// Must not compile: register_twin<Nn, Cu> with a Cu that does not derive from Nn (issue 45
// item 9). tests/scripts/expect_compile_error.py checks that the static_assert's text is why.
#include "convert/Convert.h"
#include "nn/Identity.h"
#include "nn/ReLU.h"

void register_unrelated() { nn::register_twin<nn::Identity, nn::ReLU>(); }

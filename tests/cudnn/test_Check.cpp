// test_Check.cpp: CUDNN_CHECK and CUBLAS_CHECK (cudnn/core/Check.h), no GPU needed: the
// library's success passes; any other status throws tensor::Error naming the call, where it
// was made, and the library's name for the status.
#include <doctest/doctest.h>

#include <string>

#include "cudnn/core/Check.h"

TEST_CASE("CUDNN_CHECK and CUBLAS_CHECK: success passes, another status throws naming the call and the status") {
  CHECK_NOTHROW(CUDNN_CHECK(CUDNN_STATUS_SUCCESS));
  CHECK_NOTHROW(CUBLAS_CHECK(CUBLAS_STATUS_SUCCESS));
  try {
    CUDNN_CHECK(CUDNN_STATUS_BAD_PARAM);
    FAIL("CUDNN_CHECK did not throw");
  } catch (const tensor::Error& e) {
    const std::string what = e.what();
    CHECK(what.starts_with("CUDNN_STATUS_BAD_PARAM failed at "));
    CHECK(what.find("test_Check.cpp:") != std::string::npos);
    CHECK(what.find(": CUDNN_STATUS_BAD_PARAM") != std::string::npos);
  }
  CHECK_THROWS_WITH_AS(CUBLAS_CHECK(CUBLAS_STATUS_INVALID_VALUE), doctest::Contains(": CUBLAS_STATUS_INVALID_VALUE"),
                       tensor::Error);
}

// Kit.h: the doctest side of the testing kit (testkit/, installed as cudnn_nn_testkit): a kit
// Report becomes one CHECK whose message lists every failed expectation. The helpers in
// tests/support are such adapters over the kit, so every suite that uses them runs the kit.
#pragma once

#include <doctest/doctest.h>

#include "testkit/Report.h"

namespace testing {

inline void expect_ok(const nn::testkit::Report& report) {
  INFO(report.str());
  CHECK(report.ok());
}

}  // namespace testing

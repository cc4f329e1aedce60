// Table.h: Torch's tables in one include: nn::Value and nn::Table (nn/Value.h: a tensor or a
// table of values), with Module::forward(const Value&) / Criterion::forward(const Value&, target)
// (nn/Module.h, nn/Criterion.h) as the interface of modules and criteria that take or give tables.
#pragma once

#include "nn/Value.h"

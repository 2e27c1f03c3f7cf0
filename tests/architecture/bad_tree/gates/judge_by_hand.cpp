// Breaks the rule: gates does not link drivers.
#include "core/error.hpp"
#include "drivers/run_cases.hpp"

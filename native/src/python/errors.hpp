// How native failures reach Python: ConfigError and std::invalid_argument become ValueError,
// std::system_error becomes OSError with its errno (so ENOENT is FileNotFoundError, EACCES
// PermissionError), keeping the native message that names the thing and the fix.
#pragma once

#include <pybind11/pybind11.h>

namespace autopager::python {

void register_error_translation();

}  // namespace autopager::python

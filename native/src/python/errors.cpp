#include "errors.hpp"

#include <system_error>

#include "autopager/config.hpp"

namespace autopager::python {

namespace {

// OSError(errno, message): Python picks the subclass from errno (FileNotFoundError, PermissionError...).
void raise_os_error(const std::system_error& error) {
  const int code = error.code().category() == std::generic_category() ||
                           error.code().category() == std::system_category()
                       ? error.code().value()
                       : 0;
  PyObject* args = Py_BuildValue("(is)", code, error.what());
  if (args == nullptr) return;  // Py_BuildValue has set the error
  PyErr_SetObject(PyExc_OSError, args);
  Py_DECREF(args);
}

}  // namespace

void register_error_translation() {
  pybind11::register_exception_translator([](std::exception_ptr failure) {
    try {
      if (failure) std::rethrow_exception(failure);
    } catch (const ConfigError& error) {
      PyErr_SetString(PyExc_ValueError, error.what());
    } catch (const std::system_error& error) {
      raise_os_error(error);
    }
  });
}

}  // namespace autopager::python

#include "region.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <system_error>
#include <utility>

namespace autopager::python {

namespace {

bool interpreter_finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing();
#else
  return _Py_IsFinalizing();
#endif
}

// Releasing the GIL is only safe while the interpreter is not shutting down.
bool can_release_gil() { return PyGILState_Check() && !interpreter_finalizing(); }

}  // namespace

Region::Region(std::shared_ptr<Pager> pager, std::shared_ptr<Store> store, std::size_t length, bool writable)
    : pager_(std::move(pager)), length_(length), writable_(writable) {
  const int prot = writable ? PROT_READ | PROT_WRITE : PROT_READ;
  data_ = pager_->map(std::move(store), length, prot);
}

Region::~Region() {
  bool unmapped;
  if (can_release_gil()) {
    pybind11::gil_scoped_release unlocked;
    unmapped = pager_->unmap(data_);
  } else {
    unmapped = pager_->unmap(data_);
  }
  // A destructor cannot raise: the pages stay with the pager, which writes them (or reports them in
  // one message, with a failing exit status) at exit; at exit itself, that message is the report.
  if (!unmapped && !interpreter_finalizing())
    std::fprintf(stderr, "autopager: an array was deleted with dirty pages that could not be written back (%s); "
                         "they are kept, and written (or reported) at exit\n",
                 std::strerror(errno));
}

void Region::flush() {
  if (pager_->flush(data_) != 0) {
    throw std::system_error(errno, std::generic_category(), "writing back the array's dirty pages failed");
  }
}

pybind11::buffer_info Region::buffer() const {
  return pybind11::buffer_info(data_, 1, pybind11::format_descriptor<unsigned char>::format(), 1,
                               {static_cast<pybind11::ssize_t>(length_)}, {1}, !writable_);
}

}  // namespace autopager::python

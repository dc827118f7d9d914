#include "region.hpp"

#include <cerrno>
#include <system_error>
#include <utility>

namespace autopager::python {

namespace {

// Releasing the GIL is only safe while the interpreter is not shutting down.
bool can_release_gil() {
#if PY_VERSION_HEX >= 0x030D0000
  return PyGILState_Check() && !Py_IsFinalizing();
#else
  return PyGILState_Check() && !_Py_IsFinalizing();
#endif
}

}  // namespace

Region::Region(std::shared_ptr<Pager> pager, std::shared_ptr<Store> store, std::size_t length, bool writable)
    : pager_(std::move(pager)), length_(length), writable_(writable) {
  const int prot = writable ? PROT_READ | PROT_WRITE : PROT_READ;
  data_ = pager_->map(std::move(store), length, prot);
}

Region::~Region() {
  if (can_release_gil()) {
    pybind11::gil_scoped_release unlocked;
    pager_->unmap(data_);
  } else {
    pager_->unmap(data_);
  }
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

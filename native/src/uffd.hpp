// A userfaultfd: opening it (with the fallbacks unprivileged users need), registering ranges, and the
// ioctls that resolve faults. Errors are std::system_error, except where a caller must tell cases apart.
#pragma once

#include <linux/userfaultfd.h>

#include <cstddef>
#include <cstdint>

namespace autopager {

// Defined by newer kernel headers than the 6.1 ones we build against.
#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif
#ifndef USERFAULTFD_IOC_NEW
#define USERFAULTFD_IOC_NEW _IO(0xAA, 0x00)
#endif

class Userfaultfd {
 public:
  // Opens a non-blocking userfaultfd and negotiates the API, with write-protect when the kernel has it.
  // Throws std::system_error whose message says what to change when the system forbids it.
  Userfaultfd();
  ~Userfaultfd();
  Userfaultfd(const Userfaultfd&) = delete;
  Userfaultfd& operator=(const Userfaultfd&) = delete;

  int fd() const { return fd_; }
  bool has_write_protect() const { return write_protect_; }

  void register_range(void* base, std::size_t length, bool track_writes);
  void unregister_range(void* base, std::size_t length);

  // Installs `length` bytes from `src` at `dst` and wakes the threads waiting there; read-only when
  // `write_protect`. Returns 0, or the errno (EEXIST: the page is already there).
  int copy(void* dst, const void* src, std::size_t length, bool write_protect);
  // Sets or clears write-protect on a resident range; clearing wakes the threads waiting on it.
  int write_protect(void* base, std::size_t length, bool protect);
  void wake(void* base, std::size_t length);

 private:
  int fd_ = -1;
  bool write_protect_ = false;
};

}  // namespace autopager

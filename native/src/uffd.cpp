#include "uffd.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <system_error>

namespace autopager {
namespace {

int open_userfaultfd(int flags) {
  int fd = static_cast<int>(syscall(SYS_userfaultfd, flags));
  if (fd >= 0 || errno != EPERM) return fd;
  // Unprivileged processes may still handle faults raised in user mode only.
  fd = static_cast<int>(syscall(SYS_userfaultfd, flags | UFFD_USER_MODE_ONLY));
  if (fd >= 0) return fd;
  int device = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
  if (device < 0) {
    errno = EPERM;
    return -1;
  }
  fd = ioctl(device, USERFAULTFD_IOC_NEW, flags);
  int saved = errno;
  close(device);
  errno = saved;
  return fd;
}

[[noreturn]] void fail(const std::string& what) { throw std::system_error(errno, std::generic_category(), what); }

}  // namespace

Userfaultfd::Userfaultfd() {
  fd_ = open_userfaultfd(O_CLOEXEC | O_NONBLOCK);
  if (fd_ < 0) {
    if (errno == EPERM || errno == EACCES)
      fail("userfaultfd is not permitted for this process: set `sysctl vm.unprivileged_userfaultfd=1`, "
           "or grant CAP_SYS_PTRACE, or give read-write access to /dev/userfaultfd");
    if (errno == ENOSYS) fail("userfaultfd is not available: the kernel was built without CONFIG_USERFAULTFD");
    fail("userfaultfd could not be opened");
  }
  uffdio_api api{};
  api.api = UFFD_API;
  api.features = UFFD_FEATURE_PAGEFAULT_FLAG_WP;
  if (ioctl(fd_, UFFDIO_API, &api) == 0) {
    write_protect_ = (api.features & UFFD_FEATURE_PAGEFAULT_FLAG_WP) != 0;
    return;
  }
  // A kernel without write-protect refuses the feature; the handshake may only be tried once per fd.
  close(fd_);
  fd_ = open_userfaultfd(O_CLOEXEC | O_NONBLOCK);
  api = uffdio_api{};
  api.api = UFFD_API;
  if (fd_ < 0 || ioctl(fd_, UFFDIO_API, &api) != 0) fail("userfaultfd API handshake failed");
}

Userfaultfd::~Userfaultfd() {
  if (fd_ >= 0) close(fd_);
}

void Userfaultfd::register_range(void* base, std::size_t length, bool track_writes) {
  uffdio_register reg{};
  reg.range.start = reinterpret_cast<std::uint64_t>(base);
  reg.range.len = length;
  reg.mode = UFFDIO_REGISTER_MODE_MISSING;
  if (track_writes && write_protect_) reg.mode |= UFFDIO_REGISTER_MODE_WP;
  if (ioctl(fd_, UFFDIO_REGISTER, &reg) != 0) fail("cannot register the region with userfaultfd");
}

void Userfaultfd::unregister_range(void* base, std::size_t length) {
  uffdio_range range{reinterpret_cast<std::uint64_t>(base), length};
  ioctl(fd_, UFFDIO_UNREGISTER, &range);
}

int Userfaultfd::copy(void* dst, const void* src, std::size_t length, bool write_protect) {
  uffdio_copy args{};
  args.dst = reinterpret_cast<std::uint64_t>(dst);
  args.src = reinterpret_cast<std::uint64_t>(src);
  args.len = length;
  args.mode = write_protect ? UFFDIO_COPY_MODE_WP : 0;
  while (ioctl(fd_, UFFDIO_COPY, &args) != 0) {
    if (errno != EAGAIN) return errno;
    // The address space changed under a partial copy: resume after what was copied.
    if (args.copy > 0) {
      args.dst += args.copy;
      args.src += args.copy;
      args.len -= args.copy;
    }
    args.copy = 0;
  }
  return 0;
}

int Userfaultfd::write_protect(void* base, std::size_t length, bool protect) {
  uffdio_writeprotect args{};
  args.range.start = reinterpret_cast<std::uint64_t>(base);
  args.range.len = length;
  args.mode = protect ? UFFDIO_WRITEPROTECT_MODE_WP : 0;
  while (ioctl(fd_, UFFDIO_WRITEPROTECT, &args) != 0) {
    if (errno != EAGAIN) return errno;
  }
  return 0;
}

void Userfaultfd::wake(void* base, std::size_t length) {
  uffdio_range range{reinterpret_cast<std::uint64_t>(base), length};
  ioctl(fd_, UFFDIO_WAKE, &range);
}

}  // namespace autopager

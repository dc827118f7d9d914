#include "uffd.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <utility>
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

int open_or_explain() {
  int fd = open_userfaultfd(O_CLOEXEC | O_NONBLOCK);
  if (fd >= 0) return fd;
  if (errno == EPERM || errno == EACCES)
    fail("userfaultfd is not permitted for this process: set `sysctl vm.unprivileged_userfaultfd=1`, "
         "or grant CAP_SYS_PTRACE, or give read-write access to /dev/userfaultfd");
  if (errno == ENOSYS) fail("userfaultfd is not available: the kernel was built without CONFIG_USERFAULTFD");
  fail("userfaultfd could not be opened");
}

// AUTOPAGER_DISABLE_UFFD_FEATURES, e.g. "write_protect,poison": features to do without.
std::uint64_t disabled_features() {
  const char* text = std::getenv("AUTOPAGER_DISABLE_UFFD_FEATURES");
  if (text == nullptr) return 0;
  static const std::pair<const char*, std::uint64_t> kNames[] = {
      {"write_protect", UFFD_FEATURE_PAGEFAULT_FLAG_WP},
      {"shared_write_protect", UFFD_FEATURE_WP_HUGETLBFS_SHMEM},
      {"poison", UFFD_FEATURE_POISON},
      {"move", UFFD_FEATURE_MOVE},
      {"thread_id", UFFD_FEATURE_THREAD_ID},
  };
  std::uint64_t disabled = 0;
  std::string list = text;
  for (std::size_t start = 0; start <= list.size();) {
    std::size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    const std::string name = list.substr(start, end - start);
    for (const auto& [known, feature] : kNames)
      if (name == known) disabled |= feature;
    start = end + 1;
  }
  return disabled;
}

// Runs UFFDIO_COPY or UFFDIO_MOVE over the whole range: EAGAIN means the address space changed under
// a partial transfer, which resumes after what was done (`done`).
template <typename Args>
int run_to_end(int fd, unsigned long request, Args& args, __s64 Args::*done) {
  while (ioctl(fd, request, &args) != 0) {
    if (errno != EAGAIN) return errno;
    if (args.*done > 0) {
      args.dst += args.*done;
      args.src += args.*done;
      args.len -= args.*done;
    }
    args.*done = 0;
  }
  return 0;
}

// Whether a page is mapped at `address` (the system page holding it; a huge page maps all of its own).
bool mapped(void* address) {
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  unsigned char present = 0;
  void* start = reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(address) / page * page);
  return mincore(start, page, &present) != 0 || (present & 1) != 0;
}

}  // namespace

Userfaultfd::Userfaultfd() {
  fd_ = open_or_explain();
  // A handshake may be made once per descriptor and fails whole if one feature asked for is missing:
  // learn the kernel's features on a first descriptor, then ask for those wanted on the real one.
  uffdio_api api{};
  api.api = UFFD_API;
  if (ioctl(fd_, UFFDIO_API, &api) != 0) fail("userfaultfd API handshake failed");
  const std::uint64_t wanted = (UFFD_FEATURE_PAGEFAULT_FLAG_WP | UFFD_FEATURE_WP_HUGETLBFS_SHMEM |
                                UFFD_FEATURE_POISON | UFFD_FEATURE_MOVE | UFFD_FEATURE_THREAD_ID) &
                               api.features & ~disabled_features();
  close(fd_);
  fd_ = open_or_explain();
  api = uffdio_api{};
  api.api = UFFD_API;
  api.features = wanted;
  if (ioctl(fd_, UFFDIO_API, &api) != 0) fail("userfaultfd API handshake failed");
  features_ = wanted;
}

Userfaultfd::~Userfaultfd() {
  if (fd_ >= 0) close(fd_);
}

void Userfaultfd::register_range(void* base, std::size_t length, WriteProtect track_writes) {
  uffdio_register reg{};
  reg.range.start = reinterpret_cast<std::uint64_t>(base);
  reg.range.len = length;
  reg.mode = UFFDIO_REGISTER_MODE_MISSING;
  if (track_writes == WriteProtect::kYes && has_write_protect()) reg.mode |= UFFDIO_REGISTER_MODE_WP;
  if (ioctl(fd_, UFFDIO_REGISTER, &reg) != 0) fail("cannot register the region with userfaultfd");
}

void Userfaultfd::unregister_range(void* base, std::size_t length) {
  uffdio_range range{reinterpret_cast<std::uint64_t>(base), length};
  ioctl(fd_, UFFDIO_UNREGISTER, &range);
}

int Userfaultfd::copy(void* dst, const void* src, std::size_t length, WriteProtect protect) {
  uffdio_copy args{};
  args.dst = reinterpret_cast<std::uint64_t>(dst);
  args.src = reinterpret_cast<std::uint64_t>(src);
  args.len = length;
  args.mode = protect == WriteProtect::kYes ? UFFDIO_COPY_MODE_WP : 0;
  const int err = run_to_end(fd_, UFFDIO_COPY, args, &uffdio_copy::copy);
  // On hugetlb memory the kernel answers EEXIST also when no huge page could be allocated (seen on Linux 6.18):
  // where nothing is mapped at the address it stopped at, nothing was there.
  if (err == EEXIST && !mapped(reinterpret_cast<void*>(args.dst + (args.copy > 0 ? args.copy : 0)))) return ENOMEM;
  return err;
}

int Userfaultfd::move(void* dst, void* src, std::size_t length) {
  uffdio_move args{};
  args.dst = reinterpret_cast<std::uint64_t>(dst);
  args.src = reinterpret_cast<std::uint64_t>(src);
  args.len = length;
  return run_to_end(fd_, UFFDIO_MOVE, args, &uffdio_move::move);
}

int Userfaultfd::write_protect(void* base, std::size_t length, WriteProtect protect) {
  uffdio_writeprotect args{};
  args.range.start = reinterpret_cast<std::uint64_t>(base);
  args.range.len = length;
  args.mode = protect == WriteProtect::kYes ? UFFDIO_WRITEPROTECT_MODE_WP : 0;
  while (ioctl(fd_, UFFDIO_WRITEPROTECT, &args) != 0) {
    if (errno != EAGAIN) return errno;
  }
  return 0;
}

void Userfaultfd::wake(void* base, std::size_t length) {
  uffdio_range range{reinterpret_cast<std::uint64_t>(base), length};
  ioctl(fd_, UFFDIO_WAKE, &range);
}

int Userfaultfd::poison(void* base, std::size_t length) {
  uffdio_poison args{};
  args.range.start = reinterpret_cast<std::uint64_t>(base);
  args.range.len = length;
  while (ioctl(fd_, UFFDIO_POISON, &args) != 0) {
    if (errno != EAGAIN) return errno;
    if (args.updated > 0) {
      args.range.start += args.updated;
      args.range.len -= args.updated;
    }
    args.updated = 0;
  }
  return 0;
}

}  // namespace autopager

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
#ifndef UFFD_FEATURE_POISON  // Linux 6.6
#define UFFD_FEATURE_POISON (1 << 14)
#define UFFDIO_POISON_MODE_DONTWAKE ((__u64)1 << 0)
struct uffdio_poison {
  struct uffdio_range range;
  __u64 mode;
  __s64 updated;
};
#define UFFDIO_POISON _IOWR(UFFDIO, 0x08, struct uffdio_poison)
#endif
#ifndef UFFD_FEATURE_WP_HUGETLBFS_SHMEM  // Linux 6.0
#define UFFD_FEATURE_WP_HUGETLBFS_SHMEM (1 << 12)
#endif
#ifndef UFFD_FEATURE_MOVE  // Linux 6.8
#define UFFD_FEATURE_MOVE (1 << 16)
#define UFFDIO_MOVE_MODE_DONTWAKE ((__u64)1 << 0)
#define UFFDIO_MOVE_MODE_ALLOW_SRC_HOLES ((__u64)1 << 1)
struct uffdio_move {
  __u64 dst;
  __u64 src;
  __u64 len;
  __u64 mode;
  __s64 move;
};
#define UFFDIO_MOVE _IOWR(UFFDIO, 0x05, struct uffdio_move)
#endif

// Whether writes to a range fault to the pager (userfaultfd write-protect).
enum class WriteProtect { kNo, kYes };

class Userfaultfd {
 public:
  // Opens a non-blocking userfaultfd and negotiates the API with the features below that the kernel
  // has (write-protect, of shared memory too, poison, move, the faulting thread's id), less those named in the variable
  // AUTOPAGER_DISABLE_UFFD_FEATURES (a comma-separated list of write_protect, shared_write_protect,
  // poison, move, thread_id: for tests that emulate an older kernel). Throws std::system_error whose message says
  // what to change when the system forbids userfaultfd.
  Userfaultfd();
  ~Userfaultfd();
  Userfaultfd(const Userfaultfd&) = delete;
  Userfaultfd& operator=(const Userfaultfd&) = delete;

  int fd() const { return fd_; }
  bool has_write_protect() const { return (features_ & UFFD_FEATURE_PAGEFAULT_FLAG_WP) != 0; }
  // Write-protect of shared memory too (regions on a memfd, kept_memory.hpp).
  bool has_shared_write_protect() const {
    return has_write_protect() && (features_ & UFFD_FEATURE_WP_HUGETLBFS_SHMEM) != 0;
  }
  bool has_poison() const { return (features_ & UFFD_FEATURE_POISON) != 0; }
  bool has_move() const { return (features_ & UFFD_FEATURE_MOVE) != 0; }
  // Fault events carry the faulting thread's id (uffd_msg.arg.pagefault.feat.ptid).
  bool has_thread_id() const { return (features_ & UFFD_FEATURE_THREAD_ID) != 0; }

  // WriteProtect::kYes: writes to the range fault too (where the kernel has write-protect).
  void register_range(void* base, std::size_t length, WriteProtect track_writes);
  void unregister_range(void* base, std::size_t length);

  // Installs `length` bytes from `src` at `dst` and wakes the threads waiting there; read-only when
  // `protect` is WriteProtect::kYes. Returns 0, or the errno (EEXIST: the page is already there; ENOMEM: no
  // memory for it, a huge page pool empty).
  int copy(void* dst, const void* src, std::size_t length, WriteProtect protect);
  // Sets (kYes) or clears (kNo) write-protect on a resident range; clearing wakes the threads waiting on it.
  int write_protect(void* base, std::size_t length, WriteProtect protect);
  void wake(void* base, std::size_t length);
  // Marks an absent range so that any access raises SIGBUS at the address accessed, as the kernel's
  // mmap does for a page it cannot read, and wakes the threads waiting there. Returns 0 or the errno.
  int poison(void* base, std::size_t length);
  // Moves the pages of [src, src+length) to `dst` (a range registered with this userfaultfd, with
  // nothing there), leaving src absent, atomically for a thread touching src. Returns 0 or the errno.
  int move(void* dst, void* src, std::size_t length);

 private:
  int fd_ = -1;
  std::uint64_t features_ = 0;
};

}  // namespace autopager

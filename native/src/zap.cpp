#include "zap.hpp"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace autopager {

Zapper::Zapper() {
#if defined(SYS_pidfd_open) && defined(SYS_process_madvise)
  pidfd_ = static_cast<int>(syscall(SYS_pidfd_open, getpid(), 0));
#endif
  if (pidfd_ < 0) vectored_ = false;
}

Zapper::~Zapper() {
  if (pidfd_ >= 0) close(pidfd_);
}

void Zapper::zap(const std::vector<iovec>& ranges) {
  std::size_t done = 0;  // ranges fully zapped
#if defined(SYS_process_madvise)
  if (vectored_.load(std::memory_order_relaxed) && ranges.size() > 1) {
    long advised = syscall(SYS_process_madvise, pidfd_, ranges.data(), ranges.size(), MADV_DONTNEED, 0);
    if (advised < 0 && (errno == EINVAL || errno == ENOSYS || errno == EPERM)) {
      vectored_ = false;  // an older kernel: only some advice, or none, for process_madvise
    } else if (advised > 0) {
      for (std::size_t bytes = 0; done < ranges.size() && bytes + ranges[done].iov_len <= static_cast<std::size_t>(advised);
           ++done)
        bytes += ranges[done].iov_len;
    }
  }
#endif
  for (; done < ranges.size(); ++done) madvise(ranges[done].iov_base, ranges[done].iov_len, MADV_DONTNEED);
}

}  // namespace autopager

// Drops the memory behind resident pages so that the next access faults again. Many pages go in one
// process_madvise(MADV_DONTNEED) call, which the kernel (6.13+) serves with one TLB flush for all;
// where it cannot, each page gets its own madvise.
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <vector>

namespace autopager {

class Zapper {
 public:
  Zapper();
  ~Zapper();
  Zapper(const Zapper&) = delete;
  Zapper& operator=(const Zapper&) = delete;

  void zap(const std::vector<iovec>& ranges);

 private:
  int pidfd_ = -1;
  std::atomic<bool> vectored_{true};  // process_madvise accepts MADV_DONTNEED here
};

}  // namespace autopager

#include <unistd.h>

#include <cerrno>

#include "store/io.hpp"

namespace autopager {

ssize_t read_fully(int fd, void* dst, std::size_t n, std::uint64_t offset) {
  std::size_t done = 0;
  while (done < n) {
    ssize_t got = pread(fd, static_cast<char*>(dst) + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (got == 0) break;
    done += static_cast<std::size_t>(got);
  }
  return static_cast<ssize_t>(done);
}

ssize_t write_fully(int fd, const void* src, std::size_t n, std::uint64_t offset) {
  std::size_t done = 0;
  while (done < n) {
    ssize_t put = pwrite(fd, static_cast<const char*>(src) + done, n - done, static_cast<off_t>(offset + done));
    if (put < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    done += static_cast<std::size_t>(put);
  }
  return static_cast<ssize_t>(done);
}

}  // namespace autopager

#include "scratch_store.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <system_error>
#include <vector>

namespace autopager::python {

namespace {

[[noreturn]] void fail(const std::string& what) { throw std::system_error(errno, std::generic_category(), what); }

// O_TMPFILE where the file system has it, otherwise a named file unlinked at once.
int open_unlinked_file(const std::string& directory) {
  int fd = ::open(directory.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
  if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) {
    fail("cannot create a scratch file in " + directory + " (pass another directory with scratch_dir=)");
  }
  std::string pattern = directory + "/autopager-scratch-XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  fd = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0) fail("cannot create a scratch file in " + directory + " (pass another directory with scratch_dir=)");
  ::unlink(name.data());
  return fd;
}

}  // namespace

ScratchStore::ScratchStore(const std::string& directory, std::uint64_t size)
    : fd_(open_unlinked_file(directory)), size_(size) {
  if (::ftruncate(fd_, static_cast<off_t>(size)) != 0) {
    const int error = errno;
    ::close(fd_);
    errno = error;
    fail("cannot size a scratch file of " + std::to_string(size) + " bytes in " + directory);
  }
}

ScratchStore::~ScratchStore() { ::close(fd_); }

ssize_t ScratchStore::read(void* dst, std::size_t n, std::uint64_t offset) {
  auto* out = static_cast<char*>(dst);
  std::size_t done = 0;
  while (done < n) {
    const ssize_t got = ::pread(fd_, out + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return -1;
    if (got == 0) break;
    done += static_cast<std::size_t>(got);
  }
  return static_cast<ssize_t>(done);
}

ssize_t ScratchStore::write(const void* src, std::size_t n, std::uint64_t offset) {
  const auto* in = static_cast<const char*>(src);
  std::size_t done = 0;
  while (done < n) {
    const ssize_t put = ::pwrite(fd_, in + done, n - done, static_cast<off_t>(offset + done));
    if (put < 0 && errno == EINTR) continue;
    if (put < 0) return -1;
    done += static_cast<std::size_t>(put);
  }
  return static_cast<ssize_t>(n);
}

}  // namespace autopager::python

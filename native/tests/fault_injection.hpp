// For the tests of errors: a file store that fails reads and writes on demand, a small tmpfs that
// fills up for real, reading a byte while catching the SIGBUS it may raise, and setting an
// environment variable for one test.
#pragma once

#include <setjmp.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>

#include <map>
#include <mutex>

#include "test_util.hpp"

namespace autopager::testing {

// A file (the pattern of ScratchFile) whose reads and writes fail when told to. A failure of a read
// is consumed by each attempt, in place (read) or through the fillers' io_uring (locate points the
// ring at a descriptor open for writing only, whose read fails with EBADF).
class FaultyFileStore final : public Store {
 public:
  static constexpr int kForever = -1;

  FaultyFileStore(const std::string& path, bool through_ring) : through_ring_(through_ring) {
    fd_ = open(path.c_str(), O_RDWR | O_CLOEXEC);
    unreadable_fd_ = open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd_ < 0 || unreadable_fd_ < 0) std::abort();
    size_ = static_cast<std::uint64_t>(lseek(fd_, 0, SEEK_END));
  }
  ~FaultyFileStore() override {
    close(fd_);
    close(unreadable_fd_);
  }

  // The next `times` attempts to read the page at `offset` fail with EIO (kForever: all of them).
  void fail_reads_at(std::uint64_t offset, int times) {
    std::lock_guard<std::mutex> lock(mutex_);
    failing_reads_[offset] = times;
  }
  // Every write fails with `error` (0: writes work again).
  void fail_writes_with(int error) {
    std::lock_guard<std::mutex> lock(mutex_);
    write_error_ = error;
  }
  // Every write that covers the byte at `offset` fails with EIO, as over a bad block (kNone: none does).
  static constexpr std::uint64_t kNone = ~std::uint64_t{0};
  void fail_writes_covering(std::uint64_t offset) {
    std::lock_guard<std::mutex> lock(mutex_);
    bad_block_ = offset;
  }
  std::uint64_t ring_reads() {
    std::lock_guard<std::mutex> lock(mutex_);
    return ring_reads_;
  }

  ssize_t read(void* dst, std::size_t n, std::uint64_t offset) override {
    if (consume_read_failure(offset)) {
      errno = EIO;
      return -1;
    }
    n = static_cast<std::size_t>(std::min<std::uint64_t>(n, offset < size_ ? size_ - offset : 0));
    std::size_t done = 0;
    while (done < n) {
      ssize_t got = pread(fd_, static_cast<char*>(dst) + done, n - done, static_cast<off_t>(offset + done));
      if (got <= 0) return got < 0 ? -1 : static_cast<ssize_t>(done);
      done += static_cast<std::size_t>(got);
    }
    return static_cast<ssize_t>(done);
  }
  ssize_t write(const void* src, std::size_t n, std::uint64_t offset) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (write_error_ != 0 || (bad_block_ >= offset && bad_block_ - offset < n)) {
        errno = write_error_ != 0 ? write_error_ : EIO;
        return -1;
      }
    }
    return pwrite(fd_, src, n, static_cast<off_t>(offset));
  }
  bool locate(const void*, std::size_t n, std::uint64_t offset, FileExtent& extent) const override {
    if (!through_ring_ || offset >= size_) return false;
    const bool fail = const_cast<FaultyFileStore*>(this)->consume_read_failure(offset);
    std::lock_guard<std::mutex> lock(mutex_);
    ++ring_reads_;
    extent = {fail ? unreadable_fd_ : fd_, offset, static_cast<std::size_t>(std::min<std::uint64_t>(n, size_ - offset))};
    return true;
  }
  std::uint64_t size() const override { return size_; }

 private:
  bool consume_read_failure(std::uint64_t offset) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = failing_reads_.find(offset);
    if (it == failing_reads_.end() || it->second == 0) return false;
    if (it->second > 0) --it->second;
    return true;
  }

  const bool through_ring_;
  int fd_ = -1;
  int unreadable_fd_ = -1;
  std::uint64_t size_ = 0;
  mutable std::mutex mutex_;
  std::map<std::uint64_t, int> failing_reads_;
  int write_error_ = 0;
  std::uint64_t bad_block_ = kNone;
  mutable std::uint64_t ring_reads_ = 0;
};

// A tmpfs of a few pages in a new directory, so that writes fail with ENOSPC for real.
class SmallTmpfs {
 public:
  explicit SmallTmpfs(std::size_t bytes) {
    char name[] = "/tmp/autopager-tmpfs-XXXXXX";
    if (mkdtemp(name) == nullptr) std::abort();
    dir_ = name;
    const std::string options = "size=" + std::to_string(bytes);
    if (mount("tmpfs", dir_.c_str(), "tmpfs", 0, options.c_str()) != 0) refused_ = std::strerror(errno);
  }
  ~SmallTmpfs() {
    if (refused_.empty()) umount2(dir_.c_str(), MNT_DETACH);
    rmdir(dir_.c_str());
  }
  // Why it could not be mounted, or empty.
  const std::string& refused() const { return refused_; }
  const std::string& dir() const { return dir_; }
  bool grow_to(std::size_t bytes) {
    const std::string options = "size=" + std::to_string(bytes);
    return mount("tmpfs", dir_.c_str(), "tmpfs", MS_REMOUNT, options.c_str()) == 0;
  }
  // A sparse file of `size` bytes there: its pages take room only once written.
  std::string sparse_file(const std::string& name, std::uint64_t size) const {
    std::string path = dir_ + "/" + name;
    int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || ftruncate(fd, static_cast<off_t>(size)) != 0) std::abort();
    close(fd);
    return path;
  }

 private:
  std::string dir_;
  std::string refused_;
};

#define AUTOPAGER_REQUIRE_TMPFS(fs) \
  if (!(fs).refused().empty()) GTEST_SKIP() << "cannot mount a tmpfs here: " << (fs).refused()

// What reading one byte gave: the byte, or the SIGBUS it raised (its si_addr and si_code).
struct Access {
  bool sigbus = false;
  std::uint8_t value = 0;
  void* address = nullptr;
  int code = 0;
};

inline sigjmp_buf& sigbus_jump() {
  static sigjmp_buf jump;
  return jump;
}
inline Access& sigbus_seen() {
  static Access seen;
  return seen;
}

// Reads the byte at `address`, or writes `value` there when it is given.
inline Access touch_catching_sigbus(volatile std::uint8_t* address, int value = -1) {
  struct sigaction action {}, previous{};
  action.sa_sigaction = [](int, siginfo_t* info, void*) {
    sigbus_seen().address = info->si_addr;
    sigbus_seen().code = info->si_code;
    siglongjmp(sigbus_jump(), 1);
  };
  action.sa_flags = SA_SIGINFO;
  sigaction(SIGBUS, &action, &previous);
  Access result;
  if (sigsetjmp(sigbus_jump(), 1) == 0) {
    if (value < 0) result.value = *address;
    else *address = static_cast<std::uint8_t>(value);
  } else {
    result = sigbus_seen();
    result.sigbus = true;
  }
  sigaction(SIGBUS, &previous, nullptr);
  return result;
}

inline Access read_catching_sigbus(const volatile std::uint8_t* address) {
  return touch_catching_sigbus(const_cast<volatile std::uint8_t*>(address));
}

// Sets an environment variable for the scope of one test (before its pager starts).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    if (old != nullptr) old_ = old, had_ = true;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_) setenv(name_, old_.c_str(), 1);
    else unsetenv(name_);
  }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

// Runs `body` in a child process with its stderr in `stderr_text`; returns its wait status.
template <typename Body>
int run_in_child(Body body, std::string* stderr_text) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) std::abort();
  pid_t child = fork();
  if (child == 0) {
    dup2(pipe_fds[1], 2);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    std::exit(body());
  }
  close(pipe_fds[1]);
  char chunk[4096];
  ssize_t got;
  while ((got = ::read(pipe_fds[0], chunk, sizeof chunk)) > 0) stderr_text->append(chunk, static_cast<std::size_t>(got));
  close(pipe_fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  return status;
}

inline std::size_t count_lines(const std::string& text, const std::string& containing = "") {
  std::size_t lines = 0;
  for (std::size_t start = 0; start < text.size();) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (text.substr(start, end - start).find(containing) != std::string::npos) ++lines;
    start = end + 1;
  }
  return lines;
}

}  // namespace autopager::testing

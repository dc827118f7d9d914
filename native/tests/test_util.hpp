// Helpers for the native tests: scratch files with a known pattern, and the userfaultfd check.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <mutex>
#include <thread>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "autopager/autopager.hpp"

namespace autopager::testing {

// The byte expected at `offset` of a pattern file with `seed`.
inline std::uint8_t pattern_byte(std::uint64_t offset, std::uint64_t seed) {
  std::uint64_t x = (offset / 8) * 0x9E3779B97F4A7C15ull + seed;
  x ^= x >> 29;
  return static_cast<std::uint8_t>(x >> (8 * (offset % 8)));
}

class ScratchFile {
 public:
  explicit ScratchFile(std::uint64_t size, std::uint64_t seed = 1) {
    char name[] = "/tmp/autopager-test-XXXXXX";
    int fd = mkstemp(name);
    if (fd < 0) std::abort();
    path_ = name;
    std::vector<std::uint8_t> chunk(1 << 20);
    for (std::uint64_t off = 0; off < size; off += chunk.size()) {
      std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(chunk.size(), size - off));
      for (std::size_t i = 0; i < n; ++i) chunk[i] = pattern_byte(off + i, seed);
      if (pwrite(fd, chunk.data(), n, static_cast<off_t>(off)) != static_cast<ssize_t>(n)) std::abort();
    }
    close(fd);
  }
  ~ScratchFile() { unlink(path_.c_str()); }
  const std::string& path() const { return path_; }
  std::vector<std::uint8_t> contents() const {
    std::vector<std::uint8_t> bytes;
    FILE* f = std::fopen(path_.c_str(), "rb");
    if (f == nullptr) return bytes;
    std::fseek(f, 0, SEEK_END);
    bytes.resize(static_cast<std::size_t>(std::ftell(f)));
    std::fseek(f, 0, SEEK_SET);
    if (std::fread(bytes.data(), 1, bytes.size(), f) != bytes.size()) bytes.clear();
    std::fclose(f);
    return bytes;
  }

 private:
  std::string path_;
};

// Why `file`'s file system cannot be opened with O_DIRECT (tmpfs cannot); empty when it can.
inline std::string direct_io_missing(const ScratchFile& file) {
  int probe = open(file.path().c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
  if (probe < 0) return std::string("this file system does not support O_DIRECT: ") + std::strerror(errno);
  close(probe);
  return "";
}

inline Config small_config(std::size_t page_size, std::uint64_t buffer_pages, unsigned threads = 2) {
  Config c = Config::defaults();
  c.page_size = page_size;
  c.read_only_page_size = 0;  // a page size given is every region's, as UMAP_PAGESIZE makes it
  c.buffer_pages = buffer_pages;
  c.fillers = threads;
  c.evictors = threads;
  c.max_fault_events = threads;
  // ctest runs the torture and fault tests once more under each eviction policy (tests/CMakeLists.txt).
  if (const char* eviction = std::getenv("UMAP_EVICTION")) c.eviction = eviction_from_name(eviction);
  return c;
}

// A child cgroup of this process's own, in a cgroup v1 controller's hierarchy ("memory", "pids"), removed
// when destroyed (after the processes put in it have ended). ok() is false, with why(), when the
// controller is absent or the system refuses to create one.
class TestCgroup {
 public:
  explicit TestCgroup(const std::string& controller) {
    std::ifstream groups("/proc/self/cgroup");
    std::string line, own;
    while (std::getline(groups, line)) {
      std::size_t first = line.find(':'), second = line.find(':', first + 1);
      if (first == std::string::npos || second == std::string::npos) continue;
      std::istringstream controllers(line.substr(first + 1, second - first - 1));
      std::string name;
      while (std::getline(controllers, name, ','))
        if (name == controller) own = line.substr(second + 1);
    }
    const std::string top = "/sys/fs/cgroup/" + controller;
    if (own.empty() || access(top.c_str(), W_OK) != 0) {
      why_ = "no writable cgroup v1 " + controller + " hierarchy at " + top;
      return;
    }
    path_ = top + (own == "/" ? "" : own) + "/autopager-test-" + std::to_string(getpid());
    if (mkdir(path_.c_str(), 0755) != 0) {
      why_ = "cannot create the cgroup " + path_ + ": " + std::strerror(errno);
      path_.clear();
    }
  }
  ~TestCgroup() {
    if (!path_.empty()) rmdir(path_.c_str());
  }
  TestCgroup(const TestCgroup&) = delete;
  TestCgroup& operator=(const TestCgroup&) = delete;

  bool ok() const { return !path_.empty(); }
  const std::string& why() const { return why_; }
  bool set(const std::string& file, const std::string& value) const {
    std::ofstream out(path_ + "/" + file);
    out << value;
    out.flush();
    return static_cast<bool>(out);
  }
  // Moves the calling process into the cgroup.
  bool enter() const { return set("cgroup.procs", std::to_string(getpid())); }

 private:
  std::string path_;
  std::string why_;
};

inline bool thread_sanitizer() {
#if defined(__SANITIZE_THREAD__)
  return true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
  return true;
#endif
#endif
  return false;
}

// Fails a test that hangs with what each of its threads waits on, instead of leaving it to ctest's
// timeout, which shows nothing: after `seconds`, prints every thread's state, kernel wait channel and
// kernel stack (readable by root) and those of its child processes, then `describe()` (e.g. the pager's
// statistics), and aborts.
class HangWatchdog {
 public:
  HangWatchdog(unsigned seconds, std::function<std::string()> describe)
      : describe_(std::move(describe)), thread_([this, seconds] { watch(seconds); }) {}
  ~HangWatchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    finished_.notify_all();
    thread_.join();
  }
  HangWatchdog(const HangWatchdog&) = delete;
  HangWatchdog& operator=(const HangWatchdog&) = delete;

 private:
  void watch(unsigned seconds) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (finished_.wait_for(lock, std::chrono::seconds(seconds), [this] { return done_; })) return;
    std::fprintf(stderr, "hung for %u s; threads of process %d:\n", seconds, static_cast<int>(getpid()));
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
      auto text = [&](const char* name) {
        std::ifstream in(task.path() / name);
        std::stringstream all;
        all << in.rdbuf();
        return all.str();
      };
      std::fprintf(stderr, "-- thread %s: %s   wchan %s\n   %s%s", task.path().filename().c_str(),
                   text("comm").c_str(), text("wchan").c_str(), text("stat").c_str(), text("stack").c_str());
      std::istringstream children(text("children"));
      for (std::string child; children >> child;) {
        std::ifstream stat("/proc/" + child + "/stat"), stack("/proc/" + child + "/stack");
        std::stringstream both;
        both << stat.rdbuf() << stack.rdbuf();
        std::fprintf(stderr, "   child process %s: %s", child.c_str(), both.str().c_str());
      }
      std::fprintf(stderr, "\n");
    }
    std::fprintf(stderr, "%s\n", describe_().c_str());
    std::fflush(nullptr);
    std::abort();
  }

  std::function<std::string()> describe_;
  std::mutex mutex_;
  std::condition_variable finished_;
  bool done_ = false;
  std::thread thread_;
};

// Runs `body` in a forked child killed by SIGALRM after `seconds`; returns its exit status, or 128 + the
// signal that ended it.
template <typename Body>
int in_forked_child(unsigned seconds, Body body) {
  pid_t child = fork();
  if (child == 0) {
    alarm(seconds);
    std::exit(body());
  }
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Skips (with the reason printed) only where userfaultfd truly cannot be used.
#define AUTOPAGER_REQUIRE_USERFAULTFD()                                                     \
  do {                                                                                      \
    int fd_ = static_cast<int>(syscall(SYS_userfaultfd, O_CLOEXEC | 1 /* user mode only */)); \
    if (fd_ < 0 && access("/dev/userfaultfd", R_OK | W_OK) != 0)                            \
      GTEST_SKIP() << "userfaultfd is unavailable here: " << std::strerror(errno);          \
    if (fd_ >= 0) close(fd_);                                                               \
  } while (0)

}  // namespace autopager::testing

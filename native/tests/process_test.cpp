// The pager in a process: fork, signals, and failures to start its threads or buffers.
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "test_util.hpp"
#include "umap/umap.h"

namespace autopager {
namespace {

using testing::HangWatchdog;
using testing::in_forked_child;
using testing::pattern_byte;
using testing::ScratchFile;
using testing::small_config;
using testing::TestCgroup;
using testing::thread_sanitizer;

constexpr unsigned kChildSeconds = 60;  // a child that hangs is killed, and the test fails

// Set while a test forks children of a process with pager threads. What those threads owned (their
// stacks' objects) is unreachable in such a child, where they do not exist: a leak checker at the child's
// exit would report it, though the child itself allocated nothing. See __lsan_is_turned_off below.
std::atomic<bool> forking_with_pager_threads{false};

struct ForkingWithPagerThreads {
  ForkingWithPagerThreads() { forking_with_pager_threads = true; }
  ~ForkingWithPagerThreads() { forking_with_pager_threads = false; }
};


// Parent: a pager over a file, some pages resident, some dirty and not flushed, a small buffer so
// that the region keeps evicting. The child inherits it all and exits normally, destroying its copy of
// the pager and running the exit handlers (whose flush would, before, write the child's stale pages
// and unregister or write-protect the parent's). Afterwards the parent reads and writes every page and
// its file holds exactly its bytes.
TEST(Fork, AChildThatExitsNormallyLeavesTheParentsPagerAndFileAlone) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  ForkingWithPagerThreads forking;
  const std::size_t page = system_page_size();
  const std::size_t size = 64 * page;
  ScratchFile file(size, 11);
  auto pager = std::make_unique<Pager>(small_config(page, 8));
  auto* bytes = static_cast<std::uint8_t*>(pager->map(make_file_store(file.path()), size));
  std::vector<std::uint8_t> expected = file.contents();
  for (std::size_t i = 0; i < size; i += page) bytes[i] = expected[i] = static_cast<std::uint8_t>(i / page + 1);
  for (std::size_t i = 0; i < 4 * page; i += 97) bytes[i] = expected[i] = 0xA5;  // dirty, resident

  int code = in_forked_child(kChildSeconds, [&] {
    if (!pager->inherited()) return 2;
    if (pager->flush() != 0) return 3;            // nothing of the parent's is the child's to write
    if (pager->unmap(bytes)) return 4;            // and no region to release
    if (pager->region_base(bytes) != nullptr) return 5;
    try {
      pager->map(make_file_store(file.path()), size);
      return 6;
    } catch (const std::system_error& e) {
      if (e.code().value() != EINVAL) return 7;
    }
    pager.reset();
    return 0;  // std::exit: the exit handlers run
  });
  ASSERT_EQ(code, 0);
  EXPECT_FALSE(pager->inherited());

  for (std::size_t i = 0; i < size; ++i) ASSERT_EQ(bytes[i], expected[i]) << "byte " << i;
  for (std::size_t i = 1; i < size; i += page) bytes[i] = expected[i] = 0x5A;  // no page stays write-protected
  ASSERT_EQ(pager->flush(), 0);
  ASSERT_TRUE(pager->unmap(bytes));
  EXPECT_EQ(file.contents(), expected);
}

TEST(Fork, AChildTouchingAnInheritedRegionDiesOfSegvWithoutWritingAByte) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  ForkingWithPagerThreads forking;
  const std::size_t page = system_page_size();
  const std::size_t size = 16 * page;
  ScratchFile file(size, 12);
  Pager pager(small_config(page, 64));
  auto* bytes = static_cast<std::uint8_t*>(pager.map(make_file_store(file.path()), size));
  bytes[0] = 0x11;  // resident and dirty at the fork
  std::vector<std::uint8_t> before = file.contents();
  for (std::size_t at : {std::size_t{0}, 5 * page}) {  // a page resident at the fork, one never touched
    int code = in_forked_child(kChildSeconds, [&] {
      signal(SIGSEGV, SIG_DFL);  // not a sanitizer's report: the signal itself
      bytes[at + 1] = 0x77;
      return 0;
    });
    EXPECT_EQ(code, 128 + SIGSEGV) << "offset " << at;
  }
  EXPECT_EQ(file.contents(), before);
  EXPECT_EQ(bytes[0], 0x11);
  EXPECT_EQ(bytes[5 * page + 1], pattern_byte(5 * page + 1, 12));
  ASSERT_TRUE(pager.unmap(bytes));
  std::vector<std::uint8_t> after = file.contents();
  EXPECT_EQ(after[0], 0x11);
  EXPECT_EQ(after[1], pattern_byte(1, 12));
}

// Through the C API, whose pager is flushed at exit: the child's exit flush must not write-protect the
// parent's pages (the parent's next write would wait for ever). A child's own umap() gets a new pager.
TEST(Fork, CApiChildExitsAndMapsWithAPagerOfItsOwn) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  ForkingWithPagerThreads forking;
  const std::size_t page = system_page_size();
  const std::size_t size = 32 * page;
  ScratchFile file(size, 13);
  int code = in_forked_child(kChildSeconds, [&] {  // the "parent": a process with a fresh default pager
    setenv("UMAP_BUFSIZE", "8", 1);
    int fd = open(file.path().c_str(), O_RDWR);
    auto* bytes = static_cast<std::uint8_t*>(umap(nullptr, size, PROT_READ | PROT_WRITE, UMAP_PRIVATE, fd, 0));
    if (bytes == UMAP_FAILED) return 2;
    for (std::size_t i = 0; i < size; i += page) bytes[i] = 0x31;
    if (umap_flush() != 0) return 3;  // every page clean and write-protected
    int child = in_forked_child(kChildSeconds, [&] {
      if (thread_sanitizer()) return 0;  // TSan forbids new threads (a new pager's) after a multi-threaded fork
      if (uunmap(bytes, size) == 0 || errno != EINVAL) return 2;  // not a region of the child's (new) pager
      auto* own = static_cast<std::uint8_t*>(umap(nullptr, size, PROT_READ, UMAP_PRIVATE, fd, 0));
      if (own == UMAP_FAILED || own[0] != 0x31 || own[page + 1] != pattern_byte(page + 1, 13)) return 3;
      return 0;  // exit(): the child's exit flush runs
    });
    if (child != 0) return 10 + child;
    for (std::size_t i = 1; i < size; i += page) bytes[i] = 0x32;  // would spin on a write-protected page
    if (uunmap(bytes, size) != 0) return 4;
    return 0;
  });
  ASSERT_EQ(code, 0);
  std::vector<std::uint8_t> after = file.contents();
  for (std::size_t i = 0; i < size; i += page) {
    EXPECT_EQ(after[i], 0x31);
    EXPECT_EQ(after[i + 1], 0x32);
    EXPECT_EQ(after[i + 2], pattern_byte(i + 2, 13));
  }
}

// Forks while another thread maps, faults, flushes and unmaps: a child that flushes and exits never
// waits on a lock that was held at the fork.
TEST(Fork, ChildrenForkedWhileThePagerIsBusyExitWithoutWaiting) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  ForkingWithPagerThreads forking;
  const std::size_t page = system_page_size();
  const std::size_t size = 64 * page;
  ScratchFile file(size, 14);
  Pager pager(small_config(page, 8));
  HangWatchdog watchdog(120, [&] { return "pager statistics: " + pager.stats().to_json(); });
  std::atomic<bool> stop{false};
  std::thread busy([&] {
    while (!stop.load()) {
      auto* bytes = static_cast<std::uint8_t*>(pager.map(make_file_store(file.path()), size));
      for (std::size_t i = 0; i < size; i += page) bytes[i] = bytes[i + 1];
      pager.flush();
      pager.unmap(bytes);
    }
  });
  for (int i = 0; i < 20; ++i) {
    int code = in_forked_child(kChildSeconds, [&] { return pager.flush(); });
    EXPECT_EQ(code, 0) << "fork " << i;
  }
  stop.store(true);
  busy.join();
}

// Signals.
std::atomic<std::uint8_t*> signal_region{nullptr};
std::atomic<unsigned> signals_served{0};
std::atomic<bool> signal_wrong_byte{false};
std::size_t signal_page = 0;

void read_region_on_signal(int) {
  unsigned n = signals_served.load();
  std::size_t at = (static_cast<std::size_t>(n) * 7 % 64) * signal_page + n % 251;
  if (signal_region.load()[at] != pattern_byte(at, 15)) signal_wrong_byte.store(true);
  signals_served.store(n + 1);
}

// The blocked-signal mask of each of this process's threads named `name`.
std::vector<std::uint64_t> blocked_signals_of_threads(const std::string& name) {
  std::vector<std::uint64_t> masks;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string thread_name;
    if (!std::getline(comm, thread_name) || thread_name != name) continue;
    std::ifstream status(task.path() / "status");
    std::string line;
    while (std::getline(status, line))
      if (line.rfind("SigBlk:", 0) == 0) masks.push_back(std::stoull(line.substr(7), nullptr, 16));
  }
  return masks;
}

bool blocks(std::uint64_t mask, int signal) { return (mask >> (signal - 1)) & 1; }

// The kernel delivers a signal sent to the process to a thread that does not block it: never to a
// pager thread, whose handler's fault could wait for the thread itself. (Checked on the masks: which
// thread the kernel picks also depends on threads outside our control, such as a sanitizer's.)
TEST(Signals, PagerThreadsBlockAsynchronousSignalsOnly) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  Config config = small_config(system_page_size(), 8, 2);
  config.monitor_interval = 3600;
  Pager pager(config);
  const std::vector<std::pair<std::string, std::size_t>> kinds = {
      {"ap-filler", 2}, {"ap-evictor", 2}, {"ap-monitor", 1}};
  // A thread glibc has just created blocks every signal until it has set its own mask: wait for that.
  auto settled = [&] {
    for (const auto& [name, count] : kinds)
      for (std::uint64_t mask : blocked_signals_of_threads(name))
        if (blocks(mask, SIGSEGV)) return false;
    return true;
  };
  for (int waits = 0; waits < 5000 && !settled(); ++waits) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  for (const auto& [name, count] : kinds) {
    std::vector<std::uint64_t> masks = blocked_signals_of_threads(name);
    ASSERT_EQ(masks.size(), count) << name;
    for (std::uint64_t mask : masks) {
      for (int asynchronous : {SIGUSR1, SIGUSR2, SIGTERM, SIGINT, SIGALRM, SIGCHLD, SIGRTMIN})
        EXPECT_TRUE(blocks(mask, asynchronous)) << name << " takes signal " << asynchronous;
      for (int synchronous : {SIGSEGV, SIGBUS, SIGFPE, SIGILL})
        EXPECT_FALSE(blocks(mask, synchronous)) << name << " blocks signal " << synchronous;
    }
  }
}

// A handler on an application thread reads pages that are not resident: the pager's threads serve
// the fault while the interrupted thread waits in its handler.
TEST(Signals, AHandlerReadingARegionIsServed) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  signal_page = system_page_size();
  const std::size_t size = 64 * signal_page;
  ScratchFile file(size, 15);
  int code = in_forked_child(kChildSeconds, [&] {
    Pager pager(small_config(signal_page, 4, 1));
    signal_region = static_cast<std::uint8_t*>(pager.map(make_file_store(file.path(), {false}), size, PROT_READ));
    struct sigaction action {};
    action.sa_handler = read_region_on_signal;
    sigemptyset(&action.sa_mask);
    if (sigaction(SIGUSR1, &action, nullptr) != 0) return 2;
    std::atomic<bool> done{false};
    std::atomic<unsigned> returned{0};  // handlers that have returned
    std::thread application([&] {
      while (!done.load()) {
        timespec nap{0, 1000000};
        nanosleep(&nap, nullptr);  // a signal cuts it short, its handler run before it returns
        returned.store(signals_served.load());
      }
    });
    constexpr unsigned kSignals = 200;
    for (unsigned i = 0; i < kSignals; ++i) {
      // Sent again if not handled within a while: ThreadSanitizer's emulation of signal delivery
      // sometimes loses one. A handler whose fault is never served stays unreturned all the same.
      for (int tries = 0; returned.load() <= i && tries < 100; ++tries) {
        pthread_kill(application.native_handle(), SIGUSR1);
        for (int waits = 0; returned.load() <= i && waits < 100; ++waits) {
          timespec nap{0, 1000000};
          nanosleep(&nap, nullptr);
        }
      }
    }
    done = true;
    application.join();
    if (returned.load() < kSignals) return 3;
    if (signal_wrong_byte.load()) return 4;
    return pager.stats().read_faults >= kSignals / 4 ? 0 : 5;  // the pages were not resident
  });
  EXPECT_EQ(code, 0);
}

// Failures to start: an error for the caller, never std::terminate.
TEST(StartFailure, ThreadsThatCannotBeCreatedAreAnErrorWithNoThreadLeft) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  TestCgroup cgroup("pids");
  if (!cgroup.ok()) GTEST_SKIP() << cgroup.why();
  ScratchFile file(16 * system_page_size());
  int code = in_forked_child(kChildSeconds, [&] {
    // The process alone: its first new thread is refused (EAGAIN).
    if (!cgroup.enter() || !cgroup.set("pids.max", "1")) return 2;
    try {
      Pager pager(small_config(system_page_size(), 16));
      return 3;
    } catch (const std::system_error& e) {
      if (e.code().value() != EAGAIN) return 4;
    }
    int fd = open(file.path().c_str(), O_RDONLY);
    if (umap(nullptr, 16 * system_page_size(), PROT_READ, UMAP_PRIVATE, fd, 0) != UMAP_FAILED) return 5;
    if (errno != EAGAIN) return 6;
    // And nothing was left behind: with threads allowed again, a pager starts.
    if (!cgroup.set("pids.max", "max")) return 7;
    auto* p = static_cast<std::uint8_t*>(umap(nullptr, 16 * system_page_size(), PROT_READ, UMAP_PRIVATE, fd, 0));
    return p != UMAP_FAILED && p[3] == pattern_byte(3, 1) && uunmap(p, 16 * system_page_size()) == 0 ? 0 : 8;
  });
  EXPECT_EQ(code, 0);
}

std::uint64_t virtual_size() {
  std::ifstream status("/proc/self/status");
  std::string key;
  std::uint64_t kib = 0;
  while (status >> key) {
    if (key == "VmSize:" && status >> kib) return kib * 1024;
    status.ignore(1 << 20, '\n');
  }
  return 0;
}

TEST(StartFailure, BuffersThatCannotBeAllocatedAreAnErrorWithNoThreadLeft) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  int code = in_forked_child(kChildSeconds, [&] {
    // Room for the threads' stacks, not for a filler's 256 MiB staging page.
    const rlim_t limit = virtual_size() + (96u << 20);
    rlimit as{limit, limit};
    if (setrlimit(RLIMIT_AS, &as) != 0) return 2;
    try {
      Pager pager(small_config(256u << 20, 2, 1));
      return 3;
    } catch (const std::system_error& e) {
      if (e.code().value() != ENOMEM) return 4;
    }
    return 0;
  });
  EXPECT_EQ(code, 0);
}

}  // namespace
}  // namespace autopager

// LeakSanitizer's hook: no leak check at the exit of a child forked from a process with pager threads.
extern "C" int __lsan_is_turned_off() { return autopager::forking_with_pager_threads.load() ? 1 : 0; }

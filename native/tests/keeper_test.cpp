// Writes kept through the process's death (keep_writes, docs/DESIGN.md "Pager: writes kept through the
// process's death"): a child process writes a file through the C API or a Pager, with a small buffer (most
// of its dirty pages evicted and written back by then) or the default one (none), and dies without
// writing back: SIGKILL, abort(), _exit(), SIGSEGV. Every byte of the file must be what it wrote, as with the
// kernel's mmap. The child's stderr is a pipe the keeper holds until it has written back, so the test
// reads it to its end before it reads the file.
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>

#include "fault_injection.hpp"
#include "test_util.hpp"
#include "umap/umap.h"

namespace autopager::testing {
namespace {

enum class Front { kCApi, kPager };
enum class Death { kKill, kAbort, kExit, kSegv };
enum class Buffer { kSmall, kDefault };

constexpr std::uint64_t kBytes = 16u << 20;
constexpr std::uint64_t kWords = kBytes / 8;
constexpr std::uint64_t kSmallBufferPages = 64;  // 256 KiB of 4 KiB pages: 1/64 of the file

std::uint64_t old_word(std::uint64_t index) {
  std::uint64_t word = 0;
  for (int b = 0; b < 8; ++b) word |= std::uint64_t{pattern_byte(index * 8 + b, 5)} << (8 * b);
  return word;
}
std::uint64_t new_word(std::uint64_t index) { return index * 0x9E3779B97F4A7C15ull ^ 0xD1B54A32D192ED03ull; }

// Maps the file in this (child) process through `front`; the region's words.
std::uint64_t* map_file(Front front, Buffer buffer, const std::string& path) {
  const std::size_t page = system_page_size();
  if (front == Front::kCApi) {
    setenv("UMAP_KEEP_WRITES", "1", 1);  // off by default (its cost, config.cpp)
    if (buffer == Buffer::kSmall) {
      setenv("UMAP_PAGESIZE", std::to_string(page).c_str(), 1);
      setenv("UMAP_BUFSIZE", std::to_string(kSmallBufferPages).c_str(), 1);
    }
    int fd = open(path.c_str(), O_RDWR);
    void* base = umap(nullptr, kBytes, PROT_READ | PROT_WRITE, UMAP_PRIVATE, fd, 0);
    close(fd);
    return base == UMAP_FAILED ? nullptr : static_cast<std::uint64_t*>(base);
  }
  Config config = buffer == Buffer::kSmall ? small_config(page, kSmallBufferPages) : Config::defaults();
  config.keep_writes = true;  // off by default (its cost, config.cpp)
  auto* pager = new Pager(config);
  return static_cast<std::uint64_t*>(pager->map(make_file_store(path), kBytes));
}

[[noreturn]] void die(Death death) {
  switch (death) {
    case Death::kKill:
      kill(getpid(), SIGKILL);
      break;
    case Death::kAbort:
      std::abort();
    case Death::kExit:
      _exit(0);
    case Death::kSegv: {  // a real fault: a write to a page that allows none
      void* none = mmap(nullptr, system_page_size(), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      *static_cast<volatile int*>(none) = 1;
      break;
    }
  }
  _exit(99);
}

// What the child left: the pipe its stderr went to is read to its end (the keeper's too), then the file.
struct Outcome {
  int status = 0;
  bool wrote = false;  // the child said it had written everything it was to write before it died
  std::string stderr_text;
};

// Runs `body(report)` in a child whose stderr is a pipe; `report()` tells the parent the writes are done.
template <typename Body>
Outcome in_child(Body body, bool kill_when_reported = false) {
  int err_pipe[2], done_pipe[2];
  if (pipe(err_pipe) != 0 || pipe(done_pipe) != 0) std::abort();
  pid_t child = fork();
  if (child == 0) {
    close(err_pipe[0]);
    close(done_pipe[0]);
    dup2(err_pipe[1], 2);
    close(err_pipe[1]);
    rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);  // its shared page memory would be dumped
    body([&] {
      char done = 1;
      if (write(done_pipe[1], &done, 1) != 1) _exit(98);
    });
    _exit(97);
  }
  close(err_pipe[1]);
  close(done_pipe[1]);
  Outcome outcome;
  char done = 0;
  outcome.wrote = read(done_pipe[0], &done, 1) == 1;
  if (kill_when_reported && outcome.wrote) kill(child, SIGKILL);
  close(done_pipe[0]);
  waitpid(child, &outcome.status, 0);
  char text[4096];
  for (ssize_t n; (n = read(err_pipe[0], text, sizeof text)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    outcome.stderr_text.append(text, static_cast<std::size_t>(n));
  }
  close(err_pipe[0]);
  return outcome;
}

std::uint64_t word_at(const std::vector<std::uint8_t>& file, std::uint64_t index) {
  std::uint64_t word;
  std::memcpy(&word, file.data() + index * 8, 8);
  return word;
}

class KeptWrites : public ::testing::TestWithParam<std::tuple<Front, Buffer, Death>> {};

TEST_P(KeptWrites, ReachTheFileWhenTheProgramDies) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const auto [front, buffer, death] = GetParam();
  ScratchFile file(kBytes, 5);
  Outcome outcome = in_child([&, front = front, buffer = buffer, death = death](auto report) {
    std::uint64_t* words = map_file(front, buffer, file.path());
    if (words == nullptr) _exit(96);
    // A flush a quarter of the way: pages written before it and after it alike must survive.
    for (std::uint64_t i = 0; i < kWords; ++i) {
      words[i] = new_word(i);
      if (i == kWords / 4 && front == Front::kCApi) umap_flush();
    }
    report();
    die(death);
  });
  ASSERT_TRUE(outcome.wrote) << "the child did not write (status " << outcome.status << "): " << outcome.stderr_text;
  ASSERT_FALSE(WIFEXITED(outcome.status) && WEXITSTATUS(outcome.status) != 0 && death == Death::kExit)
      << outcome.stderr_text;
  const std::vector<std::uint8_t> contents = file.contents();
  ASSERT_EQ(contents.size(), kBytes);
  std::uint64_t lost = 0, first = kWords;
  for (std::uint64_t i = 0; i < kWords; ++i)
    if (word_at(contents, i) != new_word(i) && lost++ == 0) first = i;
  EXPECT_EQ(lost, 0u) << "words of " << kWords << " not written, the first at byte " << first * 8 << "; stderr: "
                      << outcome.stderr_text;
  EXPECT_EQ(outcome.stderr_text.find("cannot be kept"), std::string::npos) << outcome.stderr_text;
  EXPECT_EQ(outcome.stderr_text.find("autopager-keeper"), std::string::npos) << outcome.stderr_text;
}

std::string death_name(const ::testing::TestParamInfo<KeptWrites::ParamType>& info) {
  const char* fronts[] = {"CApi", "Pager"};
  const char* buffers[] = {"SmallBuffer", "DefaultBuffer"};
  const char* deaths[] = {"Sigkill", "Abort", "Exit", "Sigsegv"};
  return std::string(fronts[static_cast<int>(std::get<0>(info.param))]) +
         buffers[static_cast<int>(std::get<1>(info.param))] + deaths[static_cast<int>(std::get<2>(info.param))];
}

INSTANTIATE_TEST_SUITE_P(Deaths, KeptWrites,
                         ::testing::Combine(::testing::Values(Front::kCApi, Front::kPager),
                                            ::testing::Values(Buffer::kSmall, Buffer::kDefault),
                                            ::testing::Values(Death::kKill, Death::kAbort, Death::kExit,
                                                              Death::kSegv)),
                         death_name);

// Killed from outside while it writes: what it wrote before it said so is new, every later word old or new.
TEST(KeptWrites, AProgramKilledMidWriteLeavesEveryWordOldOrNew) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  ScratchFile file(kBytes, 5);
  Outcome outcome = in_child(
      [&](auto report) {
        std::uint64_t* words = map_file(Front::kPager, Buffer::kSmall, file.path());
        if (words == nullptr) _exit(96);
        for (std::uint64_t i = 0; i < kWords / 2; ++i) words[i] = new_word(i);
        report();
        for (std::uint64_t pass = 0;; ++pass)
          for (std::uint64_t i = kWords / 2; i < kWords; ++i) words[i] = new_word(i);
      },
      /*kill_when_reported=*/true);
  ASSERT_TRUE(outcome.wrote) << outcome.stderr_text;
  ASSERT_TRUE(WIFSIGNALED(outcome.status) && WTERMSIG(outcome.status) == SIGKILL);
  const std::vector<std::uint8_t> contents = file.contents();
  ASSERT_EQ(contents.size(), kBytes);
  std::uint64_t lost = 0, torn = 0;
  for (std::uint64_t i = 0; i < kWords / 2; ++i) lost += word_at(contents, i) != new_word(i);
  for (std::uint64_t i = kWords / 2; i < kWords; ++i)
    torn += word_at(contents, i) != new_word(i) && word_at(contents, i) != old_word(i);
  EXPECT_EQ(lost, 0u) << outcome.stderr_text;
  EXPECT_EQ(torn, 0u) << outcome.stderr_text;
}

// A program that closes descriptors it did not open (here every socket: the keeper's is its only one) closes the
// keeper's socket: the keeper, seeing it still maps its pages, waits for its end before it writes back (a
// write-back racing with the pager's own could put older bytes over newer ones), and keeps what it wrote after.
TEST(KeptWrites, AProgramThatClosesTheKeepersSocketStillKeepsItsWrites) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  ScratchFile file(kBytes, 5);
  Outcome outcome = in_child([&](auto report) {
    std::uint64_t* words = map_file(Front::kPager, Buffer::kSmall, file.path());
    if (words == nullptr) _exit(96);
    for (std::uint64_t i = 0; i < kWords / 2; ++i) words[i] = new_word(i);
    report();
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
      std::error_code error;
      if (std::filesystem::read_symlink(entry.path(), error).string().rfind("socket:", 0) == 0)
        close(std::stoi(entry.path().filename().string()));
    }
    usleep(100 * 1000);  // the keeper sees its socket closed while the process maps its pages
    for (std::uint64_t i = kWords / 2; i < kWords; ++i) words[i] = new_word(i);
    die(Death::kKill);
  });
  ASSERT_TRUE(outcome.wrote) << outcome.stderr_text;
  ASSERT_TRUE(WIFSIGNALED(outcome.status) && WTERMSIG(outcome.status) == SIGKILL) << outcome.stderr_text;
  const std::vector<std::uint8_t> contents = file.contents();
  ASSERT_EQ(contents.size(), kBytes);
  std::uint64_t lost = 0;
  for (std::uint64_t i = 0; i < kWords; ++i) lost += word_at(contents, i) != new_word(i);
  EXPECT_EQ(lost, 0u) << outcome.stderr_text;
}

// No keeper to be had: one WARNING naming the setting, and the regions work as without keep_writes.
TEST(KeptWrites, WithoutAKeeperOneWarningAndTheRegionsWork) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  ScratchFile file(kBytes, 5);
  Outcome outcome = in_child([&](auto report) {
    setenv("AUTOPAGER_KEEPER", "/nonexistent/autopager-keeper", 1);
    Config config = small_config(system_page_size(), kSmallBufferPages);
    config.keep_writes = true;
    Pager pager(config);
    for (int round = 0; round < 2; ++round) {
      auto* words = static_cast<std::uint64_t*>(pager.map(make_file_store(file.path()), kBytes));
      for (std::uint64_t i = 0; i < kWords; ++i) words[i] = new_word(i);
      if (!pager.unmap(words)) _exit(95);
    }
    report();
    _exit(0);
  });
  ASSERT_TRUE(outcome.wrote) << outcome.stderr_text;
  EXPECT_EQ(count_lines(outcome.stderr_text, "UMAP_KEEP_WRITES"), 1u) << outcome.stderr_text;
  EXPECT_EQ(count_lines(outcome.stderr_text, "/nonexistent/autopager-keeper"), 1u) << outcome.stderr_text;
  const std::vector<std::uint8_t> contents = file.contents();
  ASSERT_EQ(contents.size(), kBytes);
  std::uint64_t lost = 0;
  for (std::uint64_t i = 0; i < kWords; ++i) lost += word_at(contents, i) != new_word(i);
  EXPECT_EQ(lost, 0u);
}

// keep_writes=0: the pager's memory is the process's own again, and the keeper is not started.
TEST(KeptWrites, OffKeepsNothingThroughADeath) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  ScratchFile file(kBytes, 5);
  Outcome outcome = in_child([&](auto report) {
    Config config = small_config(system_page_size(), kSmallBufferPages);
    config.keep_writes = false;
    auto* pager = new Pager(config);
    auto* words = static_cast<std::uint64_t*>(pager->map(make_file_store(file.path()), kBytes));
    for (std::uint64_t i = 0; i < kWords; ++i) words[i] = new_word(i);
    report();
    die(Death::kKill);
  });
  ASSERT_TRUE(outcome.wrote) << outcome.stderr_text;
  const std::vector<std::uint8_t> contents = file.contents();
  std::uint64_t kept = 0;
  for (std::uint64_t i = kWords - kWords / 64; i < kWords; ++i) kept += word_at(contents, i) == new_word(i);
  EXPECT_LT(kept, kWords / 64) << "the last buffer's worth of writes cannot reach the file without a keeper";
}

}  // namespace
}  // namespace autopager::testing

#include <sys/mman.h>
#include <sys/wait.h>

#include "test_util.hpp"

namespace autopager {
namespace {

// A process without privilege (here: root dropping to nobody) cannot open a kernel-mode userfaultfd
// while vm.unprivileged_userfaultfd is 0; the pager must fall back to user-mode-only faults.
TEST(Unprivileged, FallsBackToUserModeOnlyFaults) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  if (geteuid() != 0) GTEST_SKIP() << "needs root to drop privileges to nobody";
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(10);
    try {
      const std::size_t page = system_page_size();
      Pager pager(testing::small_config(page, 4));
      auto store = make_memory_store(64 * page);
      auto* words = static_cast<std::uint64_t*>(pager.map(store, 64 * page));
      for (std::size_t i = 0; i < 64 * page / 8; i += 64) words[i] = i;
      for (std::size_t i = 0; i < 64 * page / 8; i += 64)
        if (words[i] != i) _exit(11);
      pager.unmap(words);
      _exit(0);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s\n", e.what());
      _exit(12);
    }
  }
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << "the child died of signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace autopager

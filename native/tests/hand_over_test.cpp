// Pager::hand_over: a region's writes reach its file and a kernel mapping of the file takes its place
// at the same addresses, while other threads keep reading and writing it.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "test_util.hpp"

// ThreadSanitizer takes mmap(MAP_FIXED) for a write of the whole range; the kernel replaces the
// mapping at once, which is what this test is about: the threads' accesses are not races with it.
#if defined(__SANITIZE_THREAD__)
extern "C" void AnnotateIgnoreReadsBegin(const char* file, int line);
extern "C" void AnnotateIgnoreReadsEnd(const char* file, int line);
extern "C" void AnnotateIgnoreWritesBegin(const char* file, int line);
extern "C" void AnnotateIgnoreWritesEnd(const char* file, int line);
#define IGNORE_ACCESSES_BEGIN() AnnotateIgnoreReadsBegin(__FILE__, __LINE__), AnnotateIgnoreWritesBegin(__FILE__, __LINE__)
#define IGNORE_ACCESSES_END() AnnotateIgnoreReadsEnd(__FILE__, __LINE__), AnnotateIgnoreWritesEnd(__FILE__, __LINE__)
#else
#define IGNORE_ACCESSES_BEGIN() ((void)0)
#define IGNORE_ACCESSES_END() ((void)0)
#endif

namespace autopager {
namespace {

using testing::pattern_byte;
using testing::ScratchFile;

TEST(HandOver, AKernelMappingOfTheFileTakesTheRegionsPlace) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::size_t page = system_page_size();
  const std::size_t pager_page = 4 * page;
  const std::size_t length = 64 * pager_page + 3 * page;  // the region's last pager page is partial
  ScratchFile file(length, 7);
  int fd = open(file.path().c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  Pager pager(testing::small_config(pager_page, 8));
  auto* base = static_cast<std::uint8_t*>(pager.map(make_file_store(file.path()), length));
  for (std::size_t p = 0; p < length / page; p += 3) base[p * page + 5] = static_cast<std::uint8_t>(p);

  // Readers and writers run on through the hand-over: a read sees the file's bytes or the writes, and
  // a write lands in the kernel's mapping or is written back before it.
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> wrong{0};
  std::atomic<std::uint64_t> passes{0};  // the writer's whole passes over the range
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      IGNORE_ACCESSES_BEGIN();
      for (std::size_t round = 0; !stop.load(); ++round) {
        for (std::size_t p = t; p < length / page; p += 2) {
          std::size_t at = p * page + 17;
          wrong += base[at] != pattern_byte(at, 7);
        }
      }
      IGNORE_ACCESSES_END();
    });
  }
  threads.emplace_back([&] {
    IGNORE_ACCESSES_BEGIN();
    while (!stop.load()) {
      for (std::size_t p = 1; p < length / page; p += 3) base[p * page + 9] = static_cast<std::uint8_t>(p + 1);
      ++passes;
    }
    IGNORE_ACCESSES_END();
  });

  const std::size_t span = (length + page - 1) / page * page;
  const std::size_t mapped = (length + pager_page - 1) / pager_page * pager_page;
  ASSERT_TRUE(pager.hand_over(base, [&] {
    if (mmap(base, span, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) != base) return false;
    return munmap(base + span, mapped - span) == 0;
  }));
  // Whole passes of the writer on the kernel's mapping (on a loaded machine it may not have made one yet).
  const std::uint64_t passes_at_hand_over = passes.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  while (passes.load() < passes_at_hand_over + 2) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  stop = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0u);
  EXPECT_EQ(pager.region_base(base), nullptr);
  EXPECT_EQ(pager.stats().resident_bytes, 0u);

  // The region's writes, the writer's, and the file's own bytes, now through the kernel's mapping.
  ASSERT_EQ(msync(base, span, MS_SYNC), 0);
  std::vector<std::uint8_t> bytes = file.contents();
  ASSERT_EQ(bytes.size(), length);
  std::uint64_t bad = 0;
  for (std::size_t i = 0; i < length; ++i) {
    std::size_t p = i / page;
    std::uint8_t expected = pattern_byte(i, 7);
    if (i % page == 5 && p % 3 == 0) expected = static_cast<std::uint8_t>(p);
    if (i % page == 9 && p % 3 == 1) expected = static_cast<std::uint8_t>(p + 1);
    bad += bytes[i] != expected || base[i] != expected;
  }
  EXPECT_EQ(bad, 0u);
  munmap(base, span);
  close(fd);
}

TEST(HandOver, WhenTheNewMappingFailsTheRangeIsUnmapped) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::size_t page = system_page_size();
  ScratchFile file(16 * page, 3);
  Pager pager(testing::small_config(page, 4));
  auto* base = static_cast<std::uint8_t*>(pager.map(make_file_store(file.path()), 16 * page));
  base[page] = 1;
  errno = 0;
  EXPECT_FALSE(pager.hand_over(base, [] {
    errno = ENOMEM;
    return false;
  }));
  EXPECT_EQ(errno, ENOMEM);
  EXPECT_EQ(pager.region_base(base), nullptr);
  EXPECT_EQ(file.contents()[page], 1);  // written back all the same
  EXPECT_FALSE(pager.hand_over(base, [] { return true; }));  // no longer a region
}

}  // namespace
}  // namespace autopager

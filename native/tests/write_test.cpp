#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <random>

#include "test_util.hpp"

namespace autopager {
namespace {

using testing::pattern_byte;
using testing::ScratchFile;
using testing::small_config;

// Writes a new value into every `stride`-th 8-byte word: first some at random, then all in order.
void scribble(std::uint64_t* words, std::uint64_t count, std::uint64_t stride, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (std::uint64_t n = 0; n < 20000; ++n) {
    std::uint64_t i = rng() % count;
    if (i % stride == 0) words[i] = i * 31 + seed;
  }
  for (std::uint64_t i = 0; i < count; i += stride) words[i] = i * 31 + seed;
}

std::uint64_t wrong_words(const std::vector<std::uint8_t>& file, std::uint64_t stride, std::uint64_t seed,
                          std::uint64_t pattern_seed) {
  std::uint64_t wrong = 0;
  const std::uint64_t count = file.size() / 8;
  for (std::uint64_t i = 0; i < count; ++i) {
    std::uint64_t got;
    std::memcpy(&got, file.data() + 8 * i, 8);
    std::uint64_t expected = 0;
    if (i % stride == 0) {
      expected = i * 31 + seed;
    } else {
      for (int b = 7; b >= 0; --b) expected = (expected << 8) | pattern_byte(8 * i + b, pattern_seed);
    }
    wrong += got != expected;
  }
  return wrong;
}

struct Case {
  std::size_t page_multiple;
  std::uint64_t buffer_pages;
  unsigned high, low;
  unsigned read_ahead = 0;  // the in-order pass then runs a read-ahead stream through the evictions
};

class Writes : public ::testing::TestWithParam<Case> {};

TEST_P(Writes, ReachTheFileAfterUnmapUnderEvictionPressure) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const Case c = GetParam();
  const std::size_t page = system_page_size() * c.page_multiple;
  const std::uint64_t size = 2048 * system_page_size();
  ScratchFile file(size, 7);
  Config config = small_config(page, c.buffer_pages);
  config.evict_high_water = c.high;
  config.evict_low_water = c.low;
  config.read_ahead = c.read_ahead;
  Pager pager(config);
  auto* words = static_cast<std::uint64_t*>(pager.map(make_file_store(file.path()), size));
  scribble(words, size / 8, 5, 42);
  Stats s = pager.stats();
  EXPECT_GT(s.evictions, 1000u / c.page_multiple);
  EXPECT_GT(s.write_backs, 0u);
  ASSERT_TRUE(pager.unmap(words));
  EXPECT_EQ(wrong_words(file.contents(), 5, 42, 7), 0u);
}

INSTANTIATE_TEST_SUITE_P(Pressure, Writes,
                         ::testing::Values(Case{1, 8, 90, 70}, Case{1, 2, 100, 0}, Case{4, 4, 50, 10},
                                           Case{1, 64, 100, 99}, Case{1, 16, 90, 70, 8}, Case{4, 8, 90, 70, 4}));

TEST(Writes, ReachTheFileAfterFlushAndStayResident) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::size_t page = system_page_size();
  const std::uint64_t size = 512 * page;
  ScratchFile file(size, 3);
  Pager pager(small_config(page, 64));
  auto* words = static_cast<std::uint64_t*>(pager.map(make_file_store(file.path()), size));
  scribble(words, size / 8, 3, 9);
  ASSERT_EQ(pager.flush(), 0);
  EXPECT_EQ(pager.stats().dirty_pages, 0u);
  EXPECT_EQ(wrong_words(file.contents(), 3, 9, 3), 0u);
  std::uint64_t faults = pager.stats().write_faults;
  words[(size / 8) - 3] = 77;  // a resident page, clean again: its next write faults once more
  // Twice where an evictor still at work after the flush took the page between the fault and its answer.
  EXPECT_GE(pager.stats().write_faults, faults + 1);
  EXPECT_LE(pager.stats().write_faults, faults + 2);
  ASSERT_EQ(pager.flush(words), 0);
  std::vector<std::uint8_t> after = file.contents();
  std::uint64_t last;
  std::memcpy(&last, after.data() + size - 24, 8);
  EXPECT_EQ(last, 77u);
  pager.unmap(words);
}

// A file store that records the largest write it was given.
class StoreRecordingWrites final : public Store {
 public:
  explicit StoreRecordingWrites(const std::string& path) : file_(make_file_store(path)) {}
  ssize_t read(void* dst, std::size_t n, std::uint64_t offset) override { return file_->read(dst, n, offset); }
  ssize_t write(const void* src, std::size_t n, std::uint64_t offset) override {
    std::uint64_t seen = largest_write.load();
    while (n > seen && !largest_write.compare_exchange_weak(seen, n)) {
    }
    return file_->write(src, n, offset);
  }
  std::uint64_t size() const override { return file_->size(); }
  std::atomic<std::uint64_t> largest_write{0};

 private:
  std::shared_ptr<Store> file_;
};

TEST(Writes, EvictionsWriteConsecutiveDirtyPagesWithOneWrite) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::size_t page = system_page_size();
  const std::uint64_t size = 1024 * page;
  ScratchFile file(size, 4);
  auto store = std::make_shared<StoreRecordingWrites>(file.path());
  Config config = small_config(page, 64);
  config.evict_high_water = 90;
  config.evict_low_water = 30;
  Pager pager(config);
  auto* words = static_cast<std::uint64_t*>(pager.map(store, size));
  for (std::uint64_t i = 0; i < size / 8; i += 3) words[i] = i * 31 + 6;
  EXPECT_GT(pager.stats().evictions, 900u);
  EXPECT_GT(store->largest_write.load(), 4 * page);
  ASSERT_TRUE(pager.unmap(words));
  EXPECT_EQ(wrong_words(file.contents(), 3, 6, 4), 0u);
}

// A sequential writer of every other page, with read-ahead on: the pages between them are read ahead of a
// write stream (or read first and then skipped), and only the pages written reach the file: write_backs and
// bytes_written count them and nothing else, at the system page and at a larger page, forward and backward,
// over pages not yet read (write faults on missing pages) and over pages read first (write-protect faults).
struct EveryOtherPage {
  std::size_t page_multiple;
  bool backward;
  bool read_first;
};

class WritesOfEveryOtherPage : public ::testing::TestWithParam<EveryOtherPage> {};

TEST_P(WritesOfEveryOtherPage, WriteBackOnlyThePagesWritten) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const EveryOtherPage c = GetParam();
  const std::size_t page = c.page_multiple * system_page_size();
  const std::uint64_t pages = 512;
  ScratchFile file(pages * page, 5);
  Config config = small_config(page, 2 * pages);  // every page stays resident
  config.read_ahead = 2;
  Pager pager(config);
  if (!pager.has_write_protect()) GTEST_SKIP() << "the kernel has no userfaultfd write-protect";
  auto* bytes = static_cast<std::uint8_t*>(pager.map(make_file_store(file.path()), pages * page));
  const auto written = [](std::size_t p) { return p % 2 == 0; };
  const auto value = [](std::size_t p) { return static_cast<std::uint8_t>(p * 13 + 1); };
  std::uint64_t wrong = 0;
  if (c.read_first)
    for (std::size_t i = 0; i < pages * page; i += page) wrong += bytes[i] != pattern_byte(i, 5);
  for (std::size_t i = 0; i < pages; ++i) {
    const std::size_t p = c.backward ? pages - 1 - i : i;
    if (written(p)) bytes[p * page + 1] = value(p);
  }
  EXPECT_EQ(wrong, 0u);
  ASSERT_EQ(pager.flush(), 0);
  const Stats s = pager.stats();
  EXPECT_EQ(s.evictions, 0u);
  EXPECT_GT(s.fills, pages / 2) << "the pages between the writes were read ahead: " << s.to_json();
  EXPECT_EQ(s.write_backs, pages / 2) << s.to_json();
  EXPECT_EQ(s.bytes_written, pages / 2 * page) << s.to_json();
  ASSERT_TRUE(pager.unmap(bytes));
  const std::vector<std::uint8_t> after = file.contents();
  ASSERT_EQ(after.size(), pages * page);
  std::uint64_t wrong_after = 0;
  for (std::size_t i = 0; i < after.size(); ++i) {
    const std::size_t p = i / page;
    wrong_after += after[i] != (i % page == 1 && written(p) ? value(p) : pattern_byte(i, 5));
  }
  EXPECT_EQ(wrong_after, 0u);
}

INSTANTIATE_TEST_SUITE_P(Pages, WritesOfEveryOtherPage,
                         ::testing::Values(EveryOtherPage{1, false, false}, EveryOtherPage{1, true, false},
                                           EveryOtherPage{1, false, true}, EveryOtherPage{1, true, true},
                                           EveryOtherPage{16, false, false}, EveryOtherPage{16, false, true}));

TEST(Writes, ReachTheFileAtANormalExitWithoutUnmap) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::size_t page = system_page_size();
  const std::uint64_t size = 1024 * page;
  ScratchFile file(size, 5);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto* pager = new Pager(small_config(page, 16));  // never destroyed, never unmapped
    auto* words = static_cast<std::uint64_t*>(pager->map(make_file_store(file.path()), size));
    scribble(words, size / 8, 7, 11);
    std::exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(wrong_words(file.contents(), 7, 11, 5), 0u);
}

TEST(Writes, AWriteFaultOnAMissingPageInstallsItWritable) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::size_t page = system_page_size();
  ScratchFile file(4 * page);
  Pager pager(small_config(page, 4));
  auto* bytes = static_cast<std::uint8_t*>(pager.map(make_file_store(file.path()), 4 * page));
  bytes[page + 1] = 0xAB;
  Stats s = pager.stats();
  EXPECT_EQ(s.write_faults, 1u);
  EXPECT_EQ(s.read_faults, 0u);
  EXPECT_EQ(bytes[page], pattern_byte(page, 1)) << "the rest of the page comes from the file";
  pager.unmap(bytes);
  EXPECT_EQ(file.contents()[page + 1], 0xAB);
}

// A discarded region's dirty pages never reach its store (resident ones nor those an evictor has in hand but not
// begun writing), its slots come back, and the pager serves the next region as before.
TEST(Writes, ADiscardedRegionWritesNothingAndGivesItsSlotsBack) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::size_t page = system_page_size();
  const std::uint64_t pages = 64;
  ScratchFile file(pages * page, 13);
  const std::vector<std::uint8_t> original = file.contents();
  for (const std::uint64_t buffer : {2 * pages, pages / 4}) {  // every page resident; most of them evicted first
    Pager pager(small_config(page, buffer));
    auto* bytes = static_cast<std::uint8_t*>(pager.map(make_file_store(file.path()), pages * page));
    for (std::uint64_t p = 0; p < pages; ++p) std::memset(bytes + p * page, 0x5A, page);
    const Stats written = pager.stats();
    EXPECT_GT(written.dirty_pages, 0u);
    ASSERT_TRUE(pager.discard(bytes));
    const Stats after = pager.stats();
    EXPECT_EQ(after.resident_bytes, 0u);
    EXPECT_EQ(after.dirty_pages, 0u);
    // With evictions, a write-back an evictor began before the discard may end after `written` was taken.
    if (buffer > pages) EXPECT_EQ(after.write_backs, written.write_backs) << "nothing written at the discard";
    usleep(50000);
    const Stats later = pager.stats();
    EXPECT_EQ(later.write_backs, after.write_backs) << "nothing written after the discard";
    EXPECT_EQ(later.resident_bytes, 0u) << "nothing of it comes back after the discard";
    EXPECT_EQ(later.dirty_pages, 0u);
    if (buffer > pages) EXPECT_EQ(file.contents(), original) << "the file as it was";
    auto* again = static_cast<std::uint8_t*>(pager.map(make_file_store(file.path()), pages * page));
    std::vector<std::uint8_t> seen(again, again + pages * page);
    EXPECT_EQ(seen, file.contents());
    ASSERT_TRUE(pager.unmap(again));
    errno = 0;
    EXPECT_FALSE(pager.discard(again));
    EXPECT_EQ(errno, EINVAL);
  }
}

}  // namespace
}  // namespace autopager

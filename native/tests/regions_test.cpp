#include <sys/mman.h>

#include <thread>

#include "test_util.hpp"

namespace autopager {
namespace {

using testing::pattern_byte;
using testing::ScratchFile;

TEST(Regions, SeveralRegionsShareOneBuffer) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::size_t page = system_page_size();
  const std::uint64_t pages = 256;
  const int kRegions = 4;
  std::vector<std::unique_ptr<ScratchFile>> files;
  Pager pager(testing::small_config(page, 32));
  std::vector<std::uint8_t*> bases;
  for (int r = 0; r < kRegions; ++r) {
    files.push_back(std::make_unique<ScratchFile>(pages * page + r * 1000, 100 + r));
    bases.push_back(static_cast<std::uint8_t*>(pager.map(make_file_store(files[r]->path()), pages * page + r * 1000)));
  }
  // Interleave: each thread walks one region, writing one byte a page, while the buffer holds 32 pages in all.
  std::vector<std::thread> threads;
  std::atomic<std::uint64_t> wrong{0};
  for (int r = 0; r < kRegions; ++r) {
    threads.emplace_back([&, r] {
      for (std::uint64_t p = 0; p < pages; ++p) {
        std::uint64_t off = p * page + 11;
        wrong += bases[r][off] != pattern_byte(off, 100 + r);
        bases[r][off] = static_cast<std::uint8_t>(r + p);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0u);
  EXPECT_LE(pager.stats().resident_bytes, 32 * page);
  for (int r = 0; r < kRegions; ++r) ASSERT_TRUE(pager.unmap(bases[r]));
  for (int r = 0; r < kRegions; ++r) {
    std::vector<std::uint8_t> bytes = files[r]->contents();
    ASSERT_EQ(bytes.size(), pages * page + r * 1000);
    std::uint64_t bad = 0;
    for (std::uint64_t i = 0; i < bytes.size(); ++i) {
      bool written = i % page == 11 && i / page < pages;
      std::uint8_t expected = written ? static_cast<std::uint8_t>(r + i / page) : pattern_byte(i, 100 + r);
      bad += bytes[i] != expected;
    }
    EXPECT_EQ(bad, 0u) << "region " << r;
  }
}

// At the defaults' page rule, a read-only region's fault reads a system page and a writable region's the buffer's
// page, both regions sharing the buffer by their bytes; a page size given is both regions'.
TEST(Regions, ReadOnlyRegionsTakeTheSmallPageAndWritableOnesTheLarge) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::size_t sys = system_page_size(), large = 64 * sys;
  ScratchFile a(256 * large, 1), b(256 * large, 2);
  for (bool given : {false, true}) {
    Config config = testing::small_config(large, 64);  // 64 large pages of buffer: neither file fits
    config.read_only_page_size = given ? 0 : sys;
    config.read_ahead = 0;
    config.read_around = 0;
    Pager pager(config);
    EXPECT_EQ(pager.stats().read_only_page_size, given ? large : sys);
    FileStoreOptions read_only;
    read_only.writable = false;
    auto* x = static_cast<const std::uint8_t*>(pager.map(make_file_store(a.path(), read_only), 256 * large, PROT_READ));
    auto* y = static_cast<std::uint8_t*>(pager.map(make_file_store(b.path()), 256 * large));
    EXPECT_EQ(x[large * 100 + 7], pattern_byte(large * 100 + 7, 1));
    EXPECT_EQ(pager.stats().bytes_read, given ? large : sys);
    EXPECT_EQ(y[large * 100 + 7], pattern_byte(large * 100 + 7, 2));
    EXPECT_EQ(pager.stats().bytes_read, (given ? large : sys) + large);
    EXPECT_EQ(pager.stats().resident_bytes, (given ? large : sys) + large);
    // Random pages of both, far more than the buffer: every byte right, the buffer's bytes never exceeded.
    std::uint64_t wrong = 0;
    for (std::uint64_t i = 0; i < 4000; ++i) {
      const std::uint64_t at = (i * 2654435761u) % (256 * large);
      wrong += x[at] != pattern_byte(at, 1);
      wrong += y[at] != pattern_byte(at, 2);
    }
    EXPECT_EQ(wrong, 0u);
    EXPECT_LE(pager.stats().peak_resident_bytes, config.buffer_bytes());
    EXPECT_TRUE(pager.unmap(const_cast<std::uint8_t*>(x)));
    EXPECT_TRUE(pager.unmap(y));
    EXPECT_EQ(pager.stats().resident_bytes, 0u);
  }
}

TEST(Regions, TwoPagersWithDifferentPageSizesAtOnce) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::size_t page = system_page_size();
  ScratchFile a(300 * page, 1), b(300 * page, 2);
  // Without read-ahead and read-around, so that each pager's fills count its own faults.
  Config small_pages = testing::small_config(page, 8);
  Config large_pages = testing::small_config(16 * page, 4);  // two resident pages and two fillers' read slots
  small_pages.read_ahead = large_pages.read_ahead = 0;
  small_pages.read_around = large_pages.read_around = 0;
  Pager small(small_pages);
  Pager large(large_pages);
  auto* x = static_cast<const std::uint8_t*>(small.map(make_file_store(a.path()), 300 * page, PROT_READ));
  auto* y = static_cast<const std::uint8_t*>(large.map(make_file_store(b.path()), 300 * page, PROT_READ));
  std::uint64_t wrong = 0;
  for (std::uint64_t i = 0; i < 300 * page; i += 61) {
    wrong += x[i] != pattern_byte(i, 1);
    wrong += y[i] != pattern_byte(i, 2);
  }
  EXPECT_EQ(wrong, 0u);
  EXPECT_LE(small.stats().fills, small.stats().read_faults) << "without read-ahead, only faults fill";
  EXPECT_GE(small.stats().fills, 300u);
  // One fill moves 16 small pages. In a buffer of two pages an evicted page may be filled again (a late
  // duplicate fault), so allow a few refills, far below the ~300 fills of 4 KiB pages.
  EXPECT_LE(large.stats().fills, 2 * (300u / 16 + 1));
}

TEST(Regions, UnmapOfAnUnknownAddressIsRefused) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  Pager pager(testing::small_config(system_page_size(), 4));
  int not_a_region = 0;
  EXPECT_FALSE(pager.unmap(&not_a_region));
}

TEST(Regions, ARegionLargerThanAFixedStoreIsRefused) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  Pager pager(testing::small_config(system_page_size(), 4));
  EXPECT_THROW(pager.map(make_memory_store(1000), 2000), std::invalid_argument);
  EXPECT_THROW(pager.map(make_memory_store(1000), 0), std::invalid_argument);
  ScratchFile file(4096);
  FileStoreOptions read_only;
  read_only.writable = false;
  EXPECT_THROW(pager.map(make_file_store(file.path(), read_only), 4096, PROT_READ | PROT_WRITE),
               std::invalid_argument);
}

}  // namespace
}  // namespace autopager

#include <sys/mman.h>

#include <iterator>

#include "fault_injection.hpp"
#include "page_memory.hpp"
#include "test_util.hpp"

namespace autopager {
namespace {

using testing::pattern_byte;
using testing::ScratchFile;
using testing::small_config;

class ReadFaults : public ::testing::TestWithParam<std::size_t> {};

// Every byte read through the pager equals the file's, for a file that does not end on a page
// boundary and a buffer far smaller than the file, read forwards and then backwards.
TEST_P(ReadFaults, MatchTheFileBytes) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::size_t page_size = GetParam();
  const std::uint64_t size = 8 * page_size * 16 + 12345;
  ScratchFile file(size, page_size);
  Pager pager(small_config(page_size, 16));
  FileStoreOptions options;
  options.writable = false;
  auto* bytes = static_cast<const std::uint8_t*>(pager.map(make_file_store(file.path(), options), size, PROT_READ));
  std::uint64_t wrong = 0;
  for (std::uint64_t i = 0; i < size; ++i) wrong += bytes[i] != pattern_byte(i, page_size);
  for (std::uint64_t i = size; i-- > 0;) wrong += bytes[i] != pattern_byte(i, page_size);
  EXPECT_EQ(wrong, 0u);
  Stats s = pager.stats();
  EXPECT_GT(s.evictions, 0u);
  EXPECT_EQ(s.write_backs, 0u);
  EXPECT_LE(s.resident_bytes, 16 * page_size);
  EXPECT_GE(s.peak_resident_bytes, s.resident_bytes);  // the buffer filled up before it evicted
  EXPECT_GT(s.peak_resident_bytes, 8 * page_size);
  EXPECT_LE(s.peak_resident_bytes, 16 * page_size);
  EXPECT_TRUE(pager.unmap(const_cast<std::uint8_t*>(bytes)));
  EXPECT_EQ(pager.stats().resident_bytes, 0u);
  EXPECT_EQ(pager.stats().peak_resident_bytes, s.peak_resident_bytes);  // a peak, not the current count
}

INSTANTIATE_TEST_SUITE_P(PageSizes, ReadFaults,
                         ::testing::Values(system_page_size(), 4 * system_page_size(), 16 * system_page_size(),
                                           256 * system_page_size()));

// A file of `pages` system pages, mapped read-only through a pager with a buffer as large and `read_ahead`.
struct ReadAheadMapping {
  ReadAheadMapping(std::size_t pages, unsigned read_ahead)
      : page(system_page_size()), file(pages * page), pager(configured(pages, read_ahead)) {
    bytes = static_cast<const std::uint8_t*>(pager.map(make_file_store(file.path()), pages * page, PROT_READ));
  }
  ~ReadAheadMapping() { pager.unmap(const_cast<std::uint8_t*>(bytes)); }
  static Config configured(std::size_t pages, unsigned read_ahead) {
    Config config = small_config(system_page_size(), pages);
    config.read_ahead = read_ahead;
    config.read_around = 0;  // the region fits: a fault that starts no stream would read a block around it
    return config;
  }
  // Waits for `fills` pages read, then long enough for any read beyond them to show.
  void settle(std::uint64_t fills) {
    for (int tries = 0; tries < 2000 && pager.stats().fills < fills; ++tries) usleep(1000);
    usleep(50000);
  }
  std::uint8_t byte(std::size_t i) const { return bytes[i]; }

  const std::size_t page;
  ScratchFile file;
  Pager pager;
  const std::uint8_t* bytes = nullptr;
};

// A stream's first fault reads nothing ahead. The fault on the next page shows a sequential scan: it reads
// read_ahead pages on, the window doubles (4 to 8 pages beyond that fault) and each completed read starts
// the next, until the window is read, and no further.
TEST(ReadFaults, ReadAheadStartsAtAForwardStreamsSecondFault) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  ReadAheadMapping m(256, 4);
  EXPECT_EQ(m.byte(0), testing::pattern_byte(0, 1));
  m.settle(1);
  EXPECT_EQ(m.pager.stats().fills, 1u) << "a stream's first fault reads nothing ahead";
  EXPECT_EQ(m.byte(1 * m.page), testing::pattern_byte(1 * m.page, 1));
  m.settle(10);
  Stats s = m.pager.stats();
  EXPECT_EQ(s.fills, 10u) << "pages 0 to 1 + 8";
  EXPECT_EQ(s.read_faults, 2u);
  for (std::size_t i = 0; i < 10 * m.page; ++i) ASSERT_EQ(m.byte(i), testing::pattern_byte(i, 1));
  EXPECT_EQ(m.pager.stats().read_faults, 2u) << "the scan up to the window's end must not fault";
  EXPECT_EQ(m.byte(10 * m.page), testing::pattern_byte(10 * m.page, 1));
  EXPECT_EQ(m.pager.stats().read_faults, 3u) << "page 10 lies beyond the window";
}

// A reverse scan: the fault on the page before a stream's first turns it backward, and read-ahead then runs
// down the region within the window (8 pages below that fault), and no further.
TEST(ReadFaults, ReadAheadStartsAtABackwardStreamsSecondFault) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  ReadAheadMapping m(256, 4);
  EXPECT_EQ(m.byte(200 * m.page), testing::pattern_byte(200 * m.page, 1));
  m.settle(1);
  EXPECT_EQ(m.pager.stats().fills, 1u) << "a stream's first fault reads nothing ahead";
  EXPECT_EQ(m.byte(199 * m.page), testing::pattern_byte(199 * m.page, 1));
  m.settle(10);
  Stats s = m.pager.stats();
  EXPECT_EQ(s.fills, 10u) << "pages 191 to 200";
  EXPECT_EQ(s.read_faults, 2u);
  for (std::size_t i = 200 * m.page; i-- > 191 * m.page;) ASSERT_EQ(m.byte(i), testing::pattern_byte(i, 1));
  EXPECT_EQ(m.pager.stats().read_faults, 2u) << "the reverse scan down to the window's end must not fault";
  EXPECT_EQ(m.byte(190 * m.page), testing::pattern_byte(190 * m.page, 1));
  EXPECT_EQ(m.pager.stats().read_faults, 3u) << "page 190 lies beyond the window";
}

// Faults farther apart than read_ahead + 1 pages, more of them than the streams followed at once: each
// starts a stream, and none reads anything ahead.
TEST(ReadFaults, RandomFaultsReadNothingAhead) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  ReadAheadMapping m(256, 4);
  const std::size_t pages[] = {0, 40, 80, 120, 160, 200, 20, 60, 100, 140, 180, 220, 10, 250, 30};
  for (std::size_t page : pages) EXPECT_EQ(m.byte(page * m.page), testing::pattern_byte(page * m.page, 1));
  m.settle(std::size(pages));
  Stats s = m.pager.stats();
  EXPECT_EQ(s.read_faults, std::size(pages));
  EXPECT_EQ(s.fills, std::size(pages)) << "random faults read only their own pages";
}

// A scan of small pages: as its window grows, read-ahead reads them in runs, one request a run, not one a
// page. (The tests above see only single pages: their streams' windows stay within read_ahead runs of one.)
TEST(ReadFaults, ReadAheadReadsSmallPagesARunARequest) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::size_t page = system_page_size(), pages = 4096;
  ScratchFile file(pages * page);
  Config config = small_config(page, 1024);
  config.read_ahead = 2;
  Pager pager(config);
  const std::uint64_t run = pager.stats().read_ahead_run_bytes / page;
  ASSERT_GE(run, 16u);
  auto store = std::make_shared<testing::FaultyFileStore>(file.path(), true);
  auto* bytes = static_cast<const std::uint8_t*>(pager.map(store, pages * page, PROT_READ));
  std::uint64_t wrong = 0;
  for (std::size_t i = 0; i < pages * page; i += 64) wrong += bytes[i] != testing::pattern_byte(i, 1);
  EXPECT_EQ(wrong, 0u);
  const Stats s = pager.stats();
  // Every page read once, but for a read-ahead run that a lagging filler reads only once the scan's newest fault
  // lies within it (ThreadSanitizer under ctest -j2): `passed` keeps such a run, and its pages behind the fault,
  // touched already and possibly evicted since, are read again (7 pages of 4096, once in CI). At most a run's.
  EXPECT_GE(s.fills, pages) << s.to_json();
  EXPECT_LE(s.fills, pages + run) << s.to_json();
  EXPECT_EQ(s.bytes_read, s.fills * page);
  // The faults' own reads (a page each) and runs, some cut short by a page a fault brought in first: a
  // few times pages / run requests, where a page a request would be `pages`. Mostly 180-600; a scan that
  // outruns its read-ahead (the window is an eighth of the buffer) makes more of the runs short, up to ~1,050
  // requests in 110 runs here.
  EXPECT_LT(store->ring_reads(), pages / 2) << s.to_json();
  EXPECT_LT(s.read_faults, pages / 4) << s.to_json();
  EXPECT_TRUE(pager.unmap(const_cast<std::uint8_t*>(bytes)));
}

// `config` with the defaults' read-ahead and read-around.
Config reading_as_the_defaults(Config config) {
  const Config defaults = Config::defaults();
  config.read_ahead = defaults.read_ahead;
  config.read_ahead_run = defaults.read_ahead_run;
  config.read_around = defaults.read_around;
  return config;
}

// At the default page, read-ahead and read-around, the unit a fault reads follows the faults. In a file larger
// than the buffer, random faults far apart (in the second half of the file) read their own page each, one request
// a page; a scan of the first half then reads runs of many pages a request.
TEST(ReadFaults, AtTheSystemPageARandomFaultReadsAPageAndAScanLargeRuns) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::size_t page = system_page_size();
  const std::uint64_t pages = (std::uint64_t{64} << 20) / page;
  ScratchFile file(pages * page);
  Config config = reading_as_the_defaults(small_config(page, pages / 4));
  Pager pager(config);
  ASSERT_GE(pager.stats().read_ahead_run_bytes, std::uint64_t{1} << 20);
  auto* bytes = static_cast<const std::uint8_t*>(pager.map(make_file_store(file.path()), pages * page, PROT_READ));
  std::uint64_t wrong = 0;
  constexpr std::uint64_t kRandom = 300;
  for (std::uint64_t i = 0; i < kRandom; ++i) {
    const std::uint64_t at = (pages / 2 + (i * 2654435761u) % (pages / 2)) * page + i % page;
    wrong += bytes[at] != pattern_byte(at, 1);
  }
  const Stats random = pager.stats();
  EXPECT_EQ(random.read_faults, kRandom) << random.to_json();
  EXPECT_EQ(random.reads, random.fills) << random.to_json();
  EXPECT_LE(random.fills, kRandom + kRandom / 10) << "random faults read about their own pages: " << random.to_json();
  for (std::uint64_t i = 0; i < pages / 2 * page; i += 512) wrong += bytes[i] != pattern_byte(i, 1);
  EXPECT_EQ(wrong, 0u);
  const Stats scan = pager.stats();
  const std::uint64_t scan_reads = scan.reads - random.reads;
  const std::uint64_t scan_bytes = scan.bytes_read - random.bytes_read;
  EXPECT_GE(scan_bytes, pages / 2 * page);
  // Eight pages a read at least: a scan's reads average hundreds of KiB, but one that outruns its read-ahead
  // faults on pages of its own (a page a read, that split the runs), the more so on a busy machine (down to
  // 82 KiB in 300 runs, half of them beside two busy loops).
  EXPECT_GE(scan_bytes / scan_reads, std::uint64_t{8} * page) << "the scan's reads: " << scan.to_json();
  // Its faults continue its stream: none reads a block as a search closing in would (converging_faults.hpp),
  // which would cut the stream's runs short.
  EXPECT_EQ(scan.read_around_pages, random.read_around_pages) << scan.to_json();
  EXPECT_TRUE(pager.unmap(const_cast<std::uint8_t*>(bytes)));
}

// A file that fits in the buffer is read in large blocks around random faults (read_around.hpp): a random walk
// over it (a BFS over a graph in memory) faults a few times a block, not once a page, and sees every byte.
void expect_read_in_blocks_around_random_faults(const Config& config, std::uint64_t pages) {
  const std::size_t page = system_page_size();
  ASSERT_GE(config.read_around, std::size_t{1} << 20);
  ScratchFile file(pages * page);
  Pager pager(config);
  auto* bytes = static_cast<const std::uint8_t*>(pager.map(make_file_store(file.path()), pages * page, PROT_READ));
  std::uint64_t wrong = 0;
  for (std::uint64_t i = 0; i < pages; ++i) {
    const std::uint64_t at = (i * 2654435761u) % pages * page + i % page;  // every page once, in random order
    wrong += bytes[at] != pattern_byte(at, 1);
  }
  EXPECT_EQ(wrong, 0u);
  const Stats s = pager.stats();
  EXPECT_EQ(s.evictions, 0u) << s.to_json();
  EXPECT_EQ(s.fills, pages) << s.to_json();
  EXPECT_EQ(s.bytes_read, pages * page) << s.to_json();
  // A block of read_around pages a fault, one request a run of read_ahead_run: some faults fall in a block
  // already being read and wait for its run.
  EXPECT_LT(s.read_faults, pages / 16) << s.to_json();
  EXPECT_GT(s.read_around_pages, pages / 2) << s.to_json();
  EXPECT_TRUE(pager.unmap(const_cast<std::uint8_t*>(bytes)));
}

TEST(ReadFaults, AFileThatFitsIsReadInBlocksAroundRandomFaults) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::uint64_t pages = (std::uint64_t{32} << 20) / system_page_size();
  expect_read_in_blocks_around_random_faults(reading_as_the_defaults(small_config(system_page_size(), 2 * pages)),
                                             pages);
}

// The same with a file of the buffer's size: blocks go on to the last absent pages (Buffer::has_room), where they
// once stopped a block short of the full buffer and every fault in the holes left between blocks read its own page.
TEST(ReadFaults, AFileOfTheBuffersSizeIsReadInBlocksToItsLastPages) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::size_t page = system_page_size();
  const Config config = reading_as_the_defaults(small_config(page, (std::uint64_t{32} << 20) / page));
  const PageMemory plan = plan_page_memory(config);
  ASSERT_EQ(plan.unit, page);
  expect_read_in_blocks_around_random_faults(config, plan.buffer_units);
}

// A file a little larger than the buffer, read in random order: while the buffer fills for the first time a fault
// reads the block around it (it evicts nothing then), and once the buffer has filled, its own page (read_around.hpp).
TEST(ReadFaults, AFileALittleLargerThanTheBufferFillsItInBlocksThenReadsAPageAFault) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::size_t page = system_page_size();
  const std::uint64_t pages = (std::uint64_t{16} << 20) / page;
  ScratchFile file(pages * page);
  Pager pager(reading_as_the_defaults(small_config(page, pages - pages / 32)));
  auto* bytes = static_cast<const std::uint8_t*>(pager.map(make_file_store(file.path()), pages * page, PROT_READ));
  std::uint64_t wrong = 0, i = 0;
  auto touch = [&] {
    const std::uint64_t at = (i * 2654435761u) % pages * page + i % page;  // every page once, in random order
    wrong += bytes[at] != pattern_byte(at, 1);
    ++i;
  };
  while (i < pages && pager.stats().evictions == 0) touch();
  const Stats filled = pager.stats();
  EXPECT_GT(filled.evictions, 0u) << filled.to_json();
  // Most of what filled it came in blocks (how many faults that took depends on how many landed on pages of a block
  // still in flight).
  EXPECT_GT(filled.read_around_pages, filled.fills / 2) << "the buffer filled in blocks: " << filled.to_json();
  while (i < pages) touch();
  EXPECT_EQ(wrong, 0u);
  const Stats after = pager.stats();
  EXPECT_GT(after.read_faults, filled.read_faults) << after.to_json();
  EXPECT_EQ(after.read_around_pages, filled.read_around_pages) << "no block once filled: " << after.to_json();
  EXPECT_TRUE(pager.unmap(const_cast<std::uint8_t*>(bytes)));
}

// A file of the buffer's size, more than the buffer keeps for pages beside the fillers' read slots: the slots give
// their memory back after each read (Buffer::slots_transient) and the pages take the whole buffer. Read in runs,
// then at random, then again, every page is read once and none is ever evicted.
TEST(ReadFaults, AFileOfTheBuffersSizeIsReadOnceAndKeptWhole) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::size_t page = system_page_size();
  const Config config = reading_as_the_defaults(small_config(page, (std::uint64_t{16} << 20) / page, 4));
  const PageMemory plan = plan_page_memory(config);
  ASSERT_EQ(plan.unit, page);
  ASSERT_GT(plan.buffer_units, plan.resident_units);
  const std::uint64_t pages = plan.buffer_units;
  ScratchFile file(pages * page);
  Pager pager(config);
  auto* bytes = static_cast<const std::uint8_t*>(pager.map(make_file_store(file.path()), pages * page, PROT_READ));
  std::uint64_t wrong = 0;
  for (std::uint64_t at = 0; at < pages * page / 2; at += page) wrong += bytes[at] != pattern_byte(at, 1);
  for (int pass = 0; pass < 2; ++pass) {
    for (std::uint64_t i = 0; i < pages; ++i) {
      const std::uint64_t at = (i * 2654435761u) % pages * page + i % page;  // every page once, in random order
      wrong += bytes[at] != pattern_byte(at, 1);
    }
  }
  EXPECT_EQ(wrong, 0u);
  const Stats s = pager.stats();
  EXPECT_EQ(s.evictions, 0u) << s.to_json();
  EXPECT_EQ(s.fills, pages) << s.to_json();
  EXPECT_EQ(s.bytes_read, pages * page) << s.to_json();
  EXPECT_EQ(s.peak_resident_bytes, pages * page) << s.to_json();
  EXPECT_TRUE(pager.unmap(const_cast<std::uint8_t*>(bytes)));
}

// STREAM's pattern in a buffer far smaller than its arrays: two arrays read and a third written, a page of each
// in turn. The three streams' read-ahead windows together stay within what eviction leaves free, so each page is
// read about once; with a window of a quarter of the buffer each, read-ahead evicted its own pages before the
// program reached them, and the arrays were read nearly twice.
TEST(ReadFaults, InterleavedStreamsInASmallBufferReadTheirDataOnce) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::size_t page = 4 * system_page_size();
  const std::uint64_t buffer = 1024, array = 2048 * page;
  ScratchFile file(3 * array);
  Pager pager(small_config(page, buffer));
  auto* bytes = static_cast<std::uint8_t*>(pager.map(make_file_store(file.path()), 3 * array));
  std::uint64_t wrong = 0;
  for (std::uint64_t at = 0; at < array; at += 512) {
    wrong += bytes[at] != pattern_byte(at, 1);
    wrong += bytes[array + at] != pattern_byte(array + at, 1);
    bytes[2 * array + at] = bytes[at] ^ bytes[array + at];
  }
  EXPECT_EQ(wrong, 0u);
  const Stats s = pager.stats();
  EXPECT_LE(s.bytes_read, 3 * array + 3 * array / 10) << s.to_json();
  EXPECT_TRUE(pager.unmap(bytes));
}

// A loop over four times the buffer: under plain FIFO every page is evicted before the loop comes round
// again; with evict_retain the first pages filled stay, and the second round finds them resident.
TEST(Eviction, RetainedPagesOutliveALoopOverMoreThanTheBuffer) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::size_t page = system_page_size();
  const std::size_t buffer = 32, pages = 4 * buffer;
  ScratchFile file(pages * page);
  for (unsigned retain : {0u, 50u}) {
    Config config = small_config(page, buffer);
    config.read_ahead = 0;
    config.read_around = 0;
    config.evict_retain = retain;
    Pager pager(config);
    auto* bytes = static_cast<const std::uint8_t*>(pager.map(make_file_store(file.path()), pages * page, PROT_READ));
    std::uint64_t wrong = 0;
    for (int round = 0; round < 2; ++round)
      for (std::size_t p = 0; p < pages; ++p) wrong += bytes[p * page] != pattern_byte(p * page, 1);
    EXPECT_EQ(wrong, 0u) << "evict_retain " << retain;
    const std::uint64_t read_again = pager.stats().fills - pages;
    if (retain == 0)
      EXPECT_EQ(read_again, pages) << "FIFO reads every page of the second round again";
    else
      EXPECT_LE(read_again, pages - buffer / 4) << "at least a quarter of the buffer's pages stayed";
    EXPECT_TRUE(pager.unmap(const_cast<std::uint8_t*>(bytes)));
  }
}

// A few pages read over and over among a scan far larger than the buffer: FIFO evicts them in fill order and
// reads them again and again; every other policy notices their refaults and keeps them longer.
TEST(Eviction, PoliciesThatSeeRefaultsKeepHotPagesThroughAScan) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::size_t page = system_page_size();
  const std::size_t buffer = 32, hot = 4, scanned = 16 * buffer;
  ScratchFile file((hot + scanned) * page);
  std::uint64_t fifo_fills = 0;
  for (Eviction eviction : {Eviction::kFifo, Eviction::kHotFifo, Eviction::kS3Fifo, Eviction::kClock}) {
    Config config = small_config(page, buffer);
    config.read_ahead = 0;
    config.eviction = eviction;
    Pager pager(config);
    auto* bytes =
        static_cast<const std::uint8_t*>(pager.map(make_file_store(file.path()), (hot + scanned) * page, PROT_READ));
    std::uint64_t wrong = 0;
    for (std::size_t p = hot; p < hot + scanned; ++p) {
      wrong += bytes[p * page] != pattern_byte(p * page, 1);
      for (std::size_t h = 0; h < hot; ++h) wrong += bytes[h * page + p] != pattern_byte(h * page + p, 1);
    }
    EXPECT_EQ(wrong, 0u) << eviction_name(eviction);
    const Stats stats = pager.stats();
    if (eviction == Eviction::kFifo) {
      fifo_fills = stats.fills;
      EXPECT_EQ(stats.policy_refaults, 0u);
    } else {
      EXPECT_LT(stats.fills, fifo_fills) << eviction_name(eviction);
      EXPECT_GT(stats.policy_refaults, 0u) << eviction_name(eviction);
    }
    std::printf("%s: %llu fills, %llu refaults, %llu promotions, %llu second chances, %llu demotions\n",
                eviction_name(eviction), static_cast<unsigned long long>(stats.fills),
                static_cast<unsigned long long>(stats.policy_refaults),
                static_cast<unsigned long long>(stats.policy_promotions),
                static_cast<unsigned long long>(stats.policy_second_chances),
                static_cast<unsigned long long>(stats.policy_demotions));
    EXPECT_TRUE(pager.unmap(const_cast<std::uint8_t*>(bytes)));
  }
}

TEST(ReadFaults, PrefetchBringsInListedPagesAsynchronously) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::size_t page = system_page_size();
  ScratchFile file(32 * page);
  Pager pager(small_config(page, 32));
  auto* bytes = static_cast<std::uint8_t*>(pager.map(make_file_store(file.path()), 32 * page, PROT_READ));
  void* wanted[] = {bytes + 5 * page, bytes + 15 * page + 17, bytes + 30 * page};
  pager.prefetch(wanted, 3);
  for (int tries = 0; tries < 2000 && pager.stats().fills < 3; ++tries) usleep(1000);
  EXPECT_EQ(pager.stats().fills, 3u);
  EXPECT_EQ(bytes[5 * page], testing::pattern_byte(5 * page, 1));
  EXPECT_EQ(bytes[15 * page + 17], testing::pattern_byte(15 * page + 17, 1));
  EXPECT_EQ(bytes[30 * page + 9], testing::pattern_byte(30 * page + 9, 1));
  EXPECT_EQ(pager.stats().read_faults, 0u);
  pager.unmap(bytes);
}

}  // namespace
}  // namespace autopager

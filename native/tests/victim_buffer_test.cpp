// The victim buffer under the hot-page FIFO (hotfifo): the pages it evicts last keep their contents in memory,
// and a fault on one installs it from there without a read, dirty victims written back first; pages of both
// sizes a pager has (read-only regions' and writable ones') alike.
#include <sys/mman.h>

#include <memory>
#include <vector>

#include "fault_injection.hpp"
#include "test_util.hpp"

namespace autopager {
namespace {

using testing::pattern_byte;
using testing::ScratchFile;
using testing::small_config;

// The byte a scan writes at the start of page `page`.
std::uint8_t written_byte(std::uint64_t page) { return static_cast<std::uint8_t>(0xA5 ^ page); }

struct VictimCase {
  const char* name;
  bool writable;          // written while scanned: its victims were dirty
  bool without_move;      // kept by a copy (UFFDIO_MOVE turned off) rather than moved out
};

class VictimBuffer : public ::testing::TestWithParam<VictimCase> {};

TEST_P(VictimBuffer, AFaultOnAVictimReadsNothingAndSeesItsData) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const VictimCase c = GetParam();
  std::unique_ptr<testing::ScopedEnv> no_move;
  if (c.without_move) no_move = std::make_unique<testing::ScopedEnv>("AUTOPAGER_DISABLE_UFFD_FEATURES", "move");
  const std::size_t page = system_page_size();
  // A page more than the buffer (a quarter of which is the fillers' read slots; a file of its size would take their
  // share and evict nothing, Buffer::slots_transient): its evictions, all parked, stay within the window after
  // which victims never hit would park only one batch in VictimAdmission::kSampleEvery.
  const std::uint64_t pages = 256;
  ScratchFile file(pages * page, 3);
  Config config = small_config(page, pages - 1);
  config.eviction = Eviction::kHotFifo;
  config.read_ahead = 0;
  config.read_around = 0;  // a page a fault: the scan's evictions in fill order
  config.evictors = 1;  // batches one after another: the page evicted last is in the latest batch's victims
  // Evictors stop within 15% of the buffer: fewer pages than the victim buffer holds (a quarter of the
  // hot-page FIFO's), so that the page evicted last before the scan ended is still a victim afterwards.
  config.evict_high_water = 95;
  config.evict_low_water = 85;
  {
    Pager pager(config);
    FileStoreOptions options;
    options.writable = c.writable;
    auto* bytes = static_cast<std::uint8_t*>(
        pager.map(make_file_store(file.path(), options), pages * page, c.writable ? PROT_READ | PROT_WRITE : PROT_READ));
    std::uint64_t wrong = 0;
    for (std::uint64_t p = 0; p < pages; ++p) {
      if (c.writable) bytes[p * page] = written_byte(p);  // first, so that a page takes one fault
      wrong += bytes[p * page + 1] != pattern_byte(p * page + 1, 3);
    }
    EXPECT_EQ(wrong, 0u);
    EXPECT_EQ(pager.stats().victim_hits, 0u) << "a scan faults on no page twice";

    // Evicted in fill order: the pages before the first one mapped are gone, the last of them a victim.
    std::vector<unsigned char> mapped(pages);
    ASSERT_EQ(mincore(bytes, pages * page, mapped.data()), 0);
    std::uint64_t first_mapped = 0;
    while (first_mapped < pages && !(mapped[first_mapped] & 1)) ++first_mapped;
    ASSERT_GT(first_mapped, 0u);
    ASSERT_LT(first_mapped, pages);
    const std::uint64_t victim = first_mapped - 1;

    const Stats before = pager.stats();
    const std::uint8_t expected_first = c.writable ? written_byte(victim) : pattern_byte(victim * page, 3);
    EXPECT_EQ(bytes[victim * page], expected_first);
    for (std::uint64_t i = 1; i < page; ++i) wrong += bytes[victim * page + i] != pattern_byte(victim * page + i, 3);
    EXPECT_EQ(wrong, 0u);
    const Stats after = pager.stats();
    EXPECT_EQ(after.bytes_read, before.bytes_read) << "the victim came back without a read";
    EXPECT_EQ(after.victim_hits, before.victim_hits + 1) << after.fills << " fills, " << before.fills << " before";
    if (c.writable) {
      EXPECT_GE(after.write_backs, first_mapped) << "dirty pages are written back before they become victims";
      bytes[victim * page + 1] = 0x5A;  // written again: dirty once more, written back at unmap
    }
    std::printf("%s: %llu evictions, %llu write-backs, victim hit on page %llu\n", c.name,
                static_cast<unsigned long long>(after.evictions), static_cast<unsigned long long>(after.write_backs),
                static_cast<unsigned long long>(victim));
    EXPECT_TRUE(pager.unmap(bytes));
    if (!c.writable) return;
    const std::vector<std::uint8_t> contents = file.contents();
    ASSERT_EQ(contents.size(), pages * page);
    for (std::uint64_t p = 0; p < pages; ++p) {
      wrong += contents[p * page] != written_byte(p);
      wrong += contents[p * page + 1] != (p == victim ? 0x5A : pattern_byte(p * page + 1, 3));
    }
    EXPECT_EQ(wrong, 0u) << "every write reached the file";
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, VictimBuffer,
                         ::testing::Values(VictimCase{"ReadOnlyCopied", false, false},
                                           VictimCase{"DirtyMoved", true, false},
                                           VictimCase{"DirtyCopied", true, true}),
                         [](const ::testing::TestParamInfo<VictimCase>& info) { return info.param.name; });

// The latest page evicted of a region the pager evicts from in fill order: the one before its first mapped page.
std::uint64_t last_evicted(const void* base, std::uint64_t pages, std::size_t page_size) {
  std::vector<unsigned char> mapped(pages * page_size / system_page_size());
  EXPECT_EQ(mincore(const_cast<void*>(base), pages * page_size, mapped.data()), 0);
  std::uint64_t first_mapped = 0;
  while (first_mapped < pages && !(mapped[first_mapped * page_size / system_page_size()] & 1)) ++first_mapped;
  EXPECT_GT(first_mapped, 0u);
  EXPECT_LT(first_mapped, pages);
  return first_mapped - 1;
}

// The defaults' two page sizes: a read-only region of system pages beside a writable one of 16 times that, read
// and written in turn so that each loses its first pages; the last evicted of each is a victim, each holding its
// own page's share of the buffer, and comes back without a read.
TEST(VictimBufferOfTwoPageSizes, ServesAReadOnlySmallPageAndAWritableLargeOne) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::size_t small = system_page_size(), large = 16 * small;
  // Each region about half the buffer's size, together a large page more: their evictions within VictimAdmission's
  // window, as above.
  const std::uint64_t small_pages = 512, large_pages = 32;
  ScratchFile read_only(small_pages * small, 3), writable(large_pages * large, 5);
  Config config = small_config(large, 63);
  config.read_only_page_size = small;
  config.eviction = Eviction::kHotFifo;
  config.read_ahead = 0;
  config.read_around = 0;
  config.evictors = 1;
  config.evict_high_water = 95;  // as above: batches of a tenth of the buffer, within the victims' quarter
  config.evict_low_water = 85;
  Pager pager(config);
  const auto* reads = static_cast<const std::uint8_t*>(
      pager.map(make_file_store(read_only.path(), FileStoreOptions{}), small_pages * small, PROT_READ));
  FileStoreOptions options;
  options.writable = true;
  auto* writes = static_cast<std::uint8_t*>(
      pager.map(make_file_store(writable.path(), options), large_pages * large, PROT_READ | PROT_WRITE));
  std::uint64_t wrong = 0;
  for (std::uint64_t l = 0; l < large_pages; ++l) {
    writes[l * large] = written_byte(l);
    for (std::uint64_t s = l * 16; s < (l + 1) * 16; ++s) wrong += reads[s * small + 1] != pattern_byte(s * small + 1, 3);
  }
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(pager.stats().victim_hits, 0u);
  EXPECT_LE(pager.stats().peak_resident_bytes, config.buffer_bytes()) << "victims hold their pages' share";

  const std::uint64_t small_victim = last_evicted(reads, small_pages, small);
  const std::uint64_t large_victim = last_evicted(writes, large_pages, large);
  const Stats before = pager.stats();
  for (std::uint64_t i = 0; i < small; ++i)
    wrong += reads[small_victim * small + i] != pattern_byte(small_victim * small + i, 3);
  wrong += writes[large_victim * large] != written_byte(large_victim);
  for (std::uint64_t i = 1; i < large; ++i)
    wrong += writes[large_victim * large + i] != pattern_byte(large_victim * large + i, 5);
  EXPECT_EQ(wrong, 0u);
  const Stats after = pager.stats();
  EXPECT_EQ(after.bytes_read, before.bytes_read) << "both came back without a read";
  EXPECT_EQ(after.victim_hits, before.victim_hits + 2) << "read-only page " << small_victim << ", writable page "
                                                       << large_victim;
  EXPECT_TRUE(pager.unmap(const_cast<std::uint8_t*>(reads)));
  EXPECT_TRUE(pager.unmap(writes));
  EXPECT_EQ(pager.stats().resident_bytes, 0u) << "unmap dropped the victims with the pages";
  const std::vector<std::uint8_t> contents = writable.contents();
  for (std::uint64_t l = 0; l < large_pages; ++l) wrong += contents[l * large] != written_byte(l);
  EXPECT_EQ(wrong, 0u) << "every write reached the file";
}

}  // namespace
}  // namespace autopager

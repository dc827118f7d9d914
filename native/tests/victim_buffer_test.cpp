// The victim buffer under the hot-page FIFO (hotfifo): the pages it evicts last keep their contents in memory,
// and a fault on one installs it from there without a read, dirty victims written back first.
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
  const std::uint64_t pages = 1024;
  ScratchFile file(pages * page, 3);
  Config config = small_config(page, 256);
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

}  // namespace
}  // namespace autopager

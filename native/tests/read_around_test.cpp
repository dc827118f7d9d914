// The read-around decision alone (read_around.hpp): programs' faults in, the blocks read around them out. A
// simulated program faults only on pages no earlier block brought in, as it would under the pager.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "read_ahead.hpp"
#include "read_around.hpp"

namespace autopager {
namespace {

constexpr std::size_t kPage = 4096;
constexpr std::uint64_t kMostPages = 1024;  // 4 MiB of 4 KiB pages
constexpr std::uint64_t kRegionPages = std::uint64_t{1} << 20;

// The program's view: what is resident, and what a fault reads.
class Program {
 public:
  explicit Program(bool fits) : around_(kMostPages, kPage), fits_(fits) {}

  // Touches `page`: a fault, with its block read, unless it is resident. Returns whether it faulted.
  bool touch(std::uint64_t page, bool isolated = true) {
    if (resident_.count(page) != 0) return false;
    const ReadAround::Block block = around_.fault(page, kRegionPages, isolated, fits_);
    EXPECT_LE(block.first, page);
    EXPECT_GT(block.first + block.count, page);
    EXPECT_LE(block.first + block.count, kRegionPages);
    for (std::uint64_t p = block.first; p < block.first + block.count; ++p) resident_.insert(p);
    pages_read_ += block.count;
    ++faults_;
    return true;
  }
  // Forgets what is resident: the pages evicted since (a buffer far smaller than the data).
  void evict_all() { resident_.clear(); }

  ReadAround& around() { return around_; }
  std::uint64_t faults() const { return faults_; }
  std::uint64_t pages_read() const { return pages_read_; }

 private:
  ReadAround around_;
  const bool fits_;
  std::set<std::uint64_t> resident_;
  std::uint64_t faults_ = 0;
  std::uint64_t pages_read_ = 0;
};

// A binary search's last probes: from a random page, halving distances down to the next page.
void binary_search_tail(Program& program, std::mt19937_64& random) {
  std::uint64_t page = 64 + random() % (kRegionPages - 128);
  for (std::uint64_t step = 32; step >= 1; step /= 2) {
    program.touch(page);
    page += (random() & 1) ? step : -step;
  }
  program.touch(page);
}

TEST(ReadAroundDecision, ARegionThatFitsReadsTheMostAroundEachIsolatedFault) {
  ReadAround around(kMostPages, kPage);
  const ReadAround::Block middle = around.fault(5000, kRegionPages, true, true);
  EXPECT_EQ(middle.count, kMostPages);
  EXPECT_EQ(middle.first, 5000 - kMostPages / 2);
  const ReadAround::Block start = around.fault(3, kRegionPages, true, true);
  EXPECT_EQ(start.first, 0u);
  EXPECT_EQ(start.count, kMostPages);
  const ReadAround::Block end = around.fault(kRegionPages - 2, kRegionPages, true, true);
  EXPECT_EQ(end.first + end.count, kRegionPages);
  EXPECT_EQ(end.count, kMostPages);
  const ReadAround::Block small = around.fault(7, 100, true, true);  // a region smaller than the block
  EXPECT_EQ(small.first, 0u);
  EXPECT_EQ(small.count, 100u);
}

TEST(ReadAroundDecision, AFaultThatContinuesAStreamReadsOnlyItsPage) {
  ReadAround around(kMostPages, kPage);
  const ReadAround::Block block = around.fault(5000, kRegionPages, false, true);
  EXPECT_EQ(block.first, 5000u);
  EXPECT_EQ(block.count, 1u);
}

TEST(ReadAroundDecision, WithoutABlockSizeEveryFaultReadsItsPage) {
  ReadAround around(1, kPage);
  for (std::uint64_t page : {0u, 10u, 1000u}) EXPECT_EQ(around.fault(page, kRegionPages, true, true).count, 1u);
}

// Random faults over far more than the buffer (B-tree leaves, a gather's rows): nothing falls near a probe, so
// every fault reads its page alone.
TEST(ReadAroundDecision, RandomFaultsOutOfCoreReadTheirPage) {
  Program program(false);
  std::mt19937_64 random(7);
  for (int i = 0; i < 20000; ++i) program.touch(random() % kRegionPages);
  EXPECT_EQ(program.around().chosen_pages(), 1u);
  EXPECT_LT(program.pages_read(), program.faults() * 11 / 10);
}

// Binary searches out of core: each search's last probes fall within 64 pages of its first, so the block grows
// to hold them, and a search faults about once instead of seven times.
TEST(ReadAroundDecision, ClusteredFaultsOutOfCoreReadTheCluster) {
  Program program(false);
  std::mt19937_64 random(11);
  for (int i = 0; i < 3000; ++i) {
    binary_search_tail(program, random);
    if (i % 16 == 15) program.evict_all();
  }
  EXPECT_GE(program.around().chosen_pages(), 16u);
  EXPECT_LE(program.around().chosen_pages(), 256u);
  const std::uint64_t faults_before = program.faults();
  for (int i = 0; i < 1000; ++i) {
    binary_search_tail(program, random);
    if (i % 16 == 15) program.evict_all();
  }
  // Seven faults a search with a page each; with blocks about one (and the probes' seven).
  EXPECT_LT(program.faults() - faults_before, 2500u);
}

// A program whose searches give way to random faults: the block shrinks back to a page.
TEST(ReadAroundDecision, TheBlockShrinksWhenTheFaultsStopClustering) {
  Program program(false);
  std::mt19937_64 random(13);
  for (int i = 0; i < 3000; ++i) {
    binary_search_tail(program, random);
    if (i % 16 == 15) program.evict_all();
  }
  ASSERT_GT(program.around().chosen_pages(), 1u);
  for (int i = 0; i < 40000; ++i) program.touch(random() % kRegionPages);
  EXPECT_EQ(program.around().chosen_pages(), 1u);
}

// A stream whose first fault read a block around it goes on from the block's edges, forward or backward, with a
// window as wide as the block.
TEST(ReadAroundDecision, AStreamGoesOnFromTheBlockReadAroundItsFirstFault) {
  for (int towards : {1, -1}) {
    ReadAheadStreams streams(2, 256, 16384);
    const ReadAheadStreams::Reads first = streams.fault(10000);
    ASSERT_TRUE(first.starts);
    streams.read_around(10000, 10000 - 32, 64);
    const std::uint64_t next = towards > 0 ? 10000 + 32 : 10000 - 33;
    const ReadAheadStreams::Reads second = streams.fault(next);
    EXPECT_FALSE(second.starts);
    EXPECT_EQ(static_cast<int>(second.direction), towards);
    EXPECT_GE(second.run, 16u);
  }
  // Far beyond the block it is a stream of its own.
  ReadAheadStreams streams(2, 256, 16384);
  streams.fault(10000);
  streams.read_around(10000, 10000 - 32, 64);
  EXPECT_TRUE(streams.fault(10000 + 40).starts);
}

}  // namespace
}  // namespace autopager

// The read-ahead decision alone (read_ahead.hpp): a trace of faults in, what each reads out.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "autopager/config.hpp"
#include "read_ahead.hpp"

namespace autopager {
namespace {

using Direction = ReadAheadStreams::Direction;

constexpr unsigned kReadAhead = 2;
constexpr unsigned kRunPages = 256;
constexpr std::uint64_t kMostWindow = 16384;

ReadAheadStreams streams() { return ReadAheadStreams(kReadAhead, kRunPages, kMostWindow); }

// The pages each fault of `trace` reads beyond its own: read_ahead runs of `run`, or none.
std::vector<std::uint64_t> runs_of(ReadAheadStreams& s, const std::vector<std::uint64_t>& trace) {
  std::vector<std::uint64_t> runs;
  for (std::uint64_t page : trace) {
    const ReadAheadStreams::Reads reads = s.fault(page);
    runs.push_back(reads.direction == Direction::kNone ? 0 : reads.run);
  }
  return runs;
}

TEST(ReadAheadDecision, IsolatedFaultsReadOnlyTheirPage) {
  ReadAheadStreams s = streams();
  std::vector<std::uint64_t> trace;
  for (std::uint64_t i = 0; i < 200; ++i) trace.push_back((i * 7919) % 100003 * 10);
  for (std::uint64_t run : runs_of(s, trace)) EXPECT_EQ(run, 0u);
}

// A forward scan that faults on every page: the run starts at a page and doubles with the window to run_pages.
TEST(ReadAheadDecision, RunsGrowAlongAForwardScan) {
  ReadAheadStreams s = streams();
  std::vector<std::uint64_t> trace;
  for (std::uint64_t page = 1000; page < 1020; ++page) trace.push_back(page);
  const std::vector<std::uint64_t> expected = {0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 256, 256, 256, 256, 256, 256,
                                               256, 256, 256, 256};
  EXPECT_EQ(runs_of(s, trace), expected);
}

TEST(ReadAheadDecision, RunsGrowAlongABackwardScan) {
  ReadAheadStreams s = streams();
  EXPECT_EQ(s.fault(5000).direction, Direction::kNone);
  std::uint64_t run = 0;
  for (std::uint64_t page = 4999; page > 4980; --page) {
    const ReadAheadStreams::Reads reads = s.fault(page);
    EXPECT_EQ(reads.direction, Direction::kBackward) << page;
    EXPECT_GE(reads.run, run) << page;
    run = reads.run;
  }
  EXPECT_EQ(run, kRunPages);
}

// A stream's completed reads go on to whole blocks of its run, read_ahead blocks on from the block of the read's
// page, whatever page of its block that read began at: reads begun at different pages of one block go on to one
// block, which the first to claim it reads whole.
TEST(ReadAheadDecision, ReadsGoOnInWholeBlocks) {
  for (int towards : {1, -1}) {
    ReadAheadStreams s = streams();
    std::uint64_t page = 100000;
    for (int i = 0; i < 20; ++i, page += towards) s.fault(page);
    const std::uint64_t fault = page - towards;
    std::uint64_t next = 0;
    ReadAheadStreams::Reads reads;
    for (std::uint64_t from : {fault + towards, fault + towards * 37, fault + towards * 200}) {
      ASSERT_TRUE(s.next_after(from, next, reads)) << from;
      EXPECT_EQ(reads.run, kRunPages);
      const std::uint64_t block = from / kRunPages;
      EXPECT_EQ(next, towards > 0 ? (block + kReadAhead) * kRunPages : (block - kReadAhead + 1) * kRunPages - 1)
          << from;
    }
  }
}

// Three scans at once (a merge), with a random fault after each of their steps: each keeps its stream and grows.
TEST(ReadAheadDecision, InterleavedStreamsGrowAmongRandomFaults) {
  ReadAheadStreams s = streams();
  const std::uint64_t starts[] = {100000, 500000, 900000};
  std::uint64_t last_run[3] = {0, 0, 0};
  std::uint64_t random = 7;
  for (std::uint64_t step = 0; step < 16; ++step) {
    for (int k = 0; k < 3; ++k) {
      const ReadAheadStreams::Reads reads = s.fault(starts[k] + step);
      if (step > 0) EXPECT_EQ(reads.direction, Direction::kForward) << k << " " << step;
      last_run[k] = reads.run;
      random = random * 6364136223846793005ull + 1442695040888963407ull;
      EXPECT_EQ(s.fault(2000000 + (random >> 40) % 1000000 * 4).direction, Direction::kNone);
    }
  }
  for (std::uint64_t run : last_run) EXPECT_EQ(run, kRunPages);
}

// Once the faults turn random the scan's stream is replaced: a fault where it left off starts small again.
TEST(ReadAheadDecision, RunsShrinkWhenThePatternTurnsRandom) {
  ReadAheadStreams s = streams();
  std::uint64_t page = 1000;
  for (; page < 1012; ++page) s.fault(page);
  EXPECT_EQ(s.fault(page++).run, kRunPages);
  for (std::uint64_t i = 0; i < 64; ++i) EXPECT_EQ(s.fault(1000000 + i * 1000).direction, Direction::kNone);
  EXPECT_EQ(s.fault(page++).direction, Direction::kNone);
  const ReadAheadStreams::Reads again = s.fault(page++);
  EXPECT_EQ(again.direction, Direction::kForward);
  EXPECT_EQ(again.run, 1u);
}

// How far ahead of its newest fault `fault` a forward stream reads: the last page of the farthest block its
// completed reads go on to.
std::uint64_t reach_of(const ReadAheadStreams& s, std::uint64_t fault) {
  std::uint64_t page = fault + 1, end = page, next = 0;
  ReadAheadStreams::Reads reads;
  for (; s.next_after(page, next, reads); page = next) end = next + reads.run - 1;
  return end - fault;
}

// A stream alone grows to the most window; streams in use at once share the shared window evenly, the first
// one's window shrinking to its share as the others start. A chain of reads steps read_ahead blocks of kRun
// pages at a time, and stops at the first block that would end beyond the window.
TEST(ReadAheadDecision, StreamsInUseShareTheirWindow) {
  constexpr std::uint64_t kMost = 1024, kShared = 1536, kRun = 16;
  ReadAheadStreams alone(kReadAhead, kRun, kMost, kShared);
  for (std::uint64_t page = 1000; page < 1030; ++page) alone.fault(page);
  EXPECT_GT(reach_of(alone, 1029), kMost - kReadAhead * kRun);
  EXPECT_LE(reach_of(alone, 1029), kMost);

  ReadAheadStreams three(kReadAhead, kRun, kMost, kShared);
  const std::uint64_t starts[] = {100000, 500000, 900000};
  for (std::uint64_t step = 0; step < 30; ++step) {
    three.fault(starts[0] + step);
    if (step >= 10)
      for (int k = 1; k < 3; ++k) three.fault(starts[k] + step);
  }
  for (std::uint64_t start : starts) {
    EXPECT_LE(reach_of(three, start + 29), kShared / 3) << start;
    EXPECT_GT(reach_of(three, start + 29), kShared / 3 - kReadAhead * kRun) << start;
  }
}

TEST(ReadAheadDecision, NoReadAheadReadsNothing) {
  ReadAheadStreams s(0, kRunPages, kMostWindow);
  for (std::uint64_t page = 0; page < 10; ++page) EXPECT_EQ(s.fault(page).direction, Direction::kNone);
}

// A region's reads a fault are bounded by a sixteenth of the buffer: a buffer under 16 pages reads nothing ahead,
// one under 32 one page, and a large buffer the configured number.
TEST(ReadAheadDecision, ASmallBufferReadsAheadAtMostASixteenthOfIt) {
  Config config;
  config.page_size = 2u << 20;
  config.read_ahead = 2;
  const std::pair<unsigned, unsigned> buffer_and_reads[] = {{4, 0}, {8, 0}, {15, 0}, {16, 1}, {31, 1}, {32, 2}, {512, 2}};
  for (const auto& [buffer_pages, reads] : buffer_and_reads) {
    config.buffer_pages = buffer_pages;
    EXPECT_EQ(ReadAheadStreams::for_region(config, config.page_size, 1).reads_per_fault(), reads) << buffer_pages;
  }
  config.buffer_pages = 8;
  ReadAheadStreams none = ReadAheadStreams::for_region(config, config.page_size, 1);
  for (std::uint64_t page = 0; page < 10; ++page) EXPECT_EQ(none.fault(page).direction, Direction::kNone);
}

}  // namespace
}  // namespace autopager

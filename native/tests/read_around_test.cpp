// The block read around a fault that starts no stream (read_around.hpp), and the stream that goes on from it
// (read_ahead.hpp).
#include <gtest/gtest.h>

#include <cstdint>

#include "converging_faults.hpp"
#include "read_ahead.hpp"
#include "read_around.hpp"

namespace autopager {
namespace {

TEST(ReadAround, ABlockIsCentredOnItsFaultWithinTheRegion) {
  const PageBlock middle = block_around(5000, 1 << 20, 1024);
  EXPECT_EQ(middle.first, 5000u - 512);
  EXPECT_EQ(middle.count, 1024u);
  const PageBlock start = block_around(3, 1 << 20, 1024);
  EXPECT_EQ(start.first, 0u);
  EXPECT_EQ(start.count, 1024u);
  const PageBlock end = block_around((1 << 20) - 2, 1 << 20, 1024);
  EXPECT_EQ(end.first + end.count, std::uint64_t{1} << 20);
  EXPECT_EQ(end.count, 1024u);
  const PageBlock small = block_around(7, 100, 1024);  // a region smaller than the block
  EXPECT_EQ(small.first, 0u);
  EXPECT_EQ(small.count, 100u);
  const PageBlock one = block_around(7, 100, 1);
  EXPECT_EQ(one.first, 7u);
  EXPECT_EQ(one.count, 1u);
}

// A stream whose first fault read a block around it goes on from the block's edges, forward or backward, with a
// window as wide as the block; a fault far from the block starts a stream of its own.
TEST(ReadAround, AStreamGoesOnFromTheBlockReadAroundItsFirstFault) {
  for (int towards : {1, -1}) {
    ReadAheadStreams streams(2, 256, 16384);
    ASSERT_TRUE(streams.fault(10000).starts);
    streams.read_around(10000, 10000 - 32, 64);
    const ReadAheadStreams::Reads next = streams.fault(towards > 0 ? 10000 + 32 : 10000 - 33);
    EXPECT_FALSE(next.starts);
    EXPECT_EQ(static_cast<int>(next.direction), towards);
    EXPECT_GE(next.run, 16u);
  }
  ReadAheadStreams streams(2, 256, 16384);
  streams.fault(10000);
  streams.read_around(10000, 10000 - 32, 64);
  EXPECT_TRUE(streams.fault(10000 + 40).starts);
  // The same fault again (two threads on one page) starts nothing: its block is not read twice.
  ReadAheadStreams again(2, 256, 16384);
  EXPECT_TRUE(again.fault(500).starts);
  EXPECT_FALSE(again.fault(500).starts);
}

// A binary search's faults close in: once a thread faults nearer its previous fault than that one fell to the fault
// before it, it reads the block within that distance on both sides, where its remaining probes fall.
TEST(ConvergingFaults, AThreadClosingInReadsTheBlockItsNextProbesFallIn) {
  ConvergingFaults faults;
  int region = 0;
  const std::uint64_t pages = 1 << 20;
  EXPECT_EQ(faults.fault(7, &region, 500000, pages, 32, 3).count, 1u);  // a first fault: nothing to go by
  EXPECT_EQ(faults.fault(7, &region, 600000, pages, 32, 3).count, 1u);  // far: a random fault
  const PageBlock block = faults.fault(7, &region, 600010, pages, 32, 3);
  EXPECT_EQ(block.first, 600000u);
  EXPECT_EQ(block.count, 21u);
  EXPECT_EQ(faults.fault(7, &region, 600010, pages, 32, 3).count, 1u);  // its fault again: nothing more
  EXPECT_EQ(faults.fault(7, &region, 600005, pages, 32, 3).count, 11u);  // closer still
}

TEST(ConvergingFaults, StridesOtherThreadsAndFarFaultsReadNothingMore) {
  ConvergingFaults faults;
  int region = 0, other_region = 0;
  const std::uint64_t pages = 1 << 20;
  faults.fault(7, &region, 1000, pages, 32, 3);
  EXPECT_EQ(faults.fault(7, &region, 1040, pages, 32, 3).count, 1u);  // a block of 81 pages: more than 32
  EXPECT_EQ(faults.fault(7, &region, 1050, pages, 32, 3).count, 21u);
  EXPECT_EQ(faults.fault(7, &region, 1060, pages, 32, 3).count, 1u);  // as far again: a stride
  EXPECT_EQ(faults.fault(7, &region, 1070, pages, 32, 3).count, 1u);
  faults.fault(8, &region, 5000, pages, 32, 3);
  EXPECT_EQ(faults.fault(9, &region, 5002, pages, 32, 3).count, 1u);        // another thread's fault
  EXPECT_EQ(faults.fault(8, &other_region, 5001, pages, 32, 3).count, 1u);  // another region's
  EXPECT_EQ(faults.fault(8, &other_region, 5000, pages, 0, 3).count, 1u);   // blocks off
  faults.fault(8, &region, 9000, pages, 32, 3);
  EXPECT_EQ(faults.fault(8, &region, 9003, pages, 32, 3).count, 1u);  // a stream's next fault
}

}  // namespace
}  // namespace autopager

// The block read around a fault that starts no stream (read_around.hpp), and the stream that goes on from it
// (read_ahead.hpp).
#include <gtest/gtest.h>

#include <cstdint>

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

}  // namespace
}  // namespace autopager

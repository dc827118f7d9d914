// The buffer's eviction marks against the mapped regions' size (buffer.hpp): the configured ones out of core, ones
// that follow the excess where the regions exceed the buffer by little, none where they fit.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>

#include "buffer.hpp"

namespace autopager {
namespace {

// A buffer of 100 units, marks 90 and 70, its `resident` units reserved and `mapped` units of regions mapped;
// the units its evictors would take out.
std::uint64_t evictions(std::uint64_t mapped, std::uint64_t resident) {
  Buffer buffer(100, 90, 70, make_fifo_policy());
  buffer.map_units(mapped);
  EXPECT_TRUE(buffer.try_reserve(resident));
  const std::uint64_t share = buffer.claim_evictions(1000);
  buffer.end_evictions(share);
  return share;
}

TEST(BufferMarks, OutOfCoreTheConfiguredMarks) {
  EXPECT_EQ(evictions(130, 100), 30u);  // regions 30 units larger than the buffer: down to the low mark, 70
  EXPECT_EQ(evictions(1000, 90), 20u);
}

TEST(BufferMarks, RegionsThatFitAreNeverEvicted) {
  EXPECT_EQ(evictions(100, 100), 0u);
  EXPECT_EQ(evictions(60, 60), 0u);
}

TEST(BufferMarks, RegionsALittleLargerThanTheBufferKeepFreeAsMuchAsTheyExceedIt) {
  EXPECT_EQ(evictions(106, 100), 6u);   // the low mark 94: free as much as the excess
  EXPECT_EQ(evictions(115, 100), 15u);  // 85
  EXPECT_EQ(evictions(129, 100), 29u);  // 71: the configured 70 from an excess of 30 on
}

TEST(BufferMarks, TheMarksFollowRegionsMappedAndUnmapped) {
  Buffer buffer(100, 90, 70, make_fifo_policy());
  buffer.map_units(80);
  ASSERT_TRUE(buffer.try_reserve(80));
  EXPECT_EQ(buffer.claim_evictions(1000), 0u);
  buffer.map_units(100);  // 180 in all: the configured marks
  std::uint64_t share = buffer.claim_evictions(1000);
  EXPECT_EQ(share, 10u);
  buffer.end_evictions(share);
  buffer.unmap_units(100);
  EXPECT_EQ(buffer.claim_evictions(1000), 0u);
}

TEST(BufferMarks, ARegionMappedOverAFullBufferWakesTheEvictors) {
  Buffer buffer(100, 90, 70, make_fifo_policy());
  buffer.map_units(95);
  ASSERT_TRUE(buffer.try_reserve(95));  // the regions fit: nothing to evict
  std::atomic<bool> stop{false};
  auto evictor = std::async(std::launch::async, [&] { return buffer.wait_for_pressure(stop); });
  EXPECT_EQ(evictor.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);
  buffer.map_units(1000);  // out of core: the high mark drops to 90, below what is resident
  const bool woke = evictor.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  stop = true;
  buffer.wake_all();
  EXPECT_TRUE(woke) << "the evictor slept on";
  EXPECT_EQ(evictor.get(), woke);
  EXPECT_EQ(buffer.claim_evictions(1000), 25u);
}

// Read-around blocks (read_around.hpp): in a region that fits below the high mark while they do; in one up to twice
// the mark's size only while the buffer fills, never once it has reached the mark.
TEST(BufferMarks, BlocksAroundFaultsWhileTheyEvictNothing) {
  Buffer buffer(100, 90, 70, make_fifo_policy());
  buffer.map_units(1000);  // out of core: marks 90 and 70
  EXPECT_TRUE(buffer.has_room(80, 5));
  EXPECT_TRUE(buffer.has_room(170, 5));
  EXPECT_FALSE(buffer.has_room(190, 5));
  ASSERT_TRUE(buffer.try_reserve(89));
  EXPECT_FALSE(buffer.has_room(170, 5));
  buffer.release(40);
  EXPECT_TRUE(buffer.has_room(80, 5)) << "the region fits below the mark";
  EXPECT_FALSE(buffer.has_room(170, 5)) << "the buffer has filled once";
}

// Where every mapped region fits below the high mark nothing is ever evicted, so a block is read around a fault
// however full the buffer is: it reads only the pages still absent.
TEST(BufferMarks, BlocksAroundFaultsToTheLastPageWhereTheRegionsFit) {
  Buffer buffer(100, 90, 70, make_fifo_policy());
  buffer.map_units(100);
  ASSERT_TRUE(buffer.try_reserve(98));
  EXPECT_TRUE(buffer.has_room(100, 30));
  buffer.map_units(1);  // past the buffer: the marks drop to 90 and 70
  EXPECT_FALSE(buffer.has_room(101, 30));
}

// A buffer of 100 units for pages beside the slots, 110 in all (Buffer's fit_capacity): regions of 101-110 units may
// take the slots' share, and once the pages do, the slots give their memory back after each use.
TEST(BufferSlots, RegionsThatFitOnlyInTheWholeBufferTakeItAndNothingIsEvicted) {
  Buffer buffer(100, 90, 70, make_fifo_policy(), 110);
  buffer.map_units(100);
  EXPECT_EQ(buffer.limit(), 100u) << "they fit beside the slots";
  buffer.map_units(8);
  EXPECT_EQ(buffer.limit(), 110u);
  ASSERT_TRUE(buffer.try_reserve(100));
  EXPECT_FALSE(buffer.slots_transient()) << "the slots' share is still free";
  ASSERT_TRUE(buffer.try_reserve(8));
  EXPECT_TRUE(buffer.slots_transient());
  EXPECT_EQ(buffer.claim_evictions(1000), 0u);
  EXPECT_TRUE(buffer.has_room(108, 50)) << "nothing is ever evicted: a block reads only its absent pages";
  EXPECT_FALSE(buffer.try_reserve(3));
  buffer.map_units(3);  // 111: past the whole buffer
  EXPECT_EQ(buffer.limit(), 100u);
}

// The idle slots are flushed once each time the pages start taking the share: the first caller to see it is told to.
TEST(BufferSlots, TheFlushOfIdleSlotsIsClaimedOnceEachTimeThePagesTakeTheShare) {
  Buffer buffer(100, 90, 70, make_fifo_policy(), 110);
  buffer.map_units(110);
  ASSERT_TRUE(buffer.try_reserve(100));
  EXPECT_FALSE(buffer.claim_slot_flush());
  ASSERT_TRUE(buffer.try_reserve(5));
  EXPECT_TRUE(buffer.claim_slot_flush());
  EXPECT_FALSE(buffer.claim_slot_flush());
  buffer.release(10);  // 95: the slots may keep their memory again
  EXPECT_FALSE(buffer.claim_slot_flush());
  ASSERT_TRUE(buffer.try_reserve(10));
  EXPECT_TRUE(buffer.claim_slot_flush()) << "slots kept meanwhile are flushed again";
}

// Regions mapped past the whole buffer take the share back: reservations stop at 100 and the pages above it are
// evicted; until they are, the slots keep giving their memory back.
TEST(BufferSlots, RegionsMappedPastTheShareTakeItBackAndTheSlotsStayTransientUntilEvictedBelowIt) {
  Buffer buffer(100, 90, 70, make_fifo_policy(), 110);
  buffer.map_units(105);
  ASSERT_TRUE(buffer.try_reserve(105));
  buffer.map_units(20);  // 125: 25 over the buffer's pages
  EXPECT_EQ(buffer.limit(), 100u);
  EXPECT_TRUE(buffer.slots_transient()) << "105 units resident over 100";
  EXPECT_FALSE(buffer.try_reserve(1));
  const std::uint64_t share = buffer.claim_evictions(1000);
  EXPECT_EQ(share, 30u) << "down to the low mark, 75";
  buffer.release(share);
  buffer.end_evictions(share);
  EXPECT_FALSE(buffer.slots_transient());
  buffer.unmap_units(20);
  EXPECT_EQ(buffer.limit(), 110u);
}

}  // namespace
}  // namespace autopager

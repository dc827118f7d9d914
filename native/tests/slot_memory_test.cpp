// A filler's read slots (read_slots.hpp) and the evictors' write-back slots (write_back_staging.hpp) give their memory
// back when told: after a use, and the idle ones at once, never a slot in use.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "read_slots.hpp"
#include "write_back_staging.hpp"

namespace autopager {
namespace {

// The bytes of [start, start + bytes) that hold memory (mincore).
std::size_t resident_bytes(const char* start, std::size_t bytes) {
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> in((bytes + page - 1) / page);
  if (mincore(const_cast<char*>(start), bytes, in.data()) != 0) return ~std::size_t{0};
  std::size_t count = 0;
  for (unsigned char c : in) count += c & 1;
  return count * page;
}

TEST(ReadSlots, GiveTheirMemoryBackAfterAUseWhenToldAndTheIdleOnesAtOnce) {
  constexpr std::size_t kSlot = 1u << 20;
  ReadSlots slots(3, kSlot);
  const unsigned kept = slots.acquire(), dropped = slots.acquire(), in_use = slots.acquire();
  for (unsigned slot : {kept, dropped, in_use}) std::memset(slots.buffer(slot), 1, kSlot);
  slots.release(kept, [] { return false; });
  slots.release(dropped, [] { return true; });
  EXPECT_EQ(resident_bytes(slots.buffer(kept), kSlot), kSlot);
  EXPECT_EQ(resident_bytes(slots.buffer(dropped), kSlot), 0u);
  slots.give_back_idle();
  EXPECT_EQ(resident_bytes(slots.buffer(kept), kSlot), 0u) << "an idle slot";
  EXPECT_EQ(resident_bytes(slots.buffer(in_use), kSlot), kSlot) << "a slot in use keeps its bytes";
  slots.release(in_use, [] { return false; });
}

TEST(WriteBackStaging, SlotsGiveTheirMemoryBackAfterAWriteWhenToldAndTheIdleOnesAtOnce) {
  constexpr std::size_t kSlot = 2u << 20;
  WriteBackStaging staging(2, kSlot);
  char* kept = staging.take();
  char* in_use = staging.take();
  ASSERT_NE(kept, nullptr);
  ASSERT_NE(in_use, nullptr);
  std::memset(kept, 1, kSlot);
  std::memset(in_use, 1, kSlot);
  staging.give_back(kept, [] { return false; });
  EXPECT_EQ(resident_bytes(kept, kSlot), kSlot);
  staging.give_back_idle();
  EXPECT_EQ(resident_bytes(kept, kSlot), 0u);
  EXPECT_EQ(resident_bytes(in_use, kSlot), kSlot);
  staging.give_back(in_use, [] { return true; });
  EXPECT_EQ(resident_bytes(in_use, kSlot), 0u);
}

}  // namespace
}  // namespace autopager

// The eviction policies alone: a trace of fills, writes and evictions in, the victims out.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "policy/eviction_policy.hpp"
#include "policy/victim_queue.hpp"

namespace autopager {
namespace {

// Pages of `units` units of the buffer (of 4 KiB each).
RegionPtr fake_region(std::uint64_t id, std::uint64_t pages, std::uint64_t units = 1) {
  // Never mapped: the policies read only a region's id and units and compare its address.
  return std::make_shared<Region>(id, nullptr, pages * units * 4096, units * 4096, units, nullptr, false, true,
                                  ReadAheadStreams(0, 1, 1));
}

class Trace {
 public:
  Trace(std::unique_ptr<EvictionPolicy> policy, std::uint64_t pages = 4096)
      : policy_(std::move(policy)), region_(fake_region(1, pages)) {}

  void fill(std::uint64_t first, std::uint64_t last) {
    for (std::uint64_t p = first; p <= last; ++p) policy_->on_fill(PageRef{region_, p});
  }
  void write(std::uint64_t page) { policy_->on_write(*region_, page); }
  std::vector<std::uint64_t> evict(std::size_t n) {
    std::vector<std::uint64_t> out;
    for (std::size_t i = 0; i < n; ++i) {
      std::optional<PageRef> victim = policy_->next_victim();
      if (!victim) break;
      out.push_back(victim->page);
    }
    return out;
  }
  EvictionPolicy& policy() { return *policy_; }
  const RegionPtr& region() const { return region_; }

 private:
  std::unique_ptr<EvictionPolicy> policy_;
  RegionPtr region_;
};

std::vector<std::uint64_t> range(std::uint64_t first, std::uint64_t last) {
  std::vector<std::uint64_t> out;
  for (std::uint64_t p = first; p <= last; ++p) out.push_back(p);
  return out;
}
std::vector<std::uint64_t> concat(std::vector<std::uint64_t> a, const std::vector<std::uint64_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(FifoPolicy, EvictsInFillOrderAndAKeptBackVictimLast) {
  Trace t(make_fifo_policy());
  t.fill(0, 4);
  EXPECT_EQ(t.evict(1), range(0, 0));
  t.policy().queue_for_eviction(PageRef{t.region(), 0});
  EXPECT_EQ(t.evict(10), (std::vector<std::uint64_t>{1, 2, 3, 4, 0}));
}

// The first pages filled wait until the policy has nothing else, whatever the policy.
TEST(RetainingPolicy, OffersTheFirstPagesFilledOnlyWhenNothingElseIsLeft) {
  for (Eviction eviction : {Eviction::kFifo, Eviction::kHotFifo, Eviction::kS3Fifo, Eviction::kClock}) {
    Trace t(make_eviction_policy(eviction, 1000, 3));
    t.fill(0, 9);
    std::vector<std::uint64_t> victims = t.evict(20);
    ASSERT_EQ(victims.size(), 10u) << eviction_name(eviction);
    EXPECT_EQ(std::vector<std::uint64_t>(victims.end() - 3, victims.end()), range(0, 2)) << eviction_name(eviction);
    // Their places go to the next pages filled.
    t.fill(10, 14);
    EXPECT_EQ(t.evict(20).back(), 12u) << eviction_name(eviction);
  }
}

// Every page filled or queued is offered once, through any mix of fills, refaults and writes, and a
// forgotten region's pages never.
TEST(EvictionPolicies, OfferEachResidentPageOnceAndNoneOfAForgottenRegion) {
  for (Eviction eviction : {Eviction::kFifo, Eviction::kHotFifo, Eviction::kS3Fifo, Eviction::kClock}) {
    auto policy = make_eviction_policy(eviction, 64, 0);
    RegionPtr kept = fake_region(1, 1000), forgotten = fake_region(2, 1000);
    std::multiset<std::uint64_t> resident;
    std::uint64_t next = 0;
    for (int step = 0; step < 2000; ++step) {
      const std::uint64_t page = (next * 7919) % 300;  // revisits pages, so some fills are refaults
      ++next;
      if (resident.count(page) == 0) {
        policy->on_fill(PageRef{kept, page});
        resident.insert(page);
        policy->on_fill(PageRef{forgotten, page});
      }
      if (step % 3 == 0) policy->on_write(*kept, page);
      while (resident.size() > 64) {
        std::optional<PageRef> victim = policy->next_victim();
        ASSERT_TRUE(victim) << eviction_name(eviction);
        if (victim->region == forgotten) continue;
        ASSERT_EQ(resident.count(victim->page), 1u) << eviction_name(eviction) << " offered page " << victim->page;
        resident.erase(victim->page);
      }
    }
    policy->forget_region(*forgotten);
    while (std::optional<PageRef> victim = policy->next_victim()) {
      ASSERT_EQ(victim->region, kept) << eviction_name(eviction);
      ASSERT_EQ(resident.count(victim->page), 1u) << eviction_name(eviction);
      resident.erase(victim->page);
    }
    EXPECT_TRUE(resident.empty()) << eviction_name(eviction) << ": " << resident.size() << " pages never offered";
  }
}

// DI-MMAP: pages that fault again go to the hot FIFO as they leave the fill-order FIFO, and leave after
// every page that faulted once.
TEST(HotFifoPolicy, PagesFaultedAgainOutstayPagesFaultedOnce) {
  Trace t(make_hot_fifo_policy(1000));
  t.fill(0, 7);
  EXPECT_EQ(t.evict(8), range(0, 7));
  t.fill(0, 3);  // refaults
  t.fill(8, 11);
  EXPECT_EQ(t.evict(8), concat(range(8, 11), range(0, 3)));
  PolicyStats s = t.policy().stats();
  EXPECT_EQ(s.refaults, 4u);
  EXPECT_EQ(s.promotions, 4u);
  EXPECT_EQ(s.demotions, 0u);
}

TEST(HotFifoPolicy, AWriteCountsAsAFault) {
  Trace t(make_hot_fifo_policy(1000));
  t.fill(0, 3);
  t.write(1);
  EXPECT_EQ(t.evict(4), (std::vector<std::uint64_t>{0, 2, 3, 1}));
}

// The hot FIFO holds at most 3/4 of the buffer: past that, its oldest page goes first.
TEST(HotFifoPolicy, TheHotFifoOverItsShareEvictsItsOldest) {
  Trace t(make_hot_fifo_policy(4));  // a hot share of 3 pages
  t.fill(0, 3);
  for (std::uint64_t p = 0; p < 4; ++p) t.write(p);
  EXPECT_EQ(t.evict(4), range(0, 3));
  PolicyStats s = t.policy().stats();
  EXPECT_EQ(s.promotions, 4u);
  EXPECT_EQ(s.demotions, 1u);
}

// The hot-page FIFO's evictions wait in a victim buffer of the quarter of the buffer its hot FIFO leaves; the
// other policies drop what they evict at once.
TEST(HotFifoPolicy, KeepsAQuarterOfTheBufferAsVictims) {
  EXPECT_EQ(make_hot_fifo_policy(1000)->victim_units(), 250u);
  EXPECT_EQ(make_eviction_policy(Eviction::kHotFifo, 1000, 200)->victim_units(), 200u) << "of the pages not retained";
  for (Eviction eviction : {Eviction::kFifo, Eviction::kS3Fifo, Eviction::kClock})
    EXPECT_EQ(make_eviction_policy(eviction, 1000, 0)->victim_units(), 0u) << eviction_name(eviction);
}

// The queues' shares of the buffer count units: a page of a larger page size takes several.
TEST(EvictionPolicies, SharesOfTheBufferCountUnits) {
  RegionPtr small = fake_region(1, 100), large = fake_region(2, 100, 10);
  // S3-FIFO over 100 units: a small FIFO of 10 units, which two large pages fill: they go before the main FIFO's.
  auto s3fifo = make_s3fifo_policy(100);
  for (std::uint64_t p = 0; p < 10; ++p) s3fifo->on_fill(PageRef{small, p});
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(s3fifo->next_victim());
  for (std::uint64_t p = 0; p < 5; ++p) s3fifo->on_fill(PageRef{small, p});  // refaults: into the main FIFO
  s3fifo->on_fill(PageRef{large, 0});
  s3fifo->on_fill(PageRef{large, 1});
  for (std::uint64_t p = 0; p < 2; ++p) {
    std::optional<PageRef> victim = s3fifo->next_victim();
    ASSERT_TRUE(victim);
    EXPECT_EQ(victim->region, large);
    EXPECT_EQ(victim->page, p);
  }
  // The hot-page FIFO over 40 units: a hot share of 30, three large pages; a fourth there is one too many.
  auto hotfifo = make_hot_fifo_policy(40);
  for (std::uint64_t p = 0; p < 4; ++p) {
    hotfifo->on_fill(PageRef{large, p});
    hotfifo->on_write(*large, p);
  }
  std::optional<PageRef> first = hotfifo->next_victim();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->page, 0u);
  EXPECT_EQ(hotfifo->stats().demotions, 1u);
  EXPECT_EQ(hotfifo->victim_units(), 10u);
}

// The victim buffer's bookkeeping: a trace of evictions (parked), faults on victims (taken) and room made
// (the oldest dropped) in; the victims out. Region r's pages, of slot_units[r] units each, park in arena r.
class VictimTrace {
 public:
  VictimTrace(const std::vector<std::uint64_t>& slot_units, std::uint64_t capacity) : queue_(slot_units, capacity) {
    for (unsigned arena = 0; arena < slot_units.size(); ++arena)
      regions_.push_back(fake_region(arena + 1, 4096, slot_units[arena]));
  }
  explicit VictimTrace(std::uint64_t slots) : VictimTrace({1}, slots) {}
  // Parks the pages in order, each dropping the oldest victims while no slot is free; returns those dropped.
  std::vector<std::uint64_t> park(std::uint64_t first, std::uint64_t last, unsigned arena = 0) {
    std::vector<std::uint64_t> dropped;
    for (std::uint64_t p = first; p <= last; ++p) {
      std::optional<VictimSlot> slot = queue_.take_slot(arena);
      while (!slot) {
        std::optional<Victim> oldest = queue_.pop_oldest();
        dropped.push_back(oldest->page.page);
        give_back(oldest->slot);
        slot = queue_.take_slot(arena);
      }
      EXPECT_EQ(slot->arena, arena);
      EXPECT_TRUE(in_use_.insert({slot->arena, slot->index}).second) << "slot " << slot->index << " given twice";
      EXPECT_LT(slot->index, queue_.slots_of(arena));
      queue_.park(PageRef{regions_[arena], p}, *slot);
    }
    return dropped;
  }
  // A fault on the page: whether it was a victim (its slot then free again).
  bool fault(std::uint64_t page, unsigned arena = 0) {
    std::optional<VictimSlot> slot = queue_.take(key_of(*regions_[arena], page));
    if (slot) give_back(*slot);
    return slot.has_value();
  }
  std::vector<std::uint64_t> drain() {
    std::vector<std::uint64_t> out;
    while (std::optional<Victim> victim = queue_.pop_oldest()) {
      out.push_back(victim->page.page);
      give_back(victim->slot);
    }
    return out;
  }
  VictimQueue& queue() { return queue_; }

 private:
  void give_back(VictimSlot slot) {
    EXPECT_EQ(in_use_.erase({slot.arena, slot.index}), 1u);
    queue_.give_back_slot(slot);
  }

  VictimQueue queue_;
  std::vector<RegionPtr> regions_;
  std::set<std::pair<unsigned, std::uint64_t>> in_use_;  // the slots of the victims parked
};

TEST(VictimQueue, HoldsTheLastEvictionsAndDropsTheOldestForRoom) {
  VictimTrace t(3);
  EXPECT_TRUE(t.park(0, 2).empty());
  EXPECT_EQ(t.queue().held_units(), 3u);
  EXPECT_EQ(t.park(3, 4), (std::vector<std::uint64_t>{0, 1}));
  EXPECT_FALSE(t.fault(0)) << "dropped: read again";
  EXPECT_TRUE(t.fault(3)) << "a victim: installed from memory";
  EXPECT_FALSE(t.fault(3)) << "no longer a victim once taken back";
  EXPECT_EQ(t.queue().held_units(), 2u);
  EXPECT_TRUE(t.park(5, 5).empty()) << "the slot page 3 left";
  EXPECT_EQ(t.drain(), (std::vector<std::uint64_t>{2, 4, 5}));
  EXPECT_EQ(t.queue().held_units(), 0u);
}

// Pages of two sizes (arenas of 1-unit and 4-unit slots) share the capacity in units: a large victim takes the
// room of four small ones, and the oldest go for it whatever their size.
TEST(VictimQueue, PagesOfSeveralSizesShareTheCapacityInUnits) {
  VictimTrace t({1, 4}, 8);
  EXPECT_EQ(t.queue().slots_of(0), 8u);
  EXPECT_EQ(t.queue().slots_of(1), 2u);
  EXPECT_TRUE(t.park(0, 3).empty());
  EXPECT_TRUE(t.park(100, 100, 1).empty());
  EXPECT_EQ(t.queue().held_units(), 8u);
  EXPECT_EQ(t.park(101, 101, 1), (std::vector<std::uint64_t>{0, 1, 2, 3})) << "four small pages make room for one";
  EXPECT_EQ(t.park(4, 4), (std::vector<std::uint64_t>{100})) << "a large page makes room for a small one";
  EXPECT_TRUE(t.fault(101, 1));
  EXPECT_FALSE(t.fault(101, 0)) << "another region's page 101";
  EXPECT_EQ(t.queue().held_units(), 1u);
  EXPECT_EQ(t.drain(), (std::vector<std::uint64_t>{4}));
}

// Every slot goes to one victim at a time, through any mix of parks, faults and drops.
TEST(VictimQueue, NeverGivesOneSlotToTwoVictims) {
  VictimTrace t(16);
  std::set<std::uint64_t> victims;
  for (std::uint64_t n = 0; n < 2000; ++n) {
    const std::uint64_t page = (n * 7919) % 97;
    if (n % 3 == 0) {
      if (t.fault(page)) EXPECT_EQ(victims.erase(page), 1u);
    } else if (victims.count(page) == 0) {
      for (std::uint64_t dropped : t.park(page, page)) EXPECT_EQ(victims.erase(dropped), 1u);
      victims.insert(page);
    }
    EXPECT_EQ(t.queue().size(), victims.size());
    EXPECT_EQ(t.queue().held_units(), victims.size());
  }
}

// S3-FIFO: a page refaulted within the ghost queue's window goes to the main FIFO and outstays the small
// FIFO's pages while the small FIFO holds its share (a tenth of the buffer).
TEST(S3FifoPolicy, ARefaultEntersTheMainFifo) {
  Trace t(make_s3fifo_policy(100));
  t.fill(0, 99);
  EXPECT_EQ(t.evict(10), range(0, 9));
  t.fill(0, 4);  // refaults
  EXPECT_EQ(t.evict(100), concat(concat(range(10, 90), range(0, 4)), range(91, 99)));
  PolicyStats s = t.policy().stats();
  EXPECT_EQ(s.refaults, 5u);
  EXPECT_EQ(s.promotions, 5u);
}

// A page written while in the small FIFO moves on to the main FIFO; written again there, it gets another round.
TEST(S3FifoPolicy, AWrittenPageMovesOnAndIsKeptAnotherRound) {
  Trace t(make_s3fifo_policy(20));  // a small FIFO of 2 pages
  t.fill(0, 5);
  t.write(1);
  EXPECT_EQ(t.evict(4), (std::vector<std::uint64_t>{0, 2, 3, 4}));  // 1 moved to main; 5 alone in small
  t.write(1);
  t.fill(6, 7);
  EXPECT_EQ(t.evict(4), (std::vector<std::uint64_t>{5, 6, 1, 7}));
  PolicyStats s = t.policy().stats();
  EXPECT_EQ(s.promotions, 1u);
  EXPECT_EQ(s.second_chances, 1u);
  EXPECT_EQ(s.refaults, 0u);
}

// The ghost queue remembers a main FIFO's worth of evictions, no more.
TEST(S3FifoPolicy, TheGhostQueueForgetsAfterItsWindow) {
  Trace t(make_s3fifo_policy(10));  // small 1, a ghost window of 9 evictions
  t.fill(0, 1);
  EXPECT_EQ(t.evict(2), range(0, 1));
  t.fill(2, 9);
  EXPECT_EQ(t.evict(8), range(2, 9));
  t.fill(1, 1);  // 8 evictions after it left
  EXPECT_EQ(t.policy().stats().refaults, 1u);
  t.fill(0, 0);  // 9 after
  EXPECT_EQ(t.policy().stats().refaults, 1u);
}

// CLOCK: the hand passes over a page that refaulted or was written, once.
TEST(ClockPolicy, ARefaultedOrWrittenPageGetsOneMoreRound) {
  Trace t(make_clock_policy(1000));
  t.fill(0, 9);
  EXPECT_EQ(t.evict(2), range(0, 1));
  t.fill(0, 0);  // a refault
  t.write(5);
  EXPECT_EQ(t.evict(9), (std::vector<std::uint64_t>{2, 3, 4, 6, 7, 8, 9, 5, 0}));
  PolicyStats s = t.policy().stats();
  EXPECT_EQ(s.refaults, 1u);
  EXPECT_EQ(s.second_chances, 2u);
}

TEST(EvictionNames, RoundTripAndRefuseOthersNamingTheVariable) {
  for (Eviction eviction : {Eviction::kFifo, Eviction::kHotFifo, Eviction::kS3Fifo, Eviction::kClock})
    EXPECT_EQ(eviction_from_name(eviction_name(eviction)), eviction);
  EXPECT_EQ(eviction_from_name("S3FIFO"), Eviction::kS3Fifo);
  try {
    eviction_from_name("lru");
    ADD_FAILURE() << "lru accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("eviction (UMAP_EVICTION) = \"lru\""), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace autopager

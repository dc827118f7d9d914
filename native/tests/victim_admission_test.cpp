// When eviction batches park their pages in the victim buffer: all while victims are hit, one in
// VictimAdmission::kSampleEvery while they are not, judged once a window of evictions.
#include "victim_admission.hpp"

#include <gtest/gtest.h>

namespace autopager {
namespace {

constexpr std::uint64_t kCapacity = 64;  // units the victims may hold
constexpr std::uint64_t kWindow = VictimAdmission::kWindowTurns * kCapacity;
constexpr std::uint64_t kBatch = 16;

// Batches of kBatch units through `admission` until a window of evictions ends, each parked one hit
// `hits_per_batch` units; how many batches parked.
std::uint64_t run_window(VictimAdmission& admission, std::uint64_t hits_per_batch) {
  std::uint64_t parked = 0;
  for (std::uint64_t evicted = 0; evicted < kWindow; evicted += kBatch) {
    const bool parks = admission.admits_batch();
    parked += parks;
    if (parks) admission.hit(hits_per_batch);
    admission.evicted(kBatch, parks ? kBatch : 0);
  }
  return parked;
}

TEST(VictimAdmission, EveryBatchParksUntilAWindowSeesNoHits) {
  VictimAdmission admission(kCapacity);
  EXPECT_EQ(run_window(admission, 0), kWindow / kBatch);
  EXPECT_FALSE(admission.parking_all());
  EXPECT_EQ(run_window(admission, 0), kWindow / kBatch / VictimAdmission::kSampleEvery);
  EXPECT_FALSE(admission.parking_all());
}

TEST(VictimAdmission, ParksEveryBatchAgainOnceTheSampledParksAreHit) {
  VictimAdmission admission(kCapacity);
  run_window(admission, 0);
  ASSERT_FALSE(admission.parking_all());
  run_window(admission, 1);  // 1 unit hit in 16 parked: over one in kPaysAtOne
  EXPECT_TRUE(admission.parking_all());
  EXPECT_EQ(run_window(admission, 1), kWindow / kBatch);
}

TEST(VictimAdmission, HitsUnderOneInKPaysAtOneAreTooFew) {
  VictimAdmission admission(kCapacity);
  // One unit hit in the window's 256 parked: under 1 in 32.
  for (std::uint64_t evicted = 0; evicted < kWindow; evicted += kBatch) {
    ASSERT_TRUE(admission.admits_batch());
    if (evicted == 0) admission.hit(1);
    admission.evicted(kBatch, kBatch);
  }
  EXPECT_FALSE(admission.parking_all());
}

}  // namespace
}  // namespace autopager

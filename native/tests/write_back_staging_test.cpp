// Write-backs of a direct-I/O store copy runs of dirty pages longer than a megabyte into contiguous slots
// (write_back_staging.hpp) and write them from there, a slot at a time.
#include <sys/mman.h>

#include <atomic>
#include <cstring>
#include <memory>

#include "page_memory.hpp"
#include "test_util.hpp"

namespace autopager {
namespace {

using testing::ScratchFile;
using testing::small_config;

TEST(WriteBackStaging, AnEvictorGetsASlotWhereTheBufferCanSpareIt) {
  const std::size_t page = 16 * system_page_size();
  Config config = small_config(page, 1024, 1);  // 64 KiB pages, a 64 MiB buffer: a 32nd of it is 2 MiB
  config.direct_io = true;
  PageMemory plan = plan_page_memory(config);
  EXPECT_EQ(plan.write_staging_slots, 1u);
  EXPECT_EQ(plan.write_staging_bytes, std::size_t{2} << 20);
  config.direct_io = false;
  const PageMemory without = plan_page_memory(config);
  EXPECT_EQ(without.write_staging_slots, 0u);
  EXPECT_EQ(without.resident_units - plan.resident_units, (std::uint64_t{2} << 20) / plan.unit) << "out of the buffer";
  config.direct_io = true;
  config.evictors = 2;  // a 64th each: 1 MiB, less than a huge page
  EXPECT_EQ(plan_page_memory(config).write_staging_slots, 0u);
  config = small_config(page, 1 << 14, 2);  // a 1 GiB buffer: 8 MiB each, the longest run
  config.direct_io = true;
  plan = plan_page_memory(config);
  EXPECT_EQ(plan.write_staging_slots, 2u);
  EXPECT_EQ(plan.write_staging_bytes, std::size_t{8} << 20);
  config.page_size = kHugePageSize;
  EXPECT_EQ(plan_page_memory(config).write_staging_slots, 2u);
  config.huge_pages = HugePages::kAuto;  // regions in huge pages: contiguous already
  EXPECT_EQ(plan_page_memory(config).write_staging_slots, 0u);
}

// A direct-I/O file that records the largest write and how many writes came from outside the mapped region.
class DirectFileRecordingWrites final : public Store {
 public:
  explicit DirectFileRecordingWrites(const std::string& path) : file_(make_file_store(path, direct())) {}
  ssize_t read(void* dst, std::size_t n, std::uint64_t offset) override { return file_->read(dst, n, offset); }
  ssize_t write(const void* src, std::size_t n, std::uint64_t offset) override {
    std::uint64_t seen = largest_write.load();
    while (n > seen && !largest_write.compare_exchange_weak(seen, n)) {
    }
    const auto* from = static_cast<const char*>(src);
    if (from < region_begin.load() || from >= region_end.load()) staged_writes.fetch_add(1);
    return file_->write(src, n, offset);
  }
  std::uint64_t size() const override { return file_->size(); }
  bool direct_io() const override { return file_->direct_io(); }

  std::atomic<std::uint64_t> largest_write{0};
  std::atomic<std::uint64_t> staged_writes{0};
  std::atomic<const char*> region_begin{nullptr};
  std::atomic<const char*> region_end{nullptr};

 private:
  static FileStoreOptions direct() {
    FileStoreOptions options;
    options.direct = true;
    return options;
  }
  std::shared_ptr<Store> file_;
};

std::uint64_t word_written(std::uint64_t i) { return i * 0x9E3779B97F4A7C15ull + 11; }

// A writer of every word of a file half as large again as the buffer, whose last page is partial: evictions and
// the flush write runs of up to 8 MiB in pieces of the 2 MiB slot, and the file holds every word written.
TEST(WriteBackStaging, RunsOfDirtyPagesReachTheFileThroughTheSlot) {
  AUTOPAGER_REQUIRE_USERFAULTFD();
  const std::size_t page = 16 * system_page_size();
  const std::uint64_t size = 1536 * page + 504;
  ScratchFile file(size, 3);
  if (std::string why = testing::direct_io_missing(file); !why.empty()) GTEST_SKIP() << why;
  auto store = std::make_shared<DirectFileRecordingWrites>(file.path());
  Config config = small_config(page, 1024, 1);
  config.direct_io = true;
  Pager pager(config);
  auto* words = static_cast<std::uint64_t*>(pager.map(store, size));
  ASSERT_NE(words, nullptr);
  store->region_begin.store(reinterpret_cast<const char*>(words));
  store->region_end.store(reinterpret_cast<const char*>(words) + size);
  for (std::uint64_t i = 0; i < size / 8; ++i) words[i] = word_written(i);
  EXPECT_GT(pager.stats().evictions, 400u);
  ASSERT_EQ(pager.flush(words), 0);
  EXPECT_GT(store->staged_writes.load(), 0u);
  EXPECT_EQ(store->largest_write.load(), std::uint64_t{2} << 20) << "runs written a slot at a time";
  ASSERT_TRUE(pager.unmap(words));
  const std::vector<std::uint8_t> after = file.contents();
  ASSERT_EQ(after.size(), size);
  std::uint64_t wrong = 0;
  for (std::uint64_t i = 0; i < size / 8; ++i) {
    std::uint64_t word;
    std::memcpy(&word, after.data() + 8 * i, 8);
    wrong += word != word_written(i);
  }
  EXPECT_EQ(wrong, 0u);
}

}  // namespace
}  // namespace autopager

// The region under test: a store (the data file, or memory filled beforehand) mapped by autopager.
#include <sys/mman.h>

#include <algorithm>
#include <autopager/autopager.hpp>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "mapping.hpp"

namespace bench {
namespace {

autopager::Config pager_config(const Options& o) {
  autopager::Config c = autopager::Config::defaults();
  if (o.page_size) c.page_size = o.page_size;
  if (o.fillers) c.fillers = o.fillers;
  if (o.evictors) c.evictors = o.evictors;
  if (o.buffer_mib) c.buffer_pages = (o.buffer_mib << 20) / c.page_size;
  if (o.max_fault_events) c.max_fault_events = o.max_fault_events;
  if (o.high_water) c.evict_high_water = o.high_water;
  if (o.low_water) c.evict_low_water = o.low_water;
  c.read_ahead = o.read_ahead;
  return c;
}

// A memory store whose every byte has been written, so that filling a page never faults on the store's
// own (untouched, zero-page) memory.
std::shared_ptr<autopager::Store> filled_memory_store(std::uint64_t size) {
  auto store = autopager::make_memory_store(size);
  std::vector<unsigned char> chunk(1 << 20);
  for (std::uint64_t offset = 0; offset < size; offset += chunk.size()) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(chunk.size(), size - offset));
    std::fill(chunk.begin(), chunk.end(), static_cast<unsigned char>(offset >> 20));
    if (store->write(chunk.data(), n, offset) != static_cast<ssize_t>(n))
      throw std::runtime_error("filling the memory store failed");
  }
  return store;
}

class PagerMapping final : public Mapping {
 public:
  explicit PagerMapping(const Options& o) : pager_(pager_config(o)) {
    if (o.store == StoreKind::memory) {
      store_ = filled_memory_store(o.size);
    } else {
      autopager::FileStoreOptions fo;
      fo.writable = false;
      fo.direct = o.direct;
      store_ = autopager::make_file_store(o.file, fo);
    }
    length_ = static_cast<std::size_t>(o.size ? std::min<std::uint64_t>(o.size, store_->size()) : store_->size());
    unit_ = pager_.config().page_size;
    base_ = static_cast<char*>(pager_.map(store_, length_, PROT_READ));
  }

  void prefetch(char* const* pages, std::size_t count) override {
    pager_.prefetch(reinterpret_cast<void* const*>(pages), count);
  }

  void describe(JsonLine& out) const override {
    const autopager::Config& c = pager_.config();
    const autopager::Stats s = pager_.stats();
    out.add("page_size", static_cast<std::uint64_t>(c.page_size))
        .add("fillers", c.fillers)
        .add("evictors", c.evictors)
        .add("buffer_pages", static_cast<std::uint64_t>(c.buffer_pages))
        .add("read_ahead", c.read_ahead)
        .add("max_fault_events", c.max_fault_events)
        .add("evict_high_water", c.evict_high_water)
        .add("evict_low_water", c.evict_low_water)
        .add("read_faults", static_cast<std::uint64_t>(s.read_faults))
        .add("fills", static_cast<std::uint64_t>(s.fills))
        .add("bytes_read", static_cast<std::uint64_t>(s.bytes_read))
        .add("evictions", static_cast<std::uint64_t>(s.evictions))
        .add("fault_service_mean_us", s.fault_service_mean_us)
        .add("fault_service_p99_us", s.fault_service_p99_us);
  }

 private:
  autopager::Pager pager_;
  std::shared_ptr<autopager::Store> store_;
};

}  // namespace

std::unique_ptr<Mapping> make_pager_mapping(const Options& options) {
  return std::make_unique<PagerMapping>(options);
}

}  // namespace bench

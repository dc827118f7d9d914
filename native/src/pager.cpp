#include "autopager/pager.hpp"

#include <sys/mman.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <set>
#include <stdexcept>
#include <system_error>

#include "buffer.hpp"
#include "evict.hpp"
#include "fill.hpp"
#include "paging.hpp"
#include "region_table.hpp"
#include "stats_counters.hpp"
#include "uffd.hpp"

namespace autopager {

class PagerImpl {
 public:
  explicit PagerImpl(const Config& config)
      : config_(validated(config)),
        buffer_(config_.buffer_pages, config_.evict_high_water, config_.evict_low_water, make_fifo_policy()),
        paging_(config_, uffd_, buffer_, stats_),
        fillers_(config_, uffd_, paging_, regions_, stats_),
        evictors_(config_.evictors, buffer_, paging_) {
    register_live(this);
  }

  ~PagerImpl() {
    unregister_live(this);
    for (const RegionPtr& region : regions_.all()) unmap(region->base);
    if (print_stats_requested()) std::fprintf(stderr, "autopager stats: %s\n", stats().to_json().c_str());
  }

  void* map(std::shared_ptr<Store> store, std::size_t length, int prot) {
    if (length == 0) throw std::invalid_argument("cannot map a region of length 0");
    if (!store) throw std::invalid_argument("cannot map a region without a store");
    if ((prot & ~(PROT_READ | PROT_WRITE)) != 0 || (prot & PROT_READ) == 0)
      throw std::invalid_argument("prot must be PROT_READ or PROT_READ|PROT_WRITE");
    const bool writable = (prot & PROT_WRITE) != 0;
    if (writable && !store->writable())
      throw std::invalid_argument("cannot map a read-only store with PROT_WRITE");
    if (!store->can_grow() && length > store->size())
      throw std::invalid_argument("a region of " + std::to_string(length) + " bytes does not fit its store of " +
                                  std::to_string(store->size()) + " bytes");
    const std::size_t page = config_.page_size;
    const std::size_t mapped = (length + page - 1) / page * page;
    void* base = mmap(nullptr, mapped, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "mmap of the region");
    const bool track_writes = writable && uffd_.has_write_protect();
    try {
      uffd_.register_range(base, mapped, track_writes);
    } catch (...) {
      munmap(base, mapped);
      throw;
    }
    regions_.add(std::make_shared<Region>(next_region_id_++, static_cast<char*>(base), length, page,
                                          std::move(store), writable, track_writes,
                                          ReadAheadStreams::for_config(config_)));
    return base;
  }

  bool unmap(void* base, const std::function<bool()>* map_over = nullptr) {
    RegionPtr region = regions_.remove(base);
    if (!region) return false;
    region->closing.store(true);
    int err = paging_.release_region(*region);
    if (map_over != nullptr && (*map_over)()) {
      // The registered range is gone with the old mapping: its waiting faults are woken to retry.
      uffd_.wake(region->base, region->mapped_length());
    } else {
      if (map_over != nullptr && err == 0) err = errno != 0 ? errno : EINVAL;
      uffd_.unregister_range(region->base, region->mapped_length());
      munmap(region->base, region->mapped_length());
    }
    if (err != 0) errno = err;
    return err == 0;
  }

  int flush(const RegionPtr& region) {
    int first_error = 0;
    for (std::uint64_t page = 0; page < region->page_count; ++page) {
      if (region->state(page) != PageState::kDirty) continue;
      int err = paging_.write_back(*region, page);
      if (err != 0 && first_error == 0) first_error = err;
    }
    return first_error;
  }

  int flush_all() {
    int first_error = 0;
    for (const RegionPtr& region : regions_.all()) {
      int err = flush(region);
      if (err != 0 && first_error == 0) first_error = err;
    }
    return first_error;
  }

  void prefetch(void* const* addresses, std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) {
      RegionPtr region = regions_.find(addresses[i]);
      if (region) fillers_.prefetch(PageRef{region, region->page_of(addresses[i])});
    }
  }

  Stats stats() const { return stats_.snapshot(buffer_.resident()); }
  const Config& config() const { return config_; }
  bool has_write_protect() const { return uffd_.has_write_protect(); }
  const RegionTable& regions() const { return regions_; }

  // Every write reaches its store at a normal exit, even if the program never unmaps.
  static void flush_live_pagers() {
    std::lock_guard<std::mutex> lock(live_mutex());
    for (PagerImpl* pager : live()) {
      pager->flush_all();
      if (print_stats_requested()) std::fprintf(stderr, "autopager stats: %s\n", pager->stats().to_json().c_str());
    }
  }

 private:
  static Config validated(const Config& config) {
    config.validate();
    return config;
  }
  static bool print_stats_requested() {
    const char* v = std::getenv("UMAP_PRINT_STATS");
    return v != nullptr && std::strcmp(v, "0") != 0 && *v != '\0';
  }
  static std::mutex& live_mutex() {
    static std::mutex m;
    return m;
  }
  static std::set<PagerImpl*>& live() {
    static std::set<PagerImpl*>* pagers = new std::set<PagerImpl*>();  // outlives static destructors
    return *pagers;
  }
  static void register_live(PagerImpl* pager) {
    static std::once_flag once;
    std::call_once(once, [] { std::atexit(flush_live_pagers); });
    std::lock_guard<std::mutex> lock(live_mutex());
    live().insert(pager);
  }
  static void unregister_live(PagerImpl* pager) {
    std::lock_guard<std::mutex> lock(live_mutex());
    live().erase(pager);
  }

  const Config config_;
  Userfaultfd uffd_;
  StatsCounters stats_;
  Buffer buffer_;
  Paging paging_;
  RegionTable regions_;
  std::atomic<std::uint64_t> next_region_id_{1};
  // Threads last: they stop before the state they use is destroyed.
  FillerPool fillers_;
  EvictorPool evictors_;
};

Pager::Pager(const Config& config) : impl_(std::make_unique<PagerImpl>(config)) {}
Pager::~Pager() = default;

void* Pager::map(std::shared_ptr<Store> store, std::size_t length, int prot) {
  return impl_->map(std::move(store), length, prot);
}
bool Pager::unmap(void* base) { return impl_->unmap(base); }
bool Pager::hand_over(void* base, const std::function<bool()>& map_over) { return impl_->unmap(base, &map_over); }
int Pager::flush() {
  int err = impl_->flush_all();
  if (err != 0) errno = err;
  return err == 0 ? 0 : -1;
}
int Pager::flush(void* base) {
  RegionPtr region = impl_->regions().find(base);
  if (!region) {
    errno = EINVAL;
    return -1;
  }
  int err = impl_->flush(region);
  if (err != 0) errno = err;
  return err == 0 ? 0 : -1;
}
void Pager::prefetch(void* const* addresses, std::size_t count) { impl_->prefetch(addresses, count); }
Stats Pager::stats() const { return impl_->stats(); }
const Config& Pager::config() const { return impl_->config(); }
bool Pager::has_write_protect() const { return impl_->has_write_protect(); }
void* Pager::region_base(const void* address, std::size_t* length) const {
  RegionPtr region = impl_->regions().find(address);
  if (!region) return nullptr;
  if (length != nullptr) *length = region->length;
  return region->base;
}

const char* version() { return AUTOPAGER_VERSION; }
const char* read_path() { return AUTOPAGER_READ_PATH; }

}  // namespace autopager

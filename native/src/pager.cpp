#include "autopager/pager.hpp"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "buffer.hpp"
#include "evict.hpp"
#include "filler_pool.hpp"
#include "huge_pages.hpp"
#include "keeper_link.hpp"
#include "monitor.hpp"
#include "page_memory.hpp"
#include "paging.hpp"
#include "region_table.hpp"
#include "stats_counters.hpp"
#include "uffd.hpp"

namespace autopager {
namespace {
// The exit status of a normal exit that left pages unwritten (sysexits.h's EX_IOERR).
constexpr int kUnwrittenAtExit = 74;

// Counts the forks this process descends from: a pager made in an earlier generation was inherited.
std::atomic<unsigned> fork_generation{0};

std::size_t round_up(std::size_t n, std::size_t unit) { return (n + unit - 1) / unit * unit; }

}  // namespace

class PagerImpl {
 public:
  explicit PagerImpl(const Config& config)
      : memory_(plan_page_memory(validated(config))),
        config_(with_fillers(config, memory_.fillers)),
        buffer_(memory_.resident_units, config_.evict_high_water, config_.evict_low_water,
                make_eviction_policy(config_.eviction, memory_.resident_units,
                                     memory_.resident_units * config_.evict_retain / 100),
                memory_.buffer_units),
        paging_(config_, uffd_, buffer_, stats_, memory_),
        fillers_(config_, memory_, uffd_, paging_, regions_, stats_),
        evictors_(config_.evictors, memory_, config_.page_size, buffer_, paging_),
        monitor_(config_.monitor_interval,
                 [this] { std::fprintf(stderr, "autopager monitor: %s\n", stats().to_json().c_str()); }) {
    register_live(this);
    if (config_.fillers != config.fillers)
      log(LogLevel::kWarning, "fillers (UMAP_PAGE_FILLERS) = " + std::to_string(config.fillers) + " reduced to " +
                                  std::to_string(config_.fillers) + ": a buffer of " +
                                  std::to_string(config_.buffer_pages) +
                                  " pages gives the fillers' read slots at most a quarter of it");
    log(LogLevel::kInfo, "pager started: " + config_.to_string() + "; the buffer holds " +
                             std::to_string(memory_.resident_units * memory_.unit) + " bytes of resident pages and " +
                             std::to_string(config_.fillers) + " fillers' " + std::to_string(memory_.read_slots) +
                             " read slots each" + (huge_pages_ ? "; regions in 2 MiB huge pages" : "") +
                             (memory_.run_slots > 0 ? " and " + std::to_string(memory_.run_slots) +
                                                          " for runs of " + std::to_string(memory_.run_bytes) + " bytes"
                                                    : std::string()));
  }

  ~PagerImpl() {
    unregister_live(this);
    if (print_stats_requested()) std::fprintf(stderr, "autopager stats: %s\n", stats().to_json().c_str());
    log(LogLevel::kInfo, "pager stopped");
  }

  // Unmaps every region; false (with the regions whose pages could not be written still mapped) when
  // a write-back failed.
  bool unmap_all() {
    bool all = true;
    for (const RegionPtr& region : regions_.all()) all = unmap(region->base) && all;
    return all;
  }

  bool inherited() const { return generation_ != fork_generation.load(std::memory_order_acquire); }

  void* map(std::shared_ptr<Store> store, std::size_t length, int prot, void* address) {
    if (inherited())
      throw std::system_error(EINVAL, std::generic_category(),
                              "this pager was inherited through fork(); a child process must create a pager of its own");
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
    if (length > std::numeric_limits<std::size_t>::max() - config_.page_size)
      throw std::invalid_argument("a region of " + std::to_string(length) + " bytes is larger than any address space");
    // A region smaller than a page is one page of its own length: a large page over a small file
    // would otherwise cost the whole page in the buffer and in the fillers' staging.
    // Huge pages: the region's pages are whole huge pages (use_huge_pages: page_size is their multiple).
    const std::size_t page =
        std::min(config_.page_size_for(writable), round_up(length, huge_pages_ ? kHugePageSize : system_page_size()));
    const std::size_t mapped = round_up(length, page);
    char* base = address != nullptr ? map_fixed(address, mapped, page, prot) : map_aligned(mapped, page, prot);
    std::unique_ptr<KeptMemory> kept;
    try {
      kept = keep_writes(*store, writable, base, mapped / page, page, length, prot);
    } catch (...) {
      munmap(base, mapped);
      throw;
    }
    const bool shared_or_huge = kept != nullptr || huge_pages_;
    const bool track_writes = writable && (shared_or_huge ? uffd_.has_shared_write_protect() : uffd_.has_write_protect());
    const bool direct_io = store->direct_io();
    try {
      // A forked child must neither see the region (its pages would read as zeros there) nor reach
      // the parent's pages through it: the child has no mapping here at all.
      if (madvise(base, mapped, MADV_DONTFORK) != 0)
        throw std::system_error(errno, std::generic_category(), "madvise(MADV_DONTFORK) of the region");
      uffd_.register_range(base, mapped, track_writes ? WriteProtect::kYes : WriteProtect::kNo);
    } catch (...) {
      munmap(base, mapped);
      throw;
    }
    const bool kept_writes = kept != nullptr;
    const std::uint64_t run_pages = memory_.run_pages(page);
    auto region = std::make_shared<Region>(next_region_id_++, base, length, page, memory_.units_of(page),
                                           std::move(store), writable, track_writes,
                                           ReadAheadStreams::for_region(config_, page, run_pages), std::move(kept));
    buffer_.map_units(region->total_units());
    regions_.add(std::move(region));
    log(LogLevel::kInfo, "mapped " + std::to_string(length) + " bytes at " + address_text(base) + " in pages of " +
                             std::to_string(page) + " bytes" +
                             (huge_pages_ ? ", in 2 MiB huge pages" : "") +
                             (kept_writes ? ", its writes kept through the process's death" : "") +
                             (direct_io ? ", read and written with O_DIRECT" : ""));
    return base;
  }

  // The shared page memory of a writable region whose writes must outlive the process (keep_writes), or
  // null for anonymous memory: where the store is not one file that outlives it, or where the kernel cannot
  // write-protect shared memory or there is no keeper (a WARNING, once a process: its writes then live
  // only as long as the process, as without keep_writes).
  std::unique_ptr<KeptMemory> keep_writes(const Store& store, bool writable, char* base, std::uint64_t page_count,
                                          std::size_t page, std::size_t length, int prot) const {
    int fd = -1;
    std::uint64_t offset = 0;
    if (!config_.keep_writes || huge_pages_ || !writable || !store.outlives_process() || !store.backing_file(fd, offset))
      return nullptr;
    static std::atomic<bool> warned{false};
    std::string why;
    if (!uffd_.has_shared_write_protect()) {
      why = "the kernel cannot write-protect shared memory through userfaultfd (Linux 6.0+)";
    } else {
      try {
        return std::make_unique<KeptMemory>(base, page_count, page, length, prot, fd, offset);
      } catch (const KeeperUnavailable& e) {
        why = e.what();
      }
    }
    if (!warned.exchange(true))
      log(LogLevel::kWarning, "writes cannot be kept through the process's death (keep_writes, UMAP_KEEP_WRITES): " +
                                  why + "; dirty pages not yet written back are lost if the process is killed or "
                                  "ends without exit() (set UMAP_KEEP_WRITES=0 to say so and silence this)");
    return nullptr;
  }

  bool unmap(void* base, const std::function<bool()>* map_over = nullptr,
             Paging::DirtyPages dirty_pages = Paging::DirtyPages::kWriteBack) {
    if (inherited()) {
      errno = EINVAL;
      return false;
    }
    RegionPtr region = regions_.remove(base);
    if (!region) {
      errno = EINVAL;
      return false;
    }
    region->closing.store(true);
    if (int err = paging_.release_region(*region, dirty_pages); err != 0) {
      // Pages that could not be written stay, and so does the region, for the caller to try again
      // (and the exit to report). Faults that came while it was closing wait: wake them.
      paging_.reopen_region(*region);
      regions_.add(region);
      uffd_.wake(region->base, region->mapped_length());
      errno = err;
      return false;
    }
    int err = 0;
    if (map_over != nullptr && (*map_over)()) {
      // The registered range is gone with the old mapping: its waiting faults are woken to retry.
      uffd_.wake(region->base, region->mapped_length());
    } else {
      if (map_over != nullptr) err = errno != 0 ? errno : EINVAL;
      uffd_.unregister_range(region->base, region->mapped_length());
      // Freed now rather than when the keeper closes its descriptor of the memory.
      if (region->kept) KeptMemory::drop({{region->base, region->mapped_length()}});
      munmap(region->base, region->mapped_length());
    }
    if (std::uint64_t pinned = region->pinned_count()) {
      std::lock_guard<std::mutex> lock(pin_mutex_);
      pinned_units_ -= pinned * region->units;
    }
    buffer_.unmap_units(region->total_units());
    log(LogLevel::kInfo, "unmapped the region at " + address_text(region->base));
    if (err != 0) errno = err;
    return err == 0;
  }

  int fetch_and_pin(void* address, std::size_t length) {
    RegionPtr region = inherited() ? nullptr : regions_.find(address);
    if (!region) return EINVAL;
    char* start = static_cast<char*>(address);
    char* end = start + std::min<std::size_t>(length, region->base + region->length - start);
    if (end <= start) return 0;
    const std::uint64_t first = region->page_of(start), last = region->page_of(end - 1);
    {
      std::lock_guard<std::mutex> lock(pin_mutex_);
      std::uint64_t more = 0;
      for (std::uint64_t page = first; page <= last; ++page) more += region->pinned(page) ? 0 : region->units;
      if (pinned_units_ + more > buffer_.low_water()) {
        log(LogLevel::kError, "cannot pin " + std::to_string(more * memory_.unit) +
                                  " more bytes: pinned pages may take at most " +
                                  std::to_string(buffer_.low_water() * memory_.unit) + " of the buffer's " +
                                  std::to_string(buffer_.capacity() * memory_.unit) + " bytes (the low water mark)");
        return ENOMEM;
      }
      // Pinned before they are read: an evictor never takes one, whenever it comes in.
      for (std::uint64_t page = first; page <= last; ++page) pinned_units_ += region->pin(page) ? region->units : 0;
    }
    // A read of each page's first byte faults it in, served as any fault is.
    for (std::uint64_t page = first; page <= last; ++page)
      (void)*static_cast<volatile const char*>(region->page_address(page));
    log(LogLevel::kDebug, "pinned pages " + std::to_string(first) + " to " + std::to_string(last) + " of the region at " +
                              address_text(region->base));
    return 0;
  }

  // Returns 0 or the errno of the first write-back that failed; counts into `unwritten` the pages
  // that could not be written.
  int flush(const RegionPtr& region, std::uint64_t* unwritten = nullptr) {
    if (inherited()) return 0;  // nothing of it is mapped in this process
    int first_error = 0;
    // A page in transit may be in its eviction's write-back, which can fail and leave it dirty: write_back
    // waits for that under the page's lock. Consecutive ones go together, each run of them with one write.
    auto to_write = [&](std::uint64_t page) {
      const PageState state = region->state(page);
      return state == PageState::kDirty || state == PageState::kEvicting;
    };
    const std::uint64_t most = std::max<std::uint64_t>(1, Paging::kMostRunBytes / region->page_size);
    for (std::uint64_t page = 0; page < region->page_count; ++page) {
      if (!to_write(page)) continue;
      std::uint64_t end = page + 1;
      while (end < region->page_count && end - page < most && to_write(end)) ++end;
      int err = paging_.write_back(*region, page, end - page, unwritten);
      if (err != 0 && first_error == 0) first_error = err;
      page = end - 1;
    }
    return first_error;
  }

  // kOutlivingProcess: only the regions whose stores outlive the process (at exit).
  enum class Regions { kAll, kOutlivingProcess };
  int flush_all(Regions which = Regions::kAll, std::uint64_t* unwritten = nullptr) {
    if (inherited()) return 0;
    log(LogLevel::kDebug, "flushing every region");
    int first_error = 0;
    for (const RegionPtr& region : regions_.all()) {
      if (which == Regions::kOutlivingProcess && !region->store->outlives_process()) continue;
      int err = flush(region, unwritten);
      if (err != 0 && first_error == 0) first_error = err;
    }
    return first_error;
  }

  void prefetch(void* const* addresses, std::size_t count) {
    if (inherited()) return;
    for (std::size_t i = 0; i < count; ++i) {
      RegionPtr region = regions_.find(addresses[i]);
      if (region) fillers_.prefetch(PageRef{region, region->page_of(addresses[i])});
    }
  }

  Stats stats() const {
    Stats s = stats_.snapshot(buffer_.resident() * memory_.unit);
    s.peak_resident_bytes = buffer_.peak_resident() * memory_.unit;
    s.page_size = config_.page_size;
    s.read_only_page_size = config_.page_size_for(false);
    s.read_ahead_run_bytes = memory_.run_bytes;
    const PolicyStats policy = buffer_.policy().stats();
    s.policy_refaults = policy.refaults;
    s.policy_promotions = policy.promotions;
    s.policy_second_chances = policy.second_chances;
    s.policy_demotions = policy.demotions;
    return s;
  }
  const Config& config() const { return config_; }
  bool has_write_protect() const { return uffd_.has_write_protect(); }
  const RegionTable& regions() const { return regions_; }

  // Every write reaches its store at a normal exit, even if the program never unmaps; a forked child
  // has none of its parent's pages to write. Pages that cannot be written are reported in one message,
  // and the exit status becomes kUnwrittenAtExit.
  static void flush_live_pagers() {
    std::uint64_t unwritten = 0;
    int first_error = 0;
    {
      std::lock_guard<std::mutex> lock(live_mutex());
      for (PagerImpl* pager : live()) {
        if (pager->inherited()) continue;
        int err = pager->flush_all(Regions::kOutlivingProcess, &unwritten);
        if (err != 0 && first_error == 0) first_error = err;
        if (print_stats_requested()) std::fprintf(stderr, "autopager stats: %s\n", pager->stats().to_json().c_str());
      }
    }
    if (unwritten == 0) return;
    keeper_link::reported();  // the keeper tries those pages once more after the exit, quietly
    std::fprintf(stderr,
                 "autopager: %llu dirty page(s) could not be written back at exit (%s): their changes are lost; "
                 "exit status %d\n",
                 static_cast<unsigned long long>(unwritten), std::strerror(first_error), kUnwrittenAtExit);
    std::fflush(nullptr);
    _exit(kUnwrittenAtExit);
  }

 private:
  static const Config& validated(const Config& config) {
    config.validate();
    return config;
  }
  static Config with_fillers(Config config, unsigned fillers) {
    config.fillers = fillers;
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
    std::call_once(once, [] {
      std::atexit(flush_live_pagers);
      pthread_atfork(lock_for_fork, unlock_after_fork, start_child_generation);
    });
    std::lock_guard<std::mutex> lock(live_mutex());
    live().insert(pager);
  }
  static void unregister_live(PagerImpl* pager) {
    std::lock_guard<std::mutex> lock(live_mutex());
    live().erase(pager);
  }

 public:
  // fork(): the locks a child may take (live pagers, the default pager) are held across it, so that
  // the child gets them free; the child then marks every pager it inherited as such. The pagers' other
  // locks the child never takes: an inherited pager does nothing. Inherited pagers stay in live(), so
  // they are still reachable (a leak checker does not see them as lost) and are never destroyed.
  static std::mutex& default_pager_mutex() {
    static std::mutex m;
    return m;
  }
  static void lock_for_fork() {
    default_pager_mutex().lock();
    live_mutex().lock();
    keeper_link::lock_for_fork();
  }
  static void unlock_after_fork() {
    keeper_link::unlock_after_fork();
    live_mutex().unlock();
    default_pager_mutex().unlock();
  }
  static void start_child_generation() {
    fork_generation.fetch_add(1, std::memory_order_acq_rel);
    keeper_link::start_child();
    live_mutex().unlock();
    default_pager_mutex().unlock();
  }

 private:
  char* map_aligned(std::size_t mapped, std::size_t page, int prot) const {
    // Over-reserve by a page and trim, so that the region starts on a page boundary as UMap's do.
    const std::size_t slack = page - system_page_size();
    void* area = mmap(nullptr, mapped + slack, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (area == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "mmap of the region");
    char* start = static_cast<char*>(area);
    char* base = reinterpret_cast<char*>(round_up(reinterpret_cast<std::uintptr_t>(start), page));
    if (base > start) munmap(start, base - start);
    if (start + mapped + slack > base + mapped) munmap(base + mapped, start + mapped + slack - (base + mapped));
    // Huge-page memory goes over the aligned range (reserved from no pool: the buffer bounds what it holds).
    if (huge_pages_ && mmap(base, mapped, prot, region_memory_flags(true), -1, 0) == MAP_FAILED) {
      const int err = errno;
      munmap(base, mapped);
      throw std::system_error(err, std::generic_category(), "mmap of the region's huge pages");
    }
    return base;
  }

  char* map_fixed(void* address, std::size_t mapped, std::size_t page, int prot) const {
    char* base = static_cast<char*>(address);
    if (reinterpret_cast<std::uintptr_t>(base) % page != 0)
      throw std::invalid_argument("a fixed address must be aligned to the page size " + std::to_string(page));
    for (const RegionPtr& region : regions_.all())
      if (base < region->base + region->mapped_length() && region->base < base + mapped)
        throw std::invalid_argument("a fixed address range overlaps a region of this pager");
    void* area = mmap(base, mapped, prot, region_memory_flags(huge_pages_), -1, 0);
    if (area == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "mmap of the region");
    return base;
  }

  static std::string address_text(const void* address) {
    char text[32];
    std::snprintf(text, sizeof text, "%p", address);
    return text;
  }

  void log(LogLevel level, const std::string& message) const {
    if (level <= config_.log_level) std::fprintf(stderr, "autopager [%s] %s\n", log_level_name(level), message.c_str());
  }

  const PageMemory memory_;
  const Config config_;
  const unsigned generation_ = fork_generation.load(std::memory_order_acquire);
  Userfaultfd uffd_;
  const bool huge_pages_ = use_huge_pages(config_, memory_.resident_units * memory_.unit, uffd_);
  StatsCounters stats_;
  Buffer buffer_;
  Paging paging_;
  RegionTable regions_;
  std::atomic<std::uint64_t> next_region_id_{1};
  std::mutex pin_mutex_;
  std::uint64_t pinned_units_ = 0;  // of the buffer; guarded by pin_mutex_
  // Threads last: they stop before the state they use is destroyed.
  FillerPool fillers_;
  EvictorPool evictors_;
  Monitor monitor_;
};

namespace {
std::vector<Pager*>& inherited_default_pagers() {
  static std::vector<Pager*>* pagers = new std::vector<Pager*>();  // kept reachable, never destroyed
  return *pagers;
}
Pager* default_pager_instance = nullptr;  // never destroyed: other static destructors may still fault
}  // namespace

Pager& default_pager() {
  std::lock_guard<std::mutex> lock(PagerImpl::default_pager_mutex());
  if (default_pager_instance != nullptr && default_pager_instance->inherited()) {
    inherited_default_pagers().push_back(default_pager_instance);
    default_pager_instance = nullptr;
  }
  if (default_pager_instance == nullptr) default_pager_instance = new Pager(Config::from_environment());
  return *default_pager_instance;
}

Pager::Pager(const Config& config) : impl_(std::make_unique<PagerImpl>(config)) {}
Pager::~Pager() {
  // An inherited pager's threads do not exist here and its locks may be held for ever: leave it be.
  // Dirty pages that could not be written are never dropped: the pager stays, with its threads and
  // those pages, and the exit writes them or reports them.
  if (impl_->inherited() || !impl_->unmap_all()) (void)impl_.release();
}

void* Pager::map(std::shared_ptr<Store> store, std::size_t length, int prot, void* address) {
  return impl_->map(std::move(store), length, prot, address);
}
int Pager::fetch_and_pin(void* address, std::size_t length) {
  int err = impl_->fetch_and_pin(address, length);
  if (err != 0) errno = err;
  return err == 0 ? 0 : -1;
}
bool Pager::inherited() const { return impl_->inherited(); }
bool Pager::unmap(void* base) { return impl_->unmap(base); }
bool Pager::discard(void* base) { return impl_->unmap(base, nullptr, Paging::DirtyPages::kDiscard); }
bool Pager::hand_over(void* base, const std::function<bool()>& map_over) { return impl_->unmap(base, &map_over); }
int Pager::flush() {
  int err = impl_->flush_all();
  if (err != 0) errno = err;
  return err == 0 ? 0 : -1;
}
int Pager::flush(void* base) {
  if (impl_->inherited()) return 0;
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
std::size_t Pager::mapped_length(const void* base) const {
  RegionPtr region = impl_->inherited() ? nullptr : impl_->regions().find(base);
  return region && region->base == base ? region->mapped_length() : 0;
}
void* Pager::region_base(const void* address, std::size_t* length) const {
  if (impl_->inherited()) return nullptr;
  RegionPtr region = impl_->regions().find(address);
  if (!region) return nullptr;
  if (length != nullptr) *length = region->length;
  return region->base;
}

const char* version() { return AUTOPAGER_VERSION; }
const char* read_path() { return AUTOPAGER_READ_PATH; }

}  // namespace autopager

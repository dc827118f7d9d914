// A pager: one userfaultfd, one buffer of at most buffer_pages pages, one pool of fillers and of
// evictors, serving any number of regions, each backed by a store.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <functional>
#include <memory>

#include "autopager/config.hpp"
#include "autopager/stats.hpp"
#include "autopager/store.hpp"

namespace autopager {

class PagerImpl;

class Pager {
 public:
  // Validates `config` (ConfigError) and opens a userfaultfd (std::system_error with what to change).
  explicit Pager(const Config& config = Config::from_environment());
  // Unmaps every region that is still mapped: every write reaches its store.
  ~Pager();
  Pager(const Pager&) = delete;
  Pager& operator=(const Pager&) = delete;

  // Maps `length` bytes of `store` at a new address and returns it. `prot` is PROT_READ or
  // PROT_READ|PROT_WRITE. Throws std::invalid_argument for a bad length or a store too small to hold
  // the region, std::system_error when the kernel refuses.
  void* map(std::shared_ptr<Store> store, std::size_t length, int prot = PROT_READ | PROT_WRITE);
  // Writes back the region's dirty pages and releases it. Returns false when `base` is not a region.
  bool unmap(void* base);
  // As unmap, but instead of unmapping the region's range, calls `map_over()`, which must put another
  // mapping over the whole range at once (mmap with MAP_FIXED) and return whether it did. Threads that
  // faulted in the region while it was released retry on that mapping; with write-protect a write
  // during the release waits for it too, so no write is lost. When map_over() fails the range is
  // unmapped as by unmap(). Returns false when `base` is not a region, a write-back failed or
  // map_over() failed (errno set).
  bool hand_over(void* base, const std::function<bool()>& map_over);
  // Writes back every dirty page (of every region, or of the region at `base`); pages stay resident,
  // write-protected again. Returns 0, or -1 with errno when a write failed.
  int flush();
  int flush(void* base);
  // Asks the fillers to bring in the pages holding these addresses; returns at once.
  void prefetch(void* const* addresses, std::size_t count);

  Stats stats() const;
  const Config& config() const;
  // Whether writes are tracked with userfaultfd write-protect (otherwise every page of a writable
  // region is written back on eviction).
  bool has_write_protect() const;
  // The region holding `address` and its length, or nullptr.
  void* region_base(const void* address, std::size_t* length = nullptr) const;

 private:
  std::unique_ptr<PagerImpl> impl_;
};

// The pager behind the UMap C API, configured from the environment on first use.
Pager& default_pager();

const char* version();
// How the fillers read: "io_uring" (asynchronous) or "synchronous" (built with AUTOPAGER_SYNC_READS).
const char* read_path();

}  // namespace autopager

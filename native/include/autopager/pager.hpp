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
  // Validates `config` (ConfigError), opens a userfaultfd and starts the threads (std::system_error:
  // what to change, or ENOMEM / EAGAIN when memory or threads ran out).
  explicit Pager(const Config& config = Config::from_environment());
  // Unmaps every region that is still mapped: every write reaches its store. A pager with pages it
  // cannot write back is kept (with those pages) until the exit, which writes or reports them.
  ~Pager();
  Pager(const Pager&) = delete;
  Pager& operator=(const Pager&) = delete;

  // Maps `length` bytes of `store` and returns the region's address, aligned to the page size (a region
  // smaller than a page gets one page of its own length, rounded up to the system page). `prot` is
  // PROT_READ or PROT_READ|PROT_WRITE. `address`, when not null, is where the region must go (as
  // MAP_FIXED: it replaces what is mapped there); it must be aligned to the page size and must not
  // overlap a region of this pager. Throws std::invalid_argument for a bad length or address or a store
  // too small to hold the region, std::system_error when the kernel refuses or this pager was
  // inherited through fork().
  void* map(std::shared_ptr<Store> store, std::size_t length, int prot = PROT_READ | PROT_WRITE,
            void* address = nullptr);
  // Writes back the region's dirty pages and releases it. Returns false with errno EINVAL when `base`
  // is not a region, or with the errno of a write-back that failed: the region then stays mapped,
  // with the pages that could not be written, and unmap can be tried again.
  bool unmap(void* base);
  // Releases the region without writing its dirty pages back: for a store whose contents are not wanted
  // once the region is gone (a program's heap block, freed). When it returns, none of the region's pages is
  // resident or counted dirty, and nothing of it is written to the store afterwards. Returns false with
  // errno EINVAL when `base` is not a region.
  bool discard(void* base);
  // As unmap, but instead of unmapping the region's range, calls `map_over()`, which must put another
  // mapping over the whole range at once (mmap with MAP_FIXED) and return whether it did. Threads that
  // faulted in the region while it was released retry on that mapping; with write-protect a write
  // during the release waits for it too, so no write is lost. When map_over() fails the range is
  // unmapped as by unmap(). Returns false when `base` is not a region, a write-back failed or
  // map_over() failed (errno set).
  bool hand_over(void* base, const std::function<bool()>& map_over);
  // Writes back every dirty page (of every region, or of the region at `base`); pages stay resident,
  // write-protected again. Returns 0, or -1 with errno when a write failed (those pages stay dirty).
  int flush();
  int flush(void* base);
  // Asks the fillers to bring in the pages holding these addresses; returns at once.
  void prefetch(void* const* addresses, std::size_t count);
  // Brings in the pages of [address, address + length) (cut at the end of its region) and pins them:
  // they are never evicted, until the region is unmapped. Returns 0, or -1 with errno: EINVAL when
  // `address` is in no region, ENOMEM when the pinned pages would exceed the low water mark's share of
  // the buffer (the evictors could then never drain it).
  int fetch_and_pin(void* address, std::size_t length);

  Stats stats() const;
  const Config& config() const;
  // Whether writes are tracked with userfaultfd write-protect (otherwise every page of a writable
  // region is written back on eviction).
  bool has_write_protect() const;
  // The region holding `address` and its length, or nullptr.
  void* region_base(const void* address, std::size_t* length = nullptr) const;
  // What the region at `base` spans in the address space (its length in whole pages of the region's
  // page size, which is smaller than page_size for a region shorter than a page), or 0.
  std::size_t mapped_length(const void* base) const;
  // True in a child process that inherited this pager through fork(). Such a pager serves nothing:
  // its regions are not mapped in the child (MADV_DONTFORK: a touch is SIGSEGV), flush() has nothing
  // to write, unmap() and region_base() know no region, map() fails; destroying it frees nothing, and
  // never touches the parent's file, regions or userfaultfd.
  bool inherited() const;

 private:
  std::unique_ptr<PagerImpl> impl_;
};

// The pager behind the UMap C API, configured from the environment on first use (in a forked child,
// again: the child gets a pager of its own).
Pager& default_pager();

const char* version();
// How the fillers read: "io_uring" (asynchronous) or "synchronous" (built with AUTOPAGER_SYNC_READS).
const char* read_path();

}  // namespace autopager

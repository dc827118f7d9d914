// A region: an address range whose pages the pager serves from one store, and the state of each page.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "autopager/store.hpp"
#include "kept_memory.hpp"
#include "read_ahead.hpp"

namespace autopager {

// kFilling: claimed by a filler whose read is in flight; the faulting threads wait for its copy.
// kEvicting: written back and about to be dropped, with others of an evictor's batch.
// kPoisoned: its read failed; any access raises SIGBUS until it is evicted (it holds no buffer slot
// and no memory, and is evicted in the policy's order like any page) or its region is unmapped, after
// which the next access reads it again.
// kVictim: evicted, clean, its contents kept in the victim buffer (victim_buffer.hpp) with its buffer slot: a
// fault installs it from there. See docs/DESIGN.md, "Pager: errors and page states".
enum class PageState : std::uint8_t {
  kAbsent = 0,
  kClean = 1,
  kDirty = 2,
  kFilling = 3,
  kEvicting = 4,
  kPoisoned = 5,
  kVictim = 6
};

struct Region : std::enable_shared_from_this<Region> {
  // `units`: what one of its pages takes of the buffer (PageMemory::units_of).
  Region(std::uint64_t id, char* base, std::size_t length, std::size_t page_size, std::uint64_t units,
         std::shared_ptr<Store> store, bool writable, bool track_writes, ReadAheadStreams read_ahead,
         std::unique_ptr<KeptMemory> kept = nullptr)
      : id(id),
        base(base),
        length(length),
        page_size(page_size),
        page_count((length + page_size - 1) / page_size),
        units(units),
        store(std::move(store)),
        writable(writable),
        track_writes(track_writes),
        read_ahead(read_ahead),
        kept(std::move(kept)),
        own_states(this->kept ? nullptr : new std::atomic<std::uint8_t>[page_count]()),
        states(this->kept ? this->kept->states() : own_states.get()),
        pins(new std::atomic<std::uint64_t>[(page_count + 63) / 64]()) {}

  const std::uint64_t id;
  char* const base;
  const std::size_t length;        // as asked; the mapping is rounded up to whole pages
  const std::size_t page_size;
  const std::uint64_t page_count;
  const std::uint64_t units;
  const std::shared_ptr<Store> store;
  const bool writable;
  const bool track_writes;         // pages are installed write-protected and made writable on first write
  std::atomic<bool> closing{false};
  // Claims of its pages under way (Paging::claim, claim_run): each counts from before it looks at `closing`
  // until every page it took units of the buffer for shows them (kFilling) or it gave them back. A closing
  // region's release waits for none (wait_for_claims): a claim that began before `closing` then has its pages
  // filling, where the release sees them, and every later one sees `closing` and takes nothing. A cache line
  // of its own: every fill writes it, and the fields around it are read on every fault.
  struct alignas(64) Claims {
    std::atomic<std::uint64_t> under_way{0};
  } claims;
  ReadAheadStreams read_ahead;     // guarded by the filler pool's lock
  // The page memory and states of a region whose writes outlive the process (shared with the keeper);
  // null for anonymous page memory and states of the region's own.
  const std::unique_ptr<KeptMemory> kept;

  std::size_t mapped_length() const { return page_count * page_size; }
  std::uint64_t total_units() const { return page_count * units; }  // of the buffer, were every page resident
  bool contains(const void* address) const {
    auto a = static_cast<const char*>(address);
    return a >= base && a < base + mapped_length();
  }
  std::uint64_t page_of(const void* address) const {
    return static_cast<std::uint64_t>(static_cast<const char*>(address) - base) / page_size;
  }
  char* page_address(std::uint64_t page) const { return base + page * page_size; }
  std::uint64_t page_offset(std::uint64_t page) const { return page * page_size; }
  // Bytes of the page that belong to the region (the last page may be partial).
  std::size_t page_bytes(std::uint64_t page) const {
    std::size_t off = page * page_size;
    return length - off < page_size ? length - off : page_size;
  }

  // Changed only under the page's stripe lock; read without it for fast paths.
  PageState state(std::uint64_t page) const {
    return static_cast<PageState>(states[page].load(std::memory_order_acquire));
  }
  void set_state(std::uint64_t page, PageState s) {
    states[page].store(static_cast<std::uint8_t>(s), std::memory_order_release);
  }
  bool resident(std::uint64_t page) const {
    PageState s = state(page);
    return s == PageState::kClean || s == PageState::kDirty;
  }
  // A filling or evicting page changes state within microseconds, without anyone's help.
  void wait_while_in_transit(std::uint64_t page) const;
  // Once `closing` is set: waits until no claim of its pages is under way (a demand claim waiting for room gives
  // up when it sees `closing`, so this waits for no eviction of other pages).
  void wait_for_claims() const;

  // A pinned page (umap_fetch_and_pin) is never evicted; it goes when its region is unmapped.
  bool pinned(std::uint64_t page) const { return (pins[page / 64].load(std::memory_order_acquire) >> (page % 64)) & 1; }
  std::uint64_t pinned_count() const {
    std::uint64_t n = 0;
    for (std::uint64_t word = 0; word < (page_count + 63) / 64; ++word)
      n += static_cast<std::uint64_t>(__builtin_popcountll(pins[word].load(std::memory_order_acquire)));
    return n;
  }
  // True when the page was not pinned before.
  bool pin(std::uint64_t page) {
    const std::uint64_t bit = 1ull << (page % 64);
    return (pins[page / 64].fetch_or(bit, std::memory_order_acq_rel) & bit) == 0;
  }

 private:
  std::unique_ptr<std::atomic<std::uint8_t>[]> own_states;
  std::atomic<std::uint8_t>* const states;
  std::unique_ptr<std::atomic<std::uint64_t>[]> pins;
};

using RegionPtr = std::shared_ptr<Region>;

struct PageRef {
  RegionPtr region;
  std::uint64_t page;
};

// Pages of a region for one speculative read: `count` of them from `lead` in `direction` (+1 up, -1
// down), `lead` being the one nearest the fault that read them ahead.
struct PageRun {
  RegionPtr region;
  std::uint64_t lead;
  std::uint64_t count;
  int direction;
  bool prefetch = false;  // asked for by umap_prefetch: read even where no stream goes
};

}  // namespace autopager

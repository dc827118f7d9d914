#include "read_around.hpp"

#include <algorithm>

namespace autopager {
namespace {

// The bits `n` takes (0 for 0): 2^bits > n.
unsigned bits_of(std::uint64_t n) { return n == 0 ? 0 : 64 - static_cast<unsigned>(__builtin_clzll(n)); }

unsigned scale_of_pages(std::uint64_t pages) { return pages <= 1 ? 0 : bits_of(pages) - 1; }  // the largest 2^k <= pages

}  // namespace

ReadAround::ReadAround(std::uint64_t most_pages, std::size_t page_bytes)
    : most_scale_(std::min(scale_of_pages(most_pages), kMostScale)), page_bytes_(page_bytes) {}

ReadAround::Block ReadAround::centred(std::uint64_t page, std::uint64_t page_count, std::uint64_t pages) const {
  pages = std::min(pages, page_count);
  const std::uint64_t before = std::min(page, pages / 2);
  std::uint64_t first = page - before;
  if (first + pages > page_count) first = page_count - pages;
  return Block{first, pages};
}

bool ReadAround::count(std::uint64_t page) {
  bool ended = false, near = false;
  for (Probe& probe : probes_) {
    if (!probe.active) continue;
    if (clock_ - probe.clock > kWindow) {
      probe.active = false;
      ++probes_ended_;
      ended = true;
      continue;
    }
    const std::uint64_t distance = page > probe.page ? page - probe.page : probe.page - page;
    if (distance == 0) continue;
    // The smallest centred block of 2^k pages holding both: k with 2^k > 2 * distance.
    const unsigned scale = bits_of(2 * distance);
    if (scale > most_scale_) continue;
    ++nearby_[scale];
    near = true;
  }
  if (ended) choose();
  return near;
}

void ReadAround::choose() {
  if (probes_ended_ >= kMemory) {
    for (std::uint64_t& n : nearby_) n /= 2;
    probes_ended_ /= 2;
  }
  chosen_scale_ = 0;
  if (probes_ended_ < kLeastProbes) return;
  // Expected faults saved by a block of 2^k pages: those that fell within it, a probe. Worth kFaultBytes each,
  // against the 2^k - 1 pages it adds.
  double best = 0;
  std::uint64_t within = 0;
  for (unsigned k = 1; k <= most_scale_; ++k) {
    within += nearby_[k];
    const double saved = static_cast<double>(within) / static_cast<double>(probes_ended_) * kFaultBytes;
    const double added = static_cast<double>((std::uint64_t{1} << k) - 1) * static_cast<double>(page_bytes_);
    if (saved - added > best) {
      best = saved - added;
      chosen_scale_ = k;
    }
  }
}

ReadAround::Block ReadAround::fault(std::uint64_t page, std::uint64_t page_count, bool isolated, bool fits) {
  // A probe's neighbours read their pages alone too: a block read around one would hide the faults after it.
  const bool near_probe = count(page);
  ++clock_;
  if (!isolated || most_scale_ == 0 || (near_probe && !fits)) return Block{page, 1};
  if (fits) return centred(page, page_count, std::uint64_t{1} << most_scale_);
  if (isolated_++ % kProbeEvery == 0) {
    for (Probe& probe : probes_) {
      if (probe.active) continue;
      probe = Probe{page, clock_, true};
      return Block{page, 1};
    }
  }
  return centred(page, page_count, chosen_pages());
}

}  // namespace autopager

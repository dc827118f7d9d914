// Regions' page memory in 2 MiB huge pages (Config::huge_pages): whether a pager can have it, and the flags
// of the mappings. docs/DESIGN.md, "Huge pages".
#pragma once

#include <cstdint>

#include "autopager/config.hpp"
#include "uffd.hpp"

namespace autopager {

// Whether a pager with `config`, `resident_bytes` of pages resident at most, serves its regions from huge pages.
// They need a page size of 2 MiB multiples, no keep_writes, userfaultfd's write-protect of hugetlb memory, and
// a pool of free, unreserved 2 MiB huge pages (/proc/sys/vm/nr_hugepages) that holds every resident page.
// off: false; auto: whether all of that holds; on: true, or ConfigError naming UMAP_HUGE_PAGES and what is missing.
bool use_huge_pages(const Config& config, std::uint64_t resident_bytes, Userfaultfd& uffd);

// Whether `config` asks for huge pages (on or auto) at a page size they can take: use_huge_pages's part that
// needs neither the pool nor the kernel.
bool may_use_huge_pages(const Config& config);

// The mmap flags of a region's private anonymous memory, MAP_FIXED included.
int region_memory_flags(bool huge_pages);

// The pool's 2 MiB huge pages that are free and not reserved by a mapping (0 where sysfs has no such pool).
std::uint64_t available_huge_pages();

}  // namespace autopager

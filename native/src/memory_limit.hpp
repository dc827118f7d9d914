// How much memory this process may still use: what the kernel reports as available, bounded by the
// memory cgroup it runs in (v1 memory.limit_in_bytes or v2 memory.max, of its own cgroup and every
// ancestor, less what each already uses apart from reclaimable file cache).
#pragma once

#include <cstdint>

namespace autopager {

// Bytes this process can still use: the smallest of available memory and every limit's headroom.
std::uint64_t usable_memory();

// The headroom under this process's memory cgroup limits alone; UINT64_MAX when none applies.
std::uint64_t cgroup_headroom();

}  // namespace autopager

// Anonymous memory for direct I/O: a disk request takes at most the device's segment limit of physically
// contiguous pieces (254 on this machine's virtio disk), so a direct read or write of 1 MiB through 256 scattered
// 4 KiB pages is split into several requests, where memory in transparent huge pages gives one request up to
// the device's largest (4 MiB here). Reads into such slots took a scan in 1 MiB pages from 1.1 to 1.5 GB/s
// (fault_bench); 8 MiB direct writes ran at 5.4-5.7 GB/s from it against 1.3-1.7 GB/s from 4 KiB pages.
#pragma once

#include <cstddef>

namespace autopager {

// Maps `bytes` of anonymous memory, aligned to and advised into transparent huge pages where it is at least
// one; it costs nothing until first touched. Throws std::bad_alloc when it cannot be mapped.
char* map_contiguous(std::size_t bytes);

}  // namespace autopager

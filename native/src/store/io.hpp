// Whole-buffer pread/pwrite on a descriptor: retried on EINTR and short transfers.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace autopager {

// Reads until `n` bytes or the end of the file; returns the bytes read or -1.
ssize_t read_fully(int fd, void* dst, std::size_t n, std::uint64_t offset);
// Writes all `n` bytes; returns n or -1.
ssize_t write_fully(int fd, const void* src, std::size_t n, std::uint64_t offset);

}  // namespace autopager

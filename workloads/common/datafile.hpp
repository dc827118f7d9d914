// Data files in the data directory: written once under a temporary name and renamed when complete (an
// interrupted generation is never mistaken for data), read back for checks, kept out of the page cache
// so a run after generation or a check starts cold.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>

namespace workloads {

// A missing, unreadable or malformed data file; the message names the file and how to make it.
class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// `dir`/`name`.
std::string data_path(const std::string& dir, const std::string& name);

// The size of `path`; throws DataError when it does not exist.
std::uint64_t file_size(const std::string& path);
bool file_exists(const std::string& path);

// Fills `buffer` with the `length` bytes of the file that start at `offset`.
using ChunkWriter = std::function<void(std::uint64_t offset, char* buffer, std::size_t length)>;
// Writes a `size`-byte file chunk by chunk (creating the directory), renames it to `path` when
// complete and drops it from the page cache. Shows progress for big files.
void write_file(const std::string& path, std::uint64_t size, const ChunkWriter& writer);
// For an input a run consumes (a sort's, STREAM's arrays): writes it over the existing file of that size in
// place, which costs no new blocks and no freeing of the old ones; else as write_file. A rewrite cut short
// leaves a file of mixed contents, which the next run rewrites whole.
void rewrite_file(const std::string& path, std::uint64_t size, const ChunkWriter& writer);

// Receives the bytes of a file in order, chunk by chunk.
using ChunkReader = std::function<void(std::uint64_t offset, const char* data, std::size_t length)>;
// Reads all of `path` with `reader` (chunks are multiples of `align` bytes, except the last), then drops
// it from the page cache.
void read_file(const std::string& path, const ChunkReader& reader, std::size_t align = 8);

// Receives a 64-bit word of a file and its index (the word at byte 8 * index).
using WordReader = std::function<void(std::uint64_t index, std::uint64_t word)>;
// Reads `samples` words of `path` spread evenly over it, the first and the last included (every word of a
// smaller file), in order, one pread each: a look at the whole file that costs little whatever its size.
// Returns a hash of the words read.
std::uint64_t read_sampled_words(const std::string& path, std::uint64_t samples, const WordReader& reader);

// Writes `path`'s dirty pages and asks the kernel to drop the file from its page cache, so that it is next
// read from the disk (pages mapped by some process stay). Does nothing when the file cannot be opened.
void drop_from_page_cache(const std::string& path);

}  // namespace workloads

// Backing stores: where a region's bytes live. A user can implement Store for any other medium.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace autopager {

class Store {
 public:
  virtual ~Store() = default;
  // Read up to `n` bytes at `offset`; returns the bytes read (fewer at the end of the store; the pager
  // zero-fills the rest) or -1 with errno set. Called concurrently from several threads.
  virtual ssize_t read(void* dst, std::size_t n, std::uint64_t offset) = 0;
  // Write all `n` bytes at `offset`; returns n or -1 with errno set. Called concurrently.
  virtual ssize_t write(const void* src, std::size_t n, std::uint64_t offset) = 0;
  // Current size in bytes.
  virtual std::uint64_t size() const = 0;
  // Whether the store accepts writes at all (a file opened read-only does not).
  virtual bool writable() const { return true; }
  // Whether writes past size() extend the store (a file does; a fixed buffer does not).
  virtual bool can_grow() const { return false; }
  // Make written bytes durable; returns 0 or -1 with errno set.
  virtual int sync() { return 0; }
  // Whether the bytes written outlive this process (a file's do; a scratch or memory store's do not,
  // so the exit neither writes nor reports their pages).
  virtual bool outlives_process() const { return true; }
  // Whether its file is read and written with O_DIRECT (whole, block-aligned pages bypass the page cache);
  // false where that was not asked for or the file system has no O_DIRECT (tmpfs before Linux 6.6).
  virtual bool direct_io() const { return false; }
  // The one file that holds the store's bytes, as a descriptor that takes writes of any alignment, and
  // where the store starts in it: what a keeper process needs to write back pages after this process
  // died (Config::keep_writes). False (the default) where the bytes are not one file's.
  virtual bool backing_file(int& fd, std::uint64_t& offset) const {
    (void)fd, (void)offset;
    return false;
  }

  // Where the bytes a read() of `n` at `offset` into `dst` would fetch lie in one file, so that the
  // pager can read them asynchronously (io_uring) instead of calling read(). Return false (the
  // default) when they do not lie in one file or read() must do more; the pager then calls read().
  struct FileExtent {
    int fd;
    std::uint64_t offset;
    std::size_t length;
  };
  virtual bool locate(const void* dst, std::size_t n, std::uint64_t offset, FileExtent& extent) const {
    (void)dst, (void)n, (void)offset, (void)extent;
    return false;
  }
};

// A file, or a window of it. `length` 0 means to the end of the file.
struct FileStoreOptions {
  bool writable = true;
  bool direct = false;        // O_DIRECT: bypass the kernel's page cache
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
};
// Opens `path`; throws std::system_error naming the path when it cannot.
std::shared_ptr<Store> make_file_store(const std::string& path, const FileStoreOptions& options = {});
// Uses an already open descriptor; the store closes it when destroyed if `take_ownership`. With
// options.direct, or a descriptor opened with O_DIRECT, aligned reads and writes bypass the page cache
// (through the file opened again with O_DIRECT) and unaligned ones go through it; on a file system
// without O_DIRECT (tmpfs) everything goes through the page cache.
std::shared_ptr<Store> make_fd_store(int fd, const FileStoreOptions& options = {}, bool take_ownership = false);

// Several files, each with its own offset and length, seen as one contiguous store in the given order.
struct FileSegment {
  std::string path;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;   // 0: to the end of the file
};
// `direct`: O_DIRECT for every file, as FileStoreOptions::direct.
std::shared_ptr<Store> make_multi_file_store(const std::vector<FileSegment>& segments, bool writable = true,
                                             bool direct = false);

// Bytes in this process's memory: a store that costs (almost) nothing, to measure the pager alone.
std::shared_ptr<Store> make_memory_store(std::uint64_t size);

// `length` bytes of `store` from `offset`, as a store of its own (writes past it: ENOSPC). Throws
// std::invalid_argument when the window does not fit in the store.
std::shared_ptr<Store> make_window_store(std::shared_ptr<Store> store, std::uint64_t offset, std::uint64_t length);

// Per-page compression of a store's bytes (Config::compression, UMAP_COMPRESSION).
enum class Compression : unsigned { none = 0, lz4 = 1, zstd = 2 };
const char* compression_name(Compression compression);
// The compression named `name` (none, lz4, zstd, any case; or its number 0, 1, 2, as the tuner writes it);
// false when there is none of that name.
bool parse_compression(const std::string& name, Compression* compression);
// `backing` with each whole unit of `unit` bytes (the pager's page size) stored compressed in its own slot
// (at unit * index) when that saves at least 1/8, raw otherwise; a table in memory of 4 bytes per unit says
// which. Units never written read raw, so existing bytes are read as they are; but what it writes is the data
// only through this store: it does not outlive the process. Throws std::runtime_error when the codec was not
// built in (liblz4, libzstd), std::invalid_argument for Compression::none or a unit of 0.
std::shared_ptr<Store> make_compressed_store(std::shared_ptr<Store> backing, Compression compression, std::size_t unit);

// An export of an NBD server (nbdkit, qemu-nbd...): network-attached memory or a remote disk. Needs libnbd
// (without it, make_nbd_store throws std::runtime_error saying so).
struct NbdStoreOptions {
  unsigned connections = 0;      // connections opened when the server allows several (multi-conn); 0: 4
  unsigned timeout_ms = 30000;   // a request (or the connecting) not answered within this fails, and so does
                                 // every later one on its connection (libnbd has no timeout of its own)
};
// Whether `text` is an NBD URI: nbd://, nbds://, nbd+unix://, nbds+unix://, nbd+vsock://.
bool is_nbd_uri(const std::string& text);
// Connects to `uri` (nbd://host[:port]/export, nbd+unix:///export?socket=PATH). The store's size is the
// export's; writes past it fail with ENOSPC, and every write to a read-only export with EROFS; sync() is NBD
// flush. A failed read or write returns -1 with errno (EIO, ETIMEDOUT, ...). Throws std::invalid_argument
// for what is not an NBD URI, std::runtime_error naming the URI when it cannot connect.
std::shared_ptr<Store> make_nbd_store(const std::string& uri, const NbdStoreOptions& options = {});
// What the front ends (umap_nbd, memmap, the workloads' --nbd) map for an NBD URI: the export, through
// make_compressed_store in units of `page_size` unless `compression` is none.
std::shared_ptr<Store> open_nbd_store(const std::string& uri, Compression compression, std::size_t page_size);

}  // namespace autopager

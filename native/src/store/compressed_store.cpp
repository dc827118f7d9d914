// Pages compressed on their way to and from another store (LZ4 or zstd), so that fewer bytes cross the link.
//
// Layout: slots. The backing store is cut into units of `unit` bytes (the pager's page size); unit i lives in
// the slot at i * unit, compressed from the slot's start, or raw over the whole slot. The only metadata is a
// table in this process's memory of one 32-bit length per whole unit (0: raw), so the bound is 4 bytes per
// unit: 64 KiB per GiB of store with 64 KiB pages, 1 MiB per GiB with 4 KiB pages. A unit that would not
// shrink to 7/8 of its size is stored raw (compression pays nothing there, as RDMA-UMap found), and a unit
// never written is raw: the store's existing bytes read as they are. The partial unit at the store's end, if
// any, is always raw.
//
// Since the table is in memory, the backing store's bytes are the data only through this store: the store
// does not outlive the process (outlives_process() is false), the backing store is this process's paging
// space while it runs.
#include <strings.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>
#include <vector>

#include "autopager/store.hpp"

#ifdef AUTOPAGER_HAVE_LZ4
#include <lz4.h>
#endif
#ifdef AUTOPAGER_HAVE_ZSTD
#include <zstd.h>
#endif

namespace autopager {

namespace {

constexpr const char* kCompressionNames[] = {"none", "lz4", "zstd"};
}  // namespace

const char* compression_name(Compression compression) { return kCompressionNames[static_cast<unsigned>(compression)]; }

bool parse_compression(const std::string& name, Compression* compression) {
  for (unsigned i = 0; i < sizeof kCompressionNames / sizeof *kCompressionNames; ++i) {
    if (strcasecmp(name.c_str(), kCompressionNames[i]) == 0 || name == std::to_string(i)) {
      *compression = static_cast<Compression>(i);
      return true;
    }
  }
  return false;
}

namespace {

// One codec's compress and decompress of a whole unit. compress returns the compressed length, or 0 when it
// does not fit in `capacity`; decompress returns whether `n` bytes decompressed to exactly `unit` bytes.
class Codec {
 public:
  virtual ~Codec() = default;
  virtual std::size_t bound(std::size_t unit) const = 0;
  virtual std::size_t compress(const char* src, std::size_t unit, char* dst, std::size_t capacity) const = 0;
  virtual bool decompress(const char* src, std::size_t n, char* dst, std::size_t unit) const = 0;
};

#ifdef AUTOPAGER_HAVE_LZ4
class Lz4 final : public Codec {
 public:
  std::size_t bound(std::size_t unit) const override { return static_cast<std::size_t>(LZ4_compressBound(static_cast<int>(unit))); }
  std::size_t compress(const char* src, std::size_t unit, char* dst, std::size_t capacity) const override {
    const int n = LZ4_compress_default(src, dst, static_cast<int>(unit), static_cast<int>(capacity));
    return n > 0 ? static_cast<std::size_t>(n) : 0;
  }
  bool decompress(const char* src, std::size_t n, char* dst, std::size_t unit) const override {
    return LZ4_decompress_safe(src, dst, static_cast<int>(n), static_cast<int>(unit)) == static_cast<int>(unit);
  }
};
#endif

#ifdef AUTOPAGER_HAVE_ZSTD
class Zstd final : public Codec {
 public:
  std::size_t bound(std::size_t unit) const override { return ZSTD_compressBound(unit); }
  std::size_t compress(const char* src, std::size_t unit, char* dst, std::size_t capacity) const override {
    thread_local std::unique_ptr<ZSTD_CCtx, decltype(&ZSTD_freeCCtx)> context(ZSTD_createCCtx(), ZSTD_freeCCtx);
    const std::size_t n = ZSTD_compressCCtx(context.get(), dst, capacity, src, unit, 1);
    return ZSTD_isError(n) ? 0 : n;
  }
  bool decompress(const char* src, std::size_t n, char* dst, std::size_t unit) const override {
    thread_local std::unique_ptr<ZSTD_DCtx, decltype(&ZSTD_freeDCtx)> context(ZSTD_createDCtx(), ZSTD_freeDCtx);
    return ZSTD_decompressDCtx(context.get(), dst, unit, src, n) == unit;
  }
};
#endif

std::unique_ptr<Codec> make_codec(Compression compression) {
  switch (compression) {
    case Compression::lz4:
#ifdef AUTOPAGER_HAVE_LZ4
      return std::make_unique<Lz4>();
#else
      throw std::runtime_error("compression lz4: this autopager was built without liblz4 (install liblz4-dev and rebuild)");
#endif
    case Compression::zstd:
#ifdef AUTOPAGER_HAVE_ZSTD
      return std::make_unique<Zstd>();
#else
      throw std::runtime_error("compression zstd: this autopager was built without libzstd (install libzstd-dev and rebuild)");
#endif
    case Compression::none:
      break;
  }
  throw std::invalid_argument("a compressed store needs compression lz4 or zstd");
}

class CompressedStore final : public Store {
 public:
  CompressedStore(std::shared_ptr<Store> backing, Compression compression, std::size_t unit)
      : backing_(std::move(backing)), codec_(make_codec(compression)), unit_(unit) {
    if (unit_ == 0 || unit_ > std::numeric_limits<std::uint32_t>::max() / 2)
      throw std::invalid_argument("compressed store: unit " + std::to_string(unit) + " out of range");
    units_ = backing_->size() / unit_;
    lengths_ = std::make_unique<std::atomic<std::uint32_t>[]>(units_);
    for (std::uint64_t i = 0; i < units_; ++i) lengths_[i].store(0, std::memory_order_relaxed);
    worth_ = unit_ - unit_ / 8;
  }

  ssize_t read(void* dst, std::size_t n, std::uint64_t offset) override {
    const std::uint64_t size = backing_->size();
    const std::size_t count = offset >= size ? 0 : static_cast<std::size_t>(std::min<std::uint64_t>(n, size - offset));
    auto* out = static_cast<char*>(dst);
    std::size_t done = 0;
    while (done < count) {
      const std::uint64_t at = offset + done;
      std::uint64_t unit = at / unit_;
      if (stored_length(unit) == 0) {
        // A run of raw units: one read of the backing store.
        std::uint64_t end = (unit + 1) * unit_;
        while (end < offset + count && stored_length(end / unit_) == 0) end += unit_;
        const std::size_t length = static_cast<std::size_t>(std::min<std::uint64_t>(end, offset + count) - at);
        const ssize_t got = backing_->read(out + done, length, at);
        if (got < 0) return -1;
        if (static_cast<std::size_t>(got) < length) return static_cast<ssize_t>(done + got);
        done += length;
        continue;
      }
      const std::size_t within = static_cast<std::size_t>(at - unit * unit_);
      const std::size_t length = std::min(count - done, unit_ - within);
      const bool whole = within == 0 && length == unit_;
      char* target = whole ? out + done : scratch(unit_buffer_, unit_);
      if (!load(unit, target)) return -1;
      if (!whole) std::memcpy(out + done, target + within, length);
      done += length;
    }
    return static_cast<ssize_t>(count);
  }

  ssize_t write(const void* src, std::size_t n, std::uint64_t offset) override {
    const std::uint64_t size = backing_->size();
    if (offset > size || n > size - offset) {
      errno = ENOSPC;
      return -1;
    }
    const auto* in = static_cast<const char*>(src);
    std::size_t done = 0;
    while (done < n) {
      const std::uint64_t at = offset + done;
      const std::uint64_t unit = at / unit_;
      const std::size_t within = static_cast<std::size_t>(at - unit * unit_);
      const std::size_t length = std::min(n - done, unit_ - within);
      if (unit >= units_ || (length < unit_ && stored_length(unit) == 0)) {
        // The raw tail, or part of a raw unit: written in place, the unit stays raw.
        if (backing_->write(in + done, length, at) < 0) return -1;
      } else if (length == unit_) {
        if (!store(unit, in + done)) return -1;
      } else {
        // Part of a compressed unit: the whole unit again, with the new bytes.
        char* whole = scratch(unit_buffer_, unit_);
        if (!load(unit, whole)) return -1;
        std::memcpy(whole + within, in + done, length);
        if (!store(unit, whole)) return -1;
      }
      done += length;
    }
    return static_cast<ssize_t>(n);
  }

  std::uint64_t size() const override { return backing_->size(); }
  bool writable() const override { return backing_->writable(); }
  int sync() override { return backing_->sync(); }
  bool outlives_process() const override { return false; }

 private:
  std::uint32_t stored_length(std::uint64_t unit) const {
    return unit < units_ ? lengths_[unit].load(std::memory_order_acquire) : 0;
  }

  static char* scratch(std::vector<char>& buffer, std::size_t bytes) {
    if (buffer.size() < bytes) buffer.resize(bytes);
    return buffer.data();
  }

  // The compressed unit `unit` decompressed into `dst` (unit_ bytes); false with errno set.
  bool load(std::uint64_t unit, char* dst) {
    const std::uint32_t length = stored_length(unit);
    char* packed = scratch(packed_buffer_, length);
    const ssize_t got = backing_->read(packed, length, unit * unit_);
    if (got < 0) return false;
    if (static_cast<std::size_t>(got) != length || !codec_->decompress(packed, length, dst, unit_)) {
      errno = EIO;  // the slot does not hold what the table says: never hand out invented bytes
      return false;
    }
    return true;
  }

  // Writes the whole unit `unit` from `src`: compressed when that saves enough, raw otherwise.
  bool store(std::uint64_t unit, const char* src) {
    char* packed = scratch(packed_buffer_, codec_->bound(unit_));
    const std::size_t length = codec_->compress(src, unit_, packed, codec_->bound(unit_));
    const bool compressed = length != 0 && length <= worth_;
    if (backing_->write(compressed ? packed : src, compressed ? length : unit_, unit * unit_) < 0) return false;
    lengths_[unit].store(compressed ? static_cast<std::uint32_t>(length) : 0, std::memory_order_release);
    return true;
  }

  std::shared_ptr<Store> backing_;
  std::unique_ptr<Codec> codec_;
  std::size_t unit_;
  std::size_t worth_;  // the longest compressed unit stored compressed
  std::uint64_t units_ = 0;
  std::unique_ptr<std::atomic<std::uint32_t>[]> lengths_;
  static thread_local std::vector<char> unit_buffer_;
  static thread_local std::vector<char> packed_buffer_;
};

thread_local std::vector<char> CompressedStore::unit_buffer_;
thread_local std::vector<char> CompressedStore::packed_buffer_;

}  // namespace

std::shared_ptr<Store> make_compressed_store(std::shared_ptr<Store> backing, Compression compression, std::size_t unit) {
  return std::make_shared<CompressedStore>(std::move(backing), compression, unit);
}

}  // namespace autopager

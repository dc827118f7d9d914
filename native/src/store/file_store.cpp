// A file (or a window of one) read with pread and written with pwrite, optionally with O_DIRECT.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <limits>
#include <stdexcept>
#include <string>
#include <system_error>

#include "autopager/config.hpp"
#include "autopager/store.hpp"
#include "store/io.hpp"

namespace autopager {
namespace {

class FileStore final : public Store {
 public:
  // `fd` is closed when the store is destroyed if `owns_fd`, a different `buffered_fd` if `owns_buffered`.
  FileStore(int fd, int buffered_fd, bool owns_fd, bool owns_buffered, bool writable, std::uint64_t offset,
            std::uint64_t length, bool windowed)
      : fd_(fd),
        buffered_fd_(buffered_fd),
        owns_fd_(owns_fd),
        owns_buffered_(owns_buffered),
        writable_(writable),
        offset_(offset),
        size_(length),
        windowed_(windowed) {}

  ~FileStore() override {
    if (owns_fd_) close(fd_);
    if (buffered_fd_ != fd_ && owns_buffered_) close(buffered_fd_);
  }

  ssize_t read(void* dst, std::size_t n, std::uint64_t offset) override {
    n = in_window(n, offset);
    if (n == 0) return 0;
    return transfer(read_fully, static_cast<char*>(dst), n, offset);
  }

  ssize_t write(const void* src, std::size_t n, std::uint64_t offset) override {
    const ssize_t put = transfer(write_fully, static_cast<const char*>(src), n, offset);
    if (put > 0) {
      std::uint64_t end = offset + static_cast<std::uint64_t>(put);
      std::uint64_t size = size_.load(std::memory_order_relaxed);
      while (end > size && !size_.compare_exchange_weak(size, end)) {
      }
    }
    return put;
  }

  bool locate(const void* dst, std::size_t n, std::uint64_t offset, FileExtent& extent) const override {
    n = in_window(n, offset);
    if (n == 0) return false;
    extent = {descriptor_for(dst, n, offset), offset_ + offset, n};
    return true;
  }

  std::uint64_t size() const override { return size_.load(std::memory_order_relaxed); }
  bool writable() const override { return writable_; }
  bool can_grow() const override { return !windowed_; }
  int sync() override { return fdatasync(fd_); }
  bool direct_io() const override { return fd_ != buffered_fd_; }
  bool backing_file(int& fd, std::uint64_t& offset) const override {
    fd = buffered_fd_;
    offset = offset_;
    return writable_;
  }

 private:
  // The bytes of a transfer of `n` at `offset` that lie in the window (all of them for a whole file).
  std::size_t in_window(std::size_t n, std::uint64_t offset) const {
    if (!windowed_) return n;
    std::uint64_t size = size_.load(std::memory_order_relaxed);
    return offset >= size ? 0 : static_cast<std::size_t>(std::min<std::uint64_t>(n, size - offset));
  }

  // O_DIRECT needs block-aligned buffers, offsets and lengths; anything else goes through the cache.
  bool direct_aligned(const void* buffer, std::size_t n, std::uint64_t offset) const {
    return fd_ != buffered_fd_ &&
           ((reinterpret_cast<std::uintptr_t>(buffer) | n | (offset_ + offset)) & (system_page_size() - 1)) == 0;
  }

  int descriptor_for(const void* buffer, std::size_t n, std::uint64_t offset) const {
    return direct_aligned(buffer, n, offset) ? fd_ : buffered_fd_;
  }

  // The whole pages of a transfer whose buffer and offset are aligned for O_DIRECT but whose length is not: 0 for
  // any other (and for one shorter than a page).
  std::size_t whole_pages_of_direct_transfer(const void* buffer, std::size_t n, std::uint64_t offset) const {
    const std::size_t whole = n & ~(system_page_size() - 1);
    return whole != n && direct_aligned(buffer, whole, offset) ? whole : 0;
  }

  // `move` (read_fully or write_fully) of `n` bytes at `offset`. A run of pages that ends in the file's (or the
  // window's) partial last page moves its whole pages directly and only the tail through the cache.
  template <typename Move, typename Byte>
  ssize_t transfer(Move move, Byte* buffer, std::size_t n, std::uint64_t offset) const {
    const std::size_t whole = whole_pages_of_direct_transfer(buffer, n, offset);
    if (whole == 0) return move(descriptor_for(buffer, n, offset), buffer, n, offset_ + offset);
    const ssize_t direct = move(fd_, buffer, whole, offset_ + offset);
    if (direct != static_cast<ssize_t>(whole)) return direct;
    const ssize_t tail = move(buffered_fd_, buffer + whole, n - whole, offset_ + offset + whole);
    return tail < 0 ? tail : direct + tail;
  }

  int fd_;
  int buffered_fd_;
  bool owns_fd_;
  bool owns_buffered_;
  bool writable_;
  std::uint64_t offset_;
  std::atomic<std::uint64_t> size_;
  bool windowed_;
};

std::uint64_t file_size(int fd) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return 0;
  return static_cast<std::uint64_t>(st.st_size);
}

std::uint64_t window_length(int fd, std::uint64_t offset, std::uint64_t length) {
  if (length != 0) return length;
  std::uint64_t size = file_size(fd);
  return size > offset ? size - offset : 0;
}

// A window that ends past the largest file offset would wrap around in pread and pwrite.
void check_window(const FileStoreOptions& options) {
  constexpr std::uint64_t kMostOffset = static_cast<std::uint64_t>(std::numeric_limits<off_t>::max());
  if (options.offset > kMostOffset || options.length > kMostOffset - options.offset)
    throw std::invalid_argument("a file window of " + std::to_string(options.length) + " bytes at offset " +
                                std::to_string(options.offset) + " ends past the largest file offset");
}

// `path` opened again with O_DIRECT and `flags`' access mode; -1 where the file system has no O_DIRECT
// (EINVAL), an exception for any other failure.
int open_direct(const std::string& path, int flags) {
  int direct = open(path.c_str(), (flags & O_ACCMODE) | O_CLOEXEC | O_DIRECT);
  if (direct < 0 && errno != EINVAL)
    throw std::system_error(errno, std::generic_category(), "cannot open " + path + " with O_DIRECT");
  return direct;
}

}  // namespace

std::shared_ptr<Store> make_file_store(const std::string& path, const FileStoreOptions& options) {
  check_window(options);
  int flags = (options.writable ? O_RDWR : O_RDONLY) | O_CLOEXEC;
  int buffered = open(path.c_str(), flags);
  if (buffered < 0) throw std::system_error(errno, std::generic_category(), "cannot open " + path);
  int direct = buffered;
  if (options.direct) {
    try {
      direct = open_direct(path, flags);
    } catch (...) {
      close(buffered);
      throw;
    }
    if (direct < 0) direct = buffered;
  }
  return std::make_shared<FileStore>(direct, buffered, true, true, options.writable, options.offset,
                                     window_length(buffered, options.offset, options.length), options.length != 0);
}

std::shared_ptr<Store> make_fd_store(int fd, const FileStoreOptions& options, bool take_ownership) {
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0) throw std::system_error(errno, std::generic_category(), "the file descriptor of a file store");
  // As mmap: reading needs a descriptor open for reading, writing one open for writing too.
  const int access = flags & O_ACCMODE;
  if (access == O_WRONLY || (options.writable && access != O_RDWR))
    throw std::system_error(EACCES, std::generic_category(),
                            options.writable ? "a writable mapping needs a descriptor opened O_RDWR"
                                             : "a mapping needs a descriptor opened for reading");
  check_window(options);
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  if ((flags & O_DIRECT) != 0) {
    // Opened with O_DIRECT: what is not block-aligned (a partial last page) goes through a buffered twin.
    int buffered = open(path.c_str(), (flags & O_ACCMODE) | O_CLOEXEC);
    if (buffered < 0)
      throw std::system_error(errno, std::generic_category(), "cannot reopen an O_DIRECT descriptor without it");
    return std::make_shared<FileStore>(fd, buffered, take_ownership, true, options.writable, options.offset,
                                       window_length(fd, options.offset, options.length), options.length != 0);
  }
  // A descriptor of its own (an open file of its own, not a duplicate): O_DIRECT must not change how the
  // program's descriptor reads.
  const int direct = options.direct ? open_direct(path, flags) : -1;
  const bool has_direct = direct >= 0;
  return std::make_shared<FileStore>(has_direct ? direct : fd, fd, has_direct || take_ownership, take_ownership,
                                     options.writable, options.offset,
                                     window_length(fd, options.offset, options.length), options.length != 0);
}

}  // namespace autopager

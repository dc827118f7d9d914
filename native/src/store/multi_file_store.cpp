// Several files, each a window (offset, length), laid end to end as one store.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "autopager/store.hpp"
#include "store/io.hpp"

namespace autopager {
namespace {

struct OpenSegment {
  int fd;
  std::uint64_t file_offset;
  std::uint64_t start;   // where the segment begins in the store
  std::uint64_t length;
  std::uint64_t file_size;  // bytes of the file past file_offset when opened (reads beyond are zeros)
};

class MultiFileStore final : public Store {
 public:
  MultiFileStore(std::vector<OpenSegment> segments, bool writable)
      : segments_(std::move(segments)), writable_(writable) {
    size_ = segments_.empty() ? 0 : segments_.back().start + segments_.back().length;
  }
  ~MultiFileStore() override {
    for (const auto& s : segments_) close(s.fd);
  }

  ssize_t read(void* dst, std::size_t n, std::uint64_t offset) override {
    return transfer(static_cast<char*>(dst), n, offset, false);
  }
  ssize_t write(const void* src, std::size_t n, std::uint64_t offset) override {
    return transfer(const_cast<char*>(static_cast<const char*>(src)), n, offset, true);
  }
  // Only a read within one segment that its file covers is a plain file read.
  bool locate(const void*, std::size_t n, std::uint64_t offset, FileExtent& extent) const override {
    if (offset >= size_) return false;
    const OpenSegment& segment = *segment_at(offset);
    std::uint64_t within = offset - segment.start;
    if (n > segment.length - within || within + n > segment.file_size) return false;
    extent = {segment.fd, segment.file_offset + within, n};
    return true;
  }
  std::uint64_t size() const override { return size_; }
  bool writable() const override { return writable_; }
  int sync() override {
    for (const auto& s : segments_)
      if (fdatasync(s.fd) != 0) return -1;
    return 0;
  }

 private:
  // Splits [offset, offset+n) over the segments it crosses. A segment whose file is shorter than its
  // length reads as zeros past the file's end.
  ssize_t transfer(char* data, std::size_t n, std::uint64_t offset, bool writing) {
    if (offset >= size_) return 0;
    n = static_cast<std::size_t>(std::min<std::uint64_t>(n, size_ - offset));
    auto it = segment_at(offset);
    std::size_t done = 0;
    for (; done < n && it != segments_.end(); ++it) {
      std::uint64_t within = offset + done - it->start;
      std::size_t chunk = static_cast<std::size_t>(std::min<std::uint64_t>(n - done, it->length - within));
      ssize_t moved = writing ? write_fully(it->fd, data + done, chunk, it->file_offset + within)
                              : read_fully(it->fd, data + done, chunk, it->file_offset + within);
      if (moved < 0) return -1;
      if (!writing && static_cast<std::size_t>(moved) < chunk) std::memset(data + done + moved, 0, chunk - moved);
      done += chunk;
    }
    return static_cast<ssize_t>(done);
  }

  std::vector<OpenSegment>::const_iterator segment_at(std::uint64_t offset) const {
    auto it = std::upper_bound(segments_.begin(), segments_.end(), offset,
                               [](std::uint64_t off, const OpenSegment& s) { return off < s.start; });
    return --it;
  }

  std::vector<OpenSegment> segments_;
  bool writable_;
  std::uint64_t size_;
};

}  // namespace

std::shared_ptr<Store> make_multi_file_store(const std::vector<FileSegment>& segments, bool writable) {
  std::vector<OpenSegment> open_segments;
  std::uint64_t start = 0;
  auto close_all = [&] {
    for (const auto& s : open_segments) close(s.fd);
  };
  for (const auto& segment : segments) {
    int fd = open(segment.path.c_str(), (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
    if (fd < 0) {
      int saved = errno;
      close_all();
      throw std::system_error(saved, std::generic_category(), "cannot open " + segment.path);
    }
    struct stat st {};
    fstat(fd, &st);
    std::uint64_t size = static_cast<std::uint64_t>(st.st_size);
    std::uint64_t available = size > segment.offset ? size - segment.offset : 0;
    std::uint64_t length = segment.length != 0 ? segment.length : available;
    open_segments.push_back({fd, segment.offset, start, length, available});
    start += length;
  }
  // Empty segments take no room; dropping them keeps the lookup simple.
  std::vector<OpenSegment> nonempty;
  for (const auto& s : open_segments) {
    if (s.length > 0) nonempty.push_back(s);
    else close(s.fd);
  }
  return std::make_shared<MultiFileStore>(std::move(nonempty), writable);
}

}  // namespace autopager

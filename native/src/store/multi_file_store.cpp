// Several files, each a window (offset, length), laid end to end as one store: a file store a segment.
#include <algorithm>
#include <cstring>

#include "autopager/store.hpp"

namespace autopager {
namespace {

struct Segment {
  std::shared_ptr<Store> file;
  std::uint64_t start;   // where the segment begins in this store
  std::uint64_t length;
};

class MultiFileStore final : public Store {
 public:
  MultiFileStore(std::vector<Segment> segments, bool writable) : segments_(std::move(segments)), writable_(writable) {
    size_ = segments_.empty() ? 0 : segments_.back().start + segments_.back().length;
  }

  ssize_t read(void* dst, std::size_t n, std::uint64_t offset) override {
    return transfer(static_cast<char*>(dst), n, offset, Direction::kRead);
  }
  ssize_t write(const void* src, std::size_t n, std::uint64_t offset) override {
    return transfer(const_cast<char*>(static_cast<const char*>(src)), n, offset, Direction::kWrite);
  }
  // A read within one segment is that segment's file's read.
  bool locate(const void* dst, std::size_t n, std::uint64_t offset, FileExtent& extent) const override {
    if (offset >= size_) return false;
    const Segment& segment = *segment_at(offset);
    std::uint64_t within = offset - segment.start;
    return n <= segment.length - within && segment.file->locate(dst, n, within, extent);
  }
  std::uint64_t size() const override { return size_; }
  bool writable() const override { return writable_; }
  bool direct_io() const override {
    return !segments_.empty() &&
           std::all_of(segments_.begin(), segments_.end(), [](const Segment& s) { return s.file->direct_io(); });
  }
  int sync() override {
    for (const auto& s : segments_)
      if (s.file->sync() != 0) return -1;
    return 0;
  }

 private:
  enum class Direction { kRead, kWrite };

  // Splits [offset, offset+n) over the segments it crosses. A segment whose file is shorter than its
  // length reads as zeros past the file's end.
  ssize_t transfer(char* data, std::size_t n, std::uint64_t offset, Direction direction) {
    const bool writing = direction == Direction::kWrite;
    if (offset >= size_) return 0;
    n = static_cast<std::size_t>(std::min<std::uint64_t>(n, size_ - offset));
    std::size_t done = 0;
    for (auto it = segment_at(offset); done < n && it != segments_.end(); ++it) {
      std::uint64_t within = offset + done - it->start;
      std::size_t chunk = static_cast<std::size_t>(std::min<std::uint64_t>(n - done, it->length - within));
      ssize_t moved = writing ? it->file->write(data + done, chunk, within) : it->file->read(data + done, chunk, within);
      if (moved < 0) return -1;
      if (!writing && static_cast<std::size_t>(moved) < chunk) std::memset(data + done + moved, 0, chunk - moved);
      done += chunk;
    }
    return static_cast<ssize_t>(done);
  }

  std::vector<Segment>::const_iterator segment_at(std::uint64_t offset) const {
    auto it = std::upper_bound(segments_.begin(), segments_.end(), offset,
                               [](std::uint64_t off, const Segment& s) { return off < s.start; });
    return --it;
  }

  std::vector<Segment> segments_;
  bool writable_;
  std::uint64_t size_;
};

}  // namespace

std::shared_ptr<Store> make_multi_file_store(const std::vector<FileSegment>& segments, bool writable, bool direct) {
  std::vector<Segment> parts;
  std::uint64_t start = 0;
  for (const auto& segment : segments) {
    FileStoreOptions options;
    options.writable = writable;
    options.direct = direct;
    options.offset = segment.offset;
    options.length = segment.length;
    std::shared_ptr<Store> file = make_file_store(segment.path, options);
    std::uint64_t length = segment.length != 0 ? segment.length : file->size();
    if (length == 0) continue;  // an empty segment takes no room
    parts.push_back({std::move(file), start, length});
    start += length;
  }
  return std::make_shared<MultiFileStore>(std::move(parts), writable);
}

}  // namespace autopager

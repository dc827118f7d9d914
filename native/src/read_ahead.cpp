#include "read_ahead.hpp"

#include <algorithm>

namespace autopager {

ReadAheadStreams::ReadAheadStreams(unsigned read_ahead, std::uint64_t run_pages, std::uint64_t most_window,
                                   std::uint64_t shared_window)
    : read_ahead_(read_ahead),
      run_pages_(std::max<std::uint64_t>(run_pages, 1)),
      most_window_(std::max<std::uint64_t>(most_window, read_ahead)),
      shared_window_(shared_window) {}

std::uint64_t ReadAheadStreams::run_of(const Stream& s) const {
  return std::clamp<std::uint64_t>(s.window / (2 * std::uint64_t{read_ahead_}), 1, run_pages_);
}

ReadAheadStreams ReadAheadStreams::for_region(const Config& config, std::size_t page_size, std::uint64_t run_pages) {
  constexpr std::uint64_t kMostWindowBytes = 64u << 20;
  const std::uint64_t eighth = config.buffer_bytes() / 8 / page_size;
  // The streams' reads ahead share an eighth of the buffer; two streams' read_ahead pages must fit in it, or they
  // evict pages read ahead before the program reaches them (a sort's four streams through 8 pages of 2 MiB read its
  // data 11 times over at read_ahead 2, twice at 1, once at 0).
  const auto read_ahead = static_cast<unsigned>(std::min<std::uint64_t>(config.read_ahead, eighth / 2));
  return ReadAheadStreams(read_ahead, run_pages, std::min<std::uint64_t>(eighth, kMostWindowBytes / page_size),
                          eighth);
}

std::uint64_t ReadAheadStreams::window_cap() const {
  std::uint64_t in_use = 0;
  for (const Stream& s : streams_) in_use += s.window != 0 && s.direction != 0 && clock_ - s.last_use <= kIdleFaults;
  const std::uint64_t share = shared_window_ / std::max<std::uint64_t>(in_use, 1);
  return std::min(most_window_, std::max<std::uint64_t>(share, read_ahead_));
}

bool ReadAheadStreams::Stream::ahead(std::uint64_t page, int towards, std::uint64_t reach) const {
  if (towards > 0) return page > newest_fault && page - newest_fault <= reach;
  return page < newest_fault && newest_fault - page <= reach;
}

ReadAheadStreams::Stream& ReadAheadStreams::replaced() {
  Stream* candidate = nullptr;  // the oldest unused or one-fault stream
  Stream* idle = nullptr;       // the oldest stream with a direction that no fault continued for a while
  for (Stream& s : streams_) {
    if (s.window == 0 || s.direction == 0) {
      if (candidate == nullptr || s.last_use < candidate->last_use) candidate = &s;
    } else if (clock_ - s.last_use > kIdleFaults && (idle == nullptr || s.last_use < idle->last_use)) {
      idle = &s;
    }
  }
  if (idle != nullptr && (candidate == nullptr || idle->last_use < candidate->last_use)) return *idle;
  if (candidate != nullptr) return *candidate;
  Stream* oldest = &streams_[0];
  for (Stream& s : streams_)
    if (s.last_use < oldest->last_use) oldest = &s;
  return *oldest;
}

ReadAheadStreams::Reads ReadAheadStreams::fault(std::uint64_t page) {
  if (read_ahead_ == 0) return Reads{Direction::kNone, 1, true};  // no streams: every fault is on its own
  ++clock_;
  for (Stream& s : streams_) {
    if (s.window != 0 && page == s.newest_fault) {
      // The same page again (several threads fault on it): read ahead only along a stream already sequential.
      s.last_use = clock_;
      return Reads{static_cast<Direction>(s.direction), run_of(s)};
    }
    // A fault up to just past the stream's window continues it; a stream of one fault goes either way, up to
    // read_ahead + 1 pages from what it read.
    for (int towards : {1, -1}) {
      if (s.window == 0 || s.direction == -towards) continue;
      if (s.direction == 0) {
        Stream edge = s;
        edge.newest_fault = towards > 0 ? s.high : s.low;
        if (!edge.ahead(page, towards, std::uint64_t{read_ahead_} + 1)) continue;
      } else if (!s.ahead(page, towards, s.window + 1)) {
        continue;
      }
      s.direction = towards;
      s.newest_fault = page;
      s.last_use = clock_;
      s.window = std::min(2 * s.window, window_cap());
      return Reads{static_cast<Direction>(towards), run_of(s)};
    }
  }
  // A new stream reads nothing ahead until a second fault shows it is sequential.
  replaced() = Stream{page, read_ahead_, 0, clock_, page, page};
  return Reads{Direction::kNone, 1, true};
}

void ReadAheadStreams::read_around(std::uint64_t page, std::uint64_t first, std::uint64_t count) {
  for (Stream& s : streams_) {
    if (s.window == 0 || s.direction != 0 || s.newest_fault != page) continue;
    s.low = first;
    s.high = first + count - 1;
    s.window = std::min(std::max<std::uint64_t>(s.window, count), most_window_);
    return;
  }
}

bool ReadAheadStreams::next_after(std::uint64_t page, std::uint64_t& next, Reads& reads) const {
  if (read_ahead_ == 0) return false;
  for (const Stream& s : streams_) {
    if (s.window <= read_ahead_ || s.direction == 0 || !s.ahead(page, s.direction, s.window)) continue;
    const std::uint64_t run = run_of(s), block = page / run;
    if (s.direction < 0 && block < read_ahead_) return false;
    next = s.direction > 0 ? (block + read_ahead_) * run : (block - read_ahead_) * run + run - 1;
    reads = Reads{static_cast<Direction>(s.direction), run};
    const std::uint64_t far_end = s.direction > 0 ? next + run - 1 : next + 1 - run;
    return s.ahead(far_end, s.direction, s.window);
  }
  return false;
}

bool ReadAheadStreams::passed(std::uint64_t first, std::uint64_t count, int direction) const {
  if (count == 0) return false;
  const std::uint64_t last = first + count - 1;
  bool behind_one = false;
  for (const Stream& s : streams_) {
    if (s.window == 0 || s.direction != direction) continue;
    // The page of the range nearest the fault on its far side, if any.
    const bool some_ahead = direction > 0
                                ? last > s.newest_fault && s.ahead(std::max(first, s.newest_fault + 1), 1, s.window)
                                : first < s.newest_fault && s.ahead(std::min(last, s.newest_fault - 1), -1, s.window);
    if (some_ahead) return false;
    behind_one = behind_one || (direction > 0 ? last <= s.newest_fault : first >= s.newest_fault);
  }
  return behind_one;
}

}  // namespace autopager

#include "read_ahead.hpp"

#include <algorithm>

namespace autopager {

ReadAheadStreams::ReadAheadStreams(unsigned read_ahead, std::uint64_t most_window)
    : read_ahead_(read_ahead), most_window_(std::max<std::uint64_t>(most_window, read_ahead)) {}

ReadAheadStreams ReadAheadStreams::for_config(const Config& config) {
  constexpr std::uint64_t kMostWindowBytes = 64u << 20;
  return ReadAheadStreams(config.read_ahead, std::min<std::uint64_t>(config.buffer_pages / 4,
                                                                     kMostWindowBytes / config.page_size));
}

void ReadAheadStreams::fault(std::uint64_t page) {
  if (read_ahead_ == 0) return;
  ++clock_;
  Stream* oldest = &streams_[0];
  for (Stream& s : streams_) {
    // A fault up to just past what the stream may have read ahead continues it.
    if (s.window != 0 && page >= s.newest_fault && page <= s.limit() + 1) {
      if (page > s.newest_fault) s.window = std::min(2 * s.window, most_window_);
      s.newest_fault = page;
      s.last_use = clock_;
      return;
    }
    if (s.last_use < oldest->last_use) oldest = &s;
  }
  // A new stream reads only its read_ahead pages until a second fault shows it is sequential.
  *oldest = Stream{page, read_ahead_, clock_};
}

bool ReadAheadStreams::next_after(std::uint64_t page, std::uint64_t& next) const {
  if (read_ahead_ == 0) return false;
  for (const Stream& s : streams_) {
    if (s.window <= read_ahead_ || page <= s.newest_fault || page > s.limit()) continue;
    next = page + read_ahead_;
    return next <= s.limit();
  }
  return false;
}

}  // namespace autopager

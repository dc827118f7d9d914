#include "progress.hpp"

#include <cstdio>

namespace workloads {

namespace {
constexpr std::uint64_t kVisibleBytes = 256ULL << 20;
}

Progress::Progress(std::string label, std::uint64_t total, std::uint64_t unit_bytes)
    : label_(std::move(label)),
      total_(total),
      visible_(total * unit_bytes >= kVisibleBytes),
      start_(std::chrono::steady_clock::now()) {
  if (visible_) std::fprintf(stderr, "%s ...\n", label_.c_str());
}

Progress::~Progress() {
  if (!visible_) return;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::fprintf(stderr, "%s: done in %.1f s\n", label_.c_str(), seconds);
}

void Progress::advance(std::uint64_t done_units) {
  if (!visible_) return;
  std::lock_guard<std::mutex> lock(mutex_);
  done_ += done_units;
  const int tenths = total_ ? static_cast<int>(done_ * 10 / total_) : 10;
  if (tenths > shown_tenths_ && tenths < 10) {
    std::fprintf(stderr, "%s: %d%%\n", label_.c_str(), tenths * 10);
  }
  if (tenths > shown_tenths_) shown_tenths_ = tenths;
}

}  // namespace workloads

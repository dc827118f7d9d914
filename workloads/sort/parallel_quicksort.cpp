#include "parallel_quicksort.hpp"

#include <algorithm>
#include <utility>

namespace workloads {

namespace {

// Ranges at most this long are sorted by one thread with std::sort.
constexpr std::size_t kSerialCutoff = 1 << 16;
// Ranges at least this long are split into tasks.
constexpr std::size_t kTaskCutoff = 1 << 20;

const std::uint64_t& median_of_three(const std::uint64_t& a, const std::uint64_t& b, const std::uint64_t& c) {
  if (a < b) return b < c ? b : (a < c ? c : a);
  return a < c ? a : (b < c ? c : b);
}

// Hoare partition around the median of the first, middle and last values. Returns p, 0 < p < count,
// with values[0, p) <= pivot <= values[p, count).
std::size_t partition(std::uint64_t* values, std::size_t count) {
  const std::uint64_t pivot = median_of_three(values[0], values[count / 2], values[count - 1]);
  std::size_t left = 0;
  std::size_t right = count - 1;
  while (true) {
    while (values[left] < pivot) ++left;
    while (values[right] > pivot) --right;
    if (left >= right) return right + 1;
    std::swap(values[left], values[right]);
    ++left;
    --right;
  }
}

void sort_range(std::uint64_t* values, std::size_t count) {
  while (count > kSerialCutoff) {
    const std::size_t split = partition(values, count);
    std::uint64_t* upper = values + split;
    const std::size_t upper_count = count - split;
    if (split >= kTaskCutoff || upper_count >= kTaskCutoff) {
#pragma omp task firstprivate(upper, upper_count)
      sort_range(upper, upper_count);
    } else {
      sort_range(upper, upper_count);
    }
    count = split;
  }
  std::sort(values, values + count);
}

}  // namespace

void parallel_quicksort(std::uint64_t* values, std::size_t count) {
  if (count < 2) return;
#pragma omp parallel
#pragma omp single nowait
  sort_range(values, count);
}

}  // namespace workloads

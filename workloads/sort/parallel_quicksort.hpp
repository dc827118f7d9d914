// An in-place parallel quicksort with OpenMP tasks: it needs no memory beside the array, so it sorts a
// mapped array far larger than memory (a merge sort would need a second array).
#pragma once

#include <cstddef>
#include <cstdint>

namespace workloads {

// Sorts values[0, count) ascending with the threads of the current OpenMP setting.
void parallel_quicksort(std::uint64_t* values, std::size_t count);

}  // namespace workloads

// Which file mappings the preload serves, from UMAP_PRELOAD_* variables (the paging parameters come
// from the UMAP_* variables, as for any pager program).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace autopager::preload {

struct Settings {
  // UMAP_PRELOAD_MIN_SIZE: bytes; files smaller than this are left to the kernel.
  std::uint64_t min_size = 1u << 20;
  // UMAP_PRELOAD_PATHS: fnmatch(3) patterns separated by ':'; empty serves every path.
  std::vector<std::string> paths;
  // UMAP_PRELOAD_HEAP: the directory of the heap's scratch files ("on": $TMPDIR, else /tmp); empty leaves
  // every anonymous mapping to the kernel (heap.cpp).
  std::string heap_dir;
  // UMAP_PRELOAD_HEAP_MIN: bytes; smaller anonymous mappings are left to the kernel. 32 MiB: glibc's
  // malloc maps every block of this size or more with mmap (its threshold's ceiling on 64-bit), and
  // numpy's arrays are malloc's blocks.
  std::uint64_t heap_min = std::uint64_t{32} << 20;

  // Reads the variables; throws std::invalid_argument naming the variable when a value is bad.
  static Settings from_environment();
  bool path_wanted(const std::string& path) const;
};

}  // namespace autopager::preload

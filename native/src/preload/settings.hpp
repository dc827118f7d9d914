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

  // Reads the variables; throws std::invalid_argument naming the variable when a value is bad.
  static Settings from_environment();
  bool path_wanted(const std::string& path) const;
};

}  // namespace autopager::preload

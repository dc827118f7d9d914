#include "settings.hpp"

#include <fnmatch.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace autopager::preload {

namespace {

// The variable's number of bytes, or `otherwise` when it is unset or empty.
std::uint64_t bytes_from(const char* variable, std::uint64_t otherwise) {
  const char* value = std::getenv(variable);
  if (value == nullptr || *value == '\0') return otherwise;
  char* end = nullptr;
  errno = 0;
  unsigned long long bytes = std::strtoull(value, &end, 10);
  if (errno != 0 || *end != '\0' || *value == '-')
    throw std::invalid_argument(std::string(variable) + " must be a number of bytes, not '" + value + "'");
  return bytes;
}

}  // namespace

Settings Settings::from_environment() {
  Settings settings;
  settings.min_size = bytes_from("UMAP_PRELOAD_MIN_SIZE", settings.min_size);
  settings.heap_min = bytes_from("UMAP_PRELOAD_HEAP_MIN", settings.heap_min);
  if (settings.heap_min == 0) throw std::invalid_argument("UMAP_PRELOAD_HEAP_MIN must be at least one byte, not 0");
  if (const char* value = std::getenv("UMAP_PRELOAD_HEAP"); value != nullptr) {
    const char* tmpdir = std::getenv("TMPDIR");
    settings.heap_dir = std::strcmp(value, "on") != 0 ? value : tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp";
  }
  if (const char* value = std::getenv("UMAP_PRELOAD_PATHS"); value != nullptr) {
    std::stringstream patterns(value);
    for (std::string pattern; std::getline(patterns, pattern, ':');)
      if (!pattern.empty()) settings.paths.push_back(pattern);
  }
  return settings;
}

bool Settings::path_wanted(const std::string& path) const {
  if (paths.empty()) return true;
  for (const std::string& pattern : paths)
    if (fnmatch(pattern.c_str(), path.c_str(), 0) == 0) return true;
  return false;
}

}  // namespace autopager::preload

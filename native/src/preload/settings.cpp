#include "settings.hpp"

#include <fnmatch.h>

#include <cerrno>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

namespace autopager::preload {

Settings Settings::from_environment() {
  Settings settings;
  if (const char* value = std::getenv("UMAP_PRELOAD_MIN_SIZE"); value != nullptr && *value != '\0') {
    char* end = nullptr;
    errno = 0;
    unsigned long long bytes = std::strtoull(value, &end, 10);
    if (errno != 0 || *end != '\0' || *value == '-')
      throw std::invalid_argument(std::string("UMAP_PRELOAD_MIN_SIZE must be a number of bytes, not '") + value + "'");
    settings.min_size = bytes;
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

#include "memory_limit.hpp"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

namespace autopager {
namespace {

constexpr std::uint64_t kNoLimit = std::numeric_limits<std::uint64_t>::max();
// cgroup v1 writes "no limit" as the largest page-aligned signed 64-bit value.
constexpr std::uint64_t kV1Unlimited = 1ull << 62;

struct Hierarchy {
  bool v2 = false;
  std::string directory;   // the process's cgroup
  std::string mount_point; // the hierarchy's top as this process sees it
};

bool has_token(const std::string& list, const std::string& token) {
  std::istringstream in(list);
  std::string item;
  while (std::getline(in, item, ','))
    if (item == token) return true;
  return false;
}

// Where the memory controller's hierarchy is mounted (v1 first: with it, v2 has no memory controller),
// and the mount's root within the hierarchy.
bool find_mount(bool v2, std::string& point, std::string& root) {
  std::ifstream mounts("/proc/self/mountinfo");
  std::string line;
  while (std::getline(mounts, line)) {
    std::istringstream in(line);
    std::string id, parent, device, mount_root, mount_point, field;
    in >> id >> parent >> device >> mount_root >> mount_point;
    while (in >> field && field != "-") {
    }
    std::string type, source, options;
    in >> type >> source >> options;
    if ((v2 && type == "cgroup2") || (!v2 && type == "cgroup" && has_token(options, "memory"))) {
      point = mount_point;
      root = mount_root;
      return true;
    }
  }
  return false;
}

bool find_hierarchy(Hierarchy& out) {
  std::ifstream groups("/proc/self/cgroup");
  std::string line, v1_path, v2_path;
  bool v1 = false, v2 = false;
  while (std::getline(groups, line)) {
    std::size_t first = line.find(':');
    std::size_t second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    std::string controllers = line.substr(first + 1, second - first - 1);
    std::string path = line.substr(second + 1);
    if (has_token(controllers, "memory")) v1 = true, v1_path = path;
    else if (line.compare(0, first, "0") == 0 && controllers.empty()) v2 = true, v2_path = path;
  }
  for (bool use_v2 : {false, true}) {
    if (use_v2 ? !v2 : !v1) continue;
    std::string point, root;
    if (!find_mount(use_v2, point, root)) continue;
    std::string path = use_v2 ? v2_path : v1_path;
    if (root != "/" && path.compare(0, root.size(), root) == 0) path = path.substr(root.size());
    if (path == "/") path.clear();
    out.v2 = use_v2;
    out.mount_point = point;
    out.directory = point + path;
    return true;
  }
  return false;
}

bool read_number(const std::string& file, std::uint64_t& value) {
  std::ifstream in(file);
  std::string text;
  if (!(in >> text)) return false;
  if (text == "max") {
    value = kNoLimit;
    return true;
  }
  std::istringstream parse(text);
  return static_cast<bool>(parse >> value);
}

std::uint64_t file_cache(const std::string& stat_file, bool v2) {
  std::ifstream in(stat_file);
  std::string key;
  std::uint64_t value = 0, total = 0;
  const char* active = v2 ? "active_file" : "total_active_file";
  const char* inactive = v2 ? "inactive_file" : "total_inactive_file";
  while (in >> key >> value)
    if (key == active || key == inactive) total += value;
  return total;
}

std::uint64_t meminfo_available() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  std::uint64_t kib = 0;
  while (in >> key >> kib) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return kib * 1024;
  }
  return static_cast<std::uint64_t>(sysconf(_SC_AVPHYS_PAGES)) * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace

std::uint64_t cgroup_headroom() {
  Hierarchy h;
  if (!find_hierarchy(h)) return kNoLimit;
  const char* limit_name = h.v2 ? "/memory.max" : "/memory.limit_in_bytes";
  const char* usage_name = h.v2 ? "/memory.current" : "/memory.usage_in_bytes";
  std::uint64_t headroom = kNoLimit;
  for (std::string dir = h.directory;; dir = dir.substr(0, dir.rfind('/'))) {
    std::uint64_t limit = kNoLimit, usage = 0;
    if (read_number(dir + limit_name, limit) && limit < kV1Unlimited && read_number(dir + usage_name, usage)) {
      std::uint64_t cache = std::min(usage, file_cache(dir + "/memory.stat", h.v2));
      headroom = std::min(headroom, limit - std::min(limit, usage - cache));
    }
    if (dir.size() <= h.mount_point.size()) break;
  }
  return headroom;
}

std::uint64_t usable_memory() { return std::min(meminfo_available(), cgroup_headroom()); }

}  // namespace autopager

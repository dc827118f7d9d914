#include "huge_pages.hpp"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#ifndef MAP_HUGE_2MB
#define MAP_HUGE_2MB (21 << MAP_HUGE_SHIFT)
#endif

namespace autopager {
namespace {

constexpr const char* kPool = "/sys/kernel/mm/hugepages/hugepages-2048kB/";

std::uint64_t pool_count(const char* name) {
  std::ifstream in(std::string(kPool) + name);
  std::uint64_t n = 0;
  return in >> n ? n : 0;
}

// Why the kernel cannot serve a huge-page region through this userfaultfd, or "" when it can: a hugetlb range
// (no page allocated) registered for missing and write-protect faults.
std::string kernel_refusal(Userfaultfd& uffd) {
  if (!uffd.has_shared_write_protect())
    return "the kernel cannot write-protect hugetlb memory through userfaultfd (Linux 6.0+)";
  void* probe = mmap(nullptr, kHugePageSize, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_HUGETLB | MAP_HUGE_2MB, -1, 0);
  if (probe == MAP_FAILED) return std::string("mmap with MAP_HUGETLB failed: ") + std::strerror(errno);
  std::string why;
  try {
    uffd.register_range(probe, kHugePageSize, WriteProtect::kYes);
    uffd.unregister_range(probe, kHugePageSize);
  } catch (const std::exception& e) {
    why = std::string("userfaultfd does not register hugetlb memory: ") + e.what();
  }
  munmap(probe, kHugePageSize);
  return why;
}

}  // namespace

std::uint64_t available_huge_pages() {
  const std::uint64_t free = pool_count("free_hugepages"), reserved = pool_count("resv_hugepages");
  return free > reserved ? free - reserved : 0;
}

int region_memory_flags(bool huge_pages) {
  const int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED;
  return huge_pages ? flags | MAP_HUGETLB | MAP_HUGE_2MB : flags;
}

bool may_use_huge_pages(const Config& config) {
  // Config::validate refuses a page size or keep_writes that rules them out with on.
  return config.huge_pages != HugePages::kOff && config.page_size % kHugePageSize == 0 && !config.keep_writes;
}

bool use_huge_pages(const Config& config, std::uint64_t resident_bytes, Userfaultfd& uffd) {
  if (!may_use_huge_pages(config)) return false;
  const bool on = config.huge_pages == HugePages::kOn;
  const std::uint64_t needed = resident_bytes / kHugePageSize;
  const std::uint64_t available = available_huge_pages();
  std::string why;
  if (available < needed) {
    why = "the pool has " + std::to_string(available) + " free 2 MiB huge pages, the buffer's " +
          std::to_string(resident_bytes) + " bytes of resident pages need " + std::to_string(needed) +
          " (raise /proc/sys/vm/nr_hugepages or shrink the buffer)";
  } else {
    why = kernel_refusal(uffd);
  }
  if (why.empty()) return true;
  if (on) throw ConfigError("huge_pages (UMAP_HUGE_PAGES) = on: " + why + "; allowed: off, auto");
  return false;
}

}  // namespace autopager

// The UMap C API over one process-wide pager, created from the UMAP_* environment on first use.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdint>
#include <limits>
#include <memory>
#include <system_error>
#include <vector>

#include "autopager/pager.hpp"
#include "umap/umap.h"

using autopager::default_pager;

namespace {

// Runs `body` against the default pager; on an exception prints why, sets errno and returns `failed`.
template <typename T, typename Body>
T with_default_pager(T failed, Body body) {
  try {
    return body(default_pager());
  } catch (const autopager::ConfigError& e) {
    std::fprintf(stderr, "umap: %s\n", e.what());
    errno = EINVAL;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "umap: %s\n", e.what());
    errno = EINVAL;
  } catch (const std::system_error& e) {
    std::fprintf(stderr, "umap: %s\n", e.what());
    errno = e.code().value();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "umap: %s\n", e.what());
    errno = ENOMEM;
  }
  return failed;
}

// Checks umap's `flags`: without UMAP_FIXED `addr` is a hint only, as for mmap; with it, the region goes
// exactly there (`*fixed`). On bad flags prints why, sets errno and returns false.
bool fixed_address(void* addr, int flags, void** fixed) {
  if ((flags & UMAP_PRIVATE) == 0) {
    std::fprintf(stderr, "umap: flags must include UMAP_PRIVATE (and may include UMAP_FIXED)\n");
    errno = EINVAL;
    return false;
  }
  if ((flags & UMAP_FIXED) != 0 && addr == nullptr) {
    std::fprintf(stderr, "umap: UMAP_FIXED needs an address\n");
    errno = EINVAL;
    return false;
  }
  *fixed = (flags & UMAP_FIXED) != 0 ? addr : nullptr;
  return true;
}

}  // namespace

extern "C" {

void* umap(void* addr, size_t length, int prot, int flags, int fd, off_t offset) {
  if (offset < 0) {
    std::fprintf(stderr, "umap: offset must be >= 0\n");
    errno = EINVAL;
    return UMAP_FAILED;
  }
  void* fixed = nullptr;
  if (!fixed_address(addr, flags, &fixed)) return UMAP_FAILED;
  if (length > static_cast<std::uint64_t>(std::numeric_limits<off_t>::max() - offset)) {
    std::fprintf(stderr, "umap: offset %lld + length %zu is past the largest file offset\n",
                 static_cast<long long>(offset), length);
    errno = EINVAL;
    return UMAP_FAILED;
  }
  return with_default_pager<void*>(UMAP_FAILED, [&](autopager::Pager& pager) {
    // The store owns a duplicate, so the program may close its descriptor while the region lives.
    int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (own < 0) throw std::system_error(errno, std::generic_category(), "the file descriptor given to umap");
    std::shared_ptr<autopager::Store> store;
    try {
      autopager::FileStoreOptions options;
      options.writable = (prot & PROT_WRITE) != 0;
      options.offset = static_cast<std::uint64_t>(offset);
      options.direct = pager.config().direct_io;
      store = autopager::make_fd_store(own, options, true);
    } catch (...) {
      close(own);
      throw;
    }
    return pager.map(std::move(store), length, prot, fixed);
  });
}

void* umap_nbd(void* addr, size_t length, int prot, int flags, const char* uri) {
  void* fixed = nullptr;
  if (!fixed_address(addr, flags, &fixed)) return UMAP_FAILED;
  if (uri == nullptr || !autopager::is_nbd_uri(uri)) {
    std::fprintf(stderr, "umap_nbd: '%s' is not an NBD URI (nbd://host:port/export or nbd+unix:///export?socket=PATH)\n",
                 uri == nullptr ? "(null)" : uri);
    errno = EINVAL;
    return UMAP_FAILED;
  }
  return with_default_pager<void*>(UMAP_FAILED, [&](autopager::Pager& pager) {
    std::shared_ptr<autopager::Store> store;
    try {
      store = autopager::open_nbd_store(uri, pager.config().compression, pager.config().page_size);
    } catch (const std::system_error&) {
      throw;
    } catch (const std::runtime_error& e) {  // the server's refusal, or no libnbd
      std::fprintf(stderr, "umap_nbd: %s\n", e.what());
      errno = ECONNREFUSED;
      return UMAP_FAILED;
    }
    return pager.map(std::move(store), length, prot, fixed);
  });
}

int uunmap(void* addr, size_t length) {
  (void)length;
  return with_default_pager<int>(-1, [&](autopager::Pager& pager) {
    if (pager.region_base(addr) != addr) {
      errno = EINVAL;
      return -1;
    }
    return pager.unmap(addr) ? 0 : -1;
  });
}

int umap_flush(void) {
  return with_default_pager<int>(-1, [](autopager::Pager& pager) { return pager.flush(); });
}

void umap_prefetch(int npages, struct umap_prefetch_item* page_array) {
  if (npages <= 0 || page_array == nullptr) return;
  with_default_pager<int>(-1, [&](autopager::Pager& pager) {
    std::vector<void*> addresses(static_cast<std::size_t>(npages));
    for (int i = 0; i < npages; ++i) addresses[static_cast<std::size_t>(i)] = page_array[i].page_base_addr;
    pager.prefetch(addresses.data(), addresses.size());
    return 0;
  });
}

void umap_fetch_and_pin(char* paddr, uint64_t size) {
  with_default_pager<int>(-1, [&](autopager::Pager& pager) {
    if (pager.fetch_and_pin(paddr, static_cast<std::size_t>(size)) == 0) return 0;
    int err = errno;
    std::fprintf(stderr, "umap_fetch_and_pin: %s\n",
                 err == EINVAL ? "the address is in no region" : "more pages than the buffer lets pin");
    errno = err;
    return -1;
  });
}

int umap_has_write_support(void) {
  return with_default_pager<int>(0, [](autopager::Pager& pager) { return pager.has_write_protect() ? 1 : 0; });
}

long umapcfg_get_system_page_size(void) { return static_cast<long>(autopager::system_page_size()); }

#define AUTOPAGER_CONFIG_GETTER(type, name, field)                                                  \
  type name(void) {                                                                               \
    return with_default_pager<type>(0, [](autopager::Pager& p) { return static_cast<type>(p.config().field); }); \
  }
AUTOPAGER_CONFIG_GETTER(uint64_t, umapcfg_get_umap_page_size, page_size)
AUTOPAGER_CONFIG_GETTER(uint64_t, umapcfg_get_max_fault_events, max_fault_events)
AUTOPAGER_CONFIG_GETTER(uint64_t, umapcfg_get_num_fillers, fillers)
AUTOPAGER_CONFIG_GETTER(uint64_t, umapcfg_get_num_evictors, evictors)
AUTOPAGER_CONFIG_GETTER(uint64_t, umapcfg_get_max_pages_in_buffer, buffer_pages)
AUTOPAGER_CONFIG_GETTER(uint64_t, umapcfg_get_read_ahead, read_ahead)
AUTOPAGER_CONFIG_GETTER(int, umapcfg_get_evict_low_water_threshold, evict_low_water)
AUTOPAGER_CONFIG_GETTER(int, umapcfg_get_evict_high_water_threshold, evict_high_water)
#undef AUTOPAGER_CONFIG_GETTER

}  // extern "C"

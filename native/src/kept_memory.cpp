#include "kept_memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "autopager/config.hpp"
#include "keeper_link.hpp"
#include "region.hpp"

namespace autopager {
namespace {

static_assert(keeper::kDirtyState == static_cast<std::uint8_t>(PageState::kDirty));
static_assert(sizeof(std::atomic<std::uint8_t>) == 1 && std::atomic<std::uint8_t>::is_always_lock_free,
              "page states are bytes the keeper reads as such");

std::atomic<std::uint64_t> next_key{1};

// A memfd of `bytes`, sparse (nothing is allocated until written).
int sparse_memfd(const char* name, std::size_t bytes) {
  int fd = memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), std::string("memfd_create of ") + name);
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    int err = errno;
    close(fd);
    throw std::system_error(err, std::generic_category(), std::string("ftruncate of ") + name);
  }
  return fd;
}

}  // namespace

KeptMemory::KeptMemory(char* base, std::uint64_t page_count, std::size_t page_size, std::size_t length, int prot,
                       int store_fd, std::uint64_t store_offset)
    : key_(next_key.fetch_add(1)) {
  const std::size_t mapped = page_count * page_size;
  const std::size_t system_page = system_page_size();
  states_bytes_ = (page_count + system_page - 1) / system_page * system_page;
  int pages = sparse_memfd(keeper::kPagesName, mapped);
  int states = -1;
  try {
    states = sparse_memfd("autopager-states", states_bytes_);
    void* area = mmap(nullptr, states_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, states, 0);
    if (area == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "mmap of a region's page states");
    states_ = static_cast<std::atomic<std::uint8_t>*>(area);
    keeper::Message message{};
    message.kind = keeper::MessageKind::kKeep;
    message.key = key_;
    message.store_offset = store_offset;
    message.page_size = page_size;
    message.length = length;
    // The keeper holds the region before any page of it can be written.
    keeper_link::keep(message, pages, states, store_fd);
    if (mmap(base, mapped, prot, MAP_SHARED | MAP_FIXED | MAP_NORESERVE, pages, 0) == MAP_FAILED) {
      int err = errno;
      keeper_link::forget(key_);
      throw std::system_error(err, std::generic_category(), "mmap of a region's shared page memory");
    }
  } catch (...) {
    if (states_ != nullptr) munmap(states_, states_bytes_);
    if (states >= 0) close(states);
    close(pages);
    throw;
  }
  // The mappings hold the memory from here; the keeper holds its own descriptors.
  close(states);
  close(pages);
}

KeptMemory::~KeptMemory() {
  keeper_link::forget(key_);
  munmap(states_, states_bytes_);
}

void KeptMemory::drop(const std::vector<iovec>& ranges) {
  for (const iovec& range : ranges) madvise(range.iov_base, range.iov_len, MADV_REMOVE);
}

}  // namespace autopager

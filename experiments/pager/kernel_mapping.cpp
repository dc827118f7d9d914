// The baseline: the kernel's mmap of the same file, with MADV_RANDOM for random access (no readahead)
// and the default readahead for a scan, unless --madvise says otherwise.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <system_error>

#include "mapping.hpp"

namespace bench {
namespace {

int advice_flag(const Options& o) {
  switch (o.advice) {
    case Advice::normal: return MADV_NORMAL;
    case Advice::random: return MADV_RANDOM;
    case Advice::sequential: return MADV_SEQUENTIAL;
    case Advice::none: break;
  }
  return o.pattern == Pattern::random ? MADV_RANDOM : -1;
}

const char* advice_name(int flag) {
  switch (flag) {
    case MADV_NORMAL: return "normal";
    case MADV_RANDOM: return "random";
    case MADV_SEQUENTIAL: return "sequential";
  }
  return "none";
}

class KernelMapping final : public Mapping {
 public:
  explicit KernelMapping(const Options& o) : advice_(advice_flag(o)) {
    fd_ = open(o.file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "open " + o.file);
    struct stat st {};
    if (fstat(fd_, &st) != 0) throw std::system_error(errno, std::generic_category(), "fstat " + o.file);
    const auto file_size = static_cast<std::uint64_t>(st.st_size);
    length_ = static_cast<std::size_t>(o.size ? std::min<std::uint64_t>(o.size, file_size) : file_size);
    unit_ = o.page_size ? o.page_size : static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    const int flags = o.backend == Backend::mmap_shared ? MAP_SHARED : MAP_PRIVATE;
    void* p = mmap(nullptr, length_, PROT_READ, flags, fd_, 0);
    if (p == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "mmap " + o.file);
    base_ = static_cast<char*>(p);
    if (advice_ >= 0 && madvise(base_, length_, advice_) != 0)
      throw std::system_error(errno, std::generic_category(), "madvise");
  }

  ~KernelMapping() override {
    munmap(base_, length_);
    close(fd_);
  }

  void prefetch(char* const* pages, std::size_t count) override {
    for (std::size_t i = 0; i < count; ++i) madvise(pages[i], unit_, MADV_WILLNEED);
  }

  void describe(JsonLine& out) const override {
    out.add("page_size", static_cast<std::uint64_t>(unit_)).add("madvise", advice_name(advice_));
  }

 private:
  int fd_ = -1;
  int advice_;
};

}  // namespace

std::unique_ptr<Mapping> make_kernel_mapping(const Options& options) {
  return std::make_unique<KernelMapping>(options);
}

}  // namespace bench

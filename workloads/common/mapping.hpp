// A data file mapped whole into memory, either by the pager (the UMap C API) or by the kernel (mmap),
// so each workload runs the same code on both.
#pragma once

#include <cstddef>
#include <string>

namespace workloads {

enum class Backend { pager, kernel };

// "umap" or "mmap", as reported in the result line.
const char* backend_name(Backend backend);

class MappedFile {
 public:
  // Maps all of `path`. Throws DataError when the file is missing or empty, std::runtime_error when the
  // mapping is refused (for the pager: the reason, e.g. userfaultfd not permitted).
  MappedFile(const std::string& path, bool writable, Backend backend);
  // Unmaps, writing dirty pages back; errors are reported on stderr only (use close() to see them).
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  template <class T>
  T* as() const { return static_cast<T*>(data_); }
  std::size_t size() const { return size_; }

  // Writes every dirty page back to the file; the mapping stays. Throws on a failed write.
  void flush();
  // Unmaps, writing dirty pages back. Throws on a failed write.
  void close();

 private:
  std::string path_;
  Backend backend_;
  bool writable_;
  int fd_ = -1;
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

// The pager's statistics as a JSON object, or "null" on the kernel's mmap.
std::string pager_statistics_json(Backend backend);

}  // namespace workloads

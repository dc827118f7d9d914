// A data file mapped whole into memory, either by the pager (the UMap C API) or by the kernel (mmap),
// so each workload runs the same code on both.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "autopager/store.hpp"

namespace workloads {

enum class Backend { pager, kernel };

// "umap" or "mmap", as reported in the result line.
const char* backend_name(Backend backend);

// Serves the data files the pager maps (Backend::pager) from the NBD export `uri` instead of from their own
// files: each is copied onto the export (one after another, each at an offset aligned to 1 MiB and to the page
// size) when mapped, and a writable one back to its file when unmapped, so that generating and checking the
// data stay on the local files. The export is opened as UMAP_COMPRESSION says (autopager::open_nbd_store).
void serve_data_from_nbd(const std::string& uri);

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
  // With serve_data_from_nbd: copies the file onto the export and maps it from there.
  void map_from_export(int prot);
  // Copies the file's bytes from the export back to it (a writable mapping, after unmapping).
  void copy_back_from_export();

  std::string path_;
  Backend backend_;
  std::shared_ptr<autopager::Store> window_;  // the file's bytes on the NBD export, when served from one
  bool writable_;
  int fd_ = -1;
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

// The pager's statistics as a JSON object, or "null" on the kernel's mmap.
std::string pager_statistics_json(Backend backend);

}  // namespace workloads

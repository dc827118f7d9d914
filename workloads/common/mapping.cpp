#include "mapping.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <umap/umap.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <algorithm>
#include <stdexcept>
#include <vector>

#include "autopager/pager.hpp"
#include "datafile.hpp"

namespace workloads {

const char* backend_name(Backend backend) { return backend == Backend::pager ? "umap" : "mmap"; }

namespace {

constexpr std::size_t kCopyChunk = 8u << 20;

// The NBD export the data files are served from (serve_data_from_nbd), opened on first use, and where the
// next file goes on it.
struct DataExport {
  std::string uri;
  std::shared_ptr<autopager::Store> store;
  std::uint64_t next = 0;
};
DataExport& data_export() {
  static DataExport instance;
  return instance;
}

}  // namespace

void serve_data_from_nbd(const std::string& uri) { data_export().uri = uri; }

MappedFile::MappedFile(const std::string& path, bool writable, Backend backend)
    : path_(path), backend_(backend), writable_(writable) {
  size_ = file_size(path);
  if (size_ == 0) throw DataError("data file " + path + " is empty; generate it again with --generate");
  fd_ = ::open(path.c_str(), writable ? O_RDWR : O_RDONLY);
  if (fd_ < 0) throw DataError("cannot open data file " + path + ": " + std::strerror(errno));
  const int prot = writable ? PROT_READ | PROT_WRITE : PROT_READ;
  if (backend == Backend::pager && !data_export().uri.empty()) {
    map_from_export(prot);
  } else if (backend == Backend::pager) {
    data_ = umap(nullptr, size_, prot, UMAP_PRIVATE, fd_, 0);
    if (data_ == UMAP_FAILED) {
      const int error = errno;
      ::close(fd_);
      throw std::runtime_error("the pager could not map " + path + ": " + std::strerror(error) +
                               " (see the pager's message above; --mmap runs on the kernel's mmap instead)");
    }
  } else {
    data_ = ::mmap(nullptr, size_, prot, MAP_SHARED, fd_, 0);
    if (data_ == MAP_FAILED) {
      const int error = errno;
      ::close(fd_);
      throw std::runtime_error("mmap of " + path + " failed: " + std::strerror(error));
    }
  }
}

void MappedFile::map_from_export(int prot) {
  DataExport& where = data_export();
  try {
    autopager::Pager& pager = autopager::default_pager();
    if (!where.store) where.store = autopager::open_nbd_store(where.uri, pager.config().compression, pager.config().page_size);
    const std::uint64_t align = std::max<std::uint64_t>(1u << 20, pager.config().page_size);
    const std::uint64_t base = (where.next + align - 1) / align * align;
    if (base + size_ > where.store->size()) {
      throw DataError("the NBD export " + where.uri + " (" + std::to_string(where.store->size()) +
                      " bytes) is too small for " + path_ + " at offset " + std::to_string(base));
    }
    where.next = base + size_;
    window_ = autopager::make_window_store(where.store, base, size_);
    std::vector<char> chunk(kCopyChunk);
    for (std::uint64_t at = 0; at < size_; at += chunk.size()) {
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(chunk.size(), size_ - at));
      if (pread(fd_, chunk.data(), n, static_cast<off_t>(at)) != static_cast<ssize_t>(n))
        throw std::runtime_error("reading " + path_ + " to copy it onto the NBD export failed");
      if (window_->write(chunk.data(), n, at) != static_cast<ssize_t>(n))
        throw std::runtime_error("copying " + path_ + " onto the NBD export " + where.uri + " failed: " + std::strerror(errno));
    }
    data_ = pager.map(window_, size_, prot);
  } catch (...) {
    ::close(fd_);
    throw;
  }
}

void MappedFile::copy_back_from_export() {
  std::vector<char> chunk(kCopyChunk);
  for (std::uint64_t at = 0; at < size_; at += chunk.size()) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(chunk.size(), size_ - at));
    if (window_->read(chunk.data(), n, at) != static_cast<ssize_t>(n) ||
        pwrite(fd_, chunk.data(), n, static_cast<off_t>(at)) != static_cast<ssize_t>(n))
      throw std::runtime_error("copying " + path_ + " back from the NBD export failed: " + std::strerror(errno));
  }
}

MappedFile::~MappedFile() {
  try {
    close();
  } catch (const std::exception& error) {
    std::cerr << "error: " << error.what() << "\n";
  }
}

void MappedFile::flush() {
  if (!data_ || !writable_) return;
  const int status = backend_ == Backend::pager ? umap_flush() : ::msync(data_, size_, MS_SYNC);
  if (status != 0) throw std::runtime_error("writing back " + path_ + " failed: " + std::strerror(errno));
}

void MappedFile::close() {
  if (!data_) return;
  void* data = data_;
  data_ = nullptr;
  int status = 0;
  if (backend_ == Backend::pager) {
    status = uunmap(data, size_);
  } else {
    if (writable_) status = ::msync(data, size_, MS_SYNC);
    if (::munmap(data, size_) != 0) status = -1;
  }
  const int error = errno;
  if (status == 0 && window_ && writable_) {
    try {
      copy_back_from_export();
    } catch (...) {
      ::close(fd_);
      fd_ = -1;
      throw;
    }
  }
  ::close(fd_);
  fd_ = -1;
  if (status != 0) throw std::runtime_error("unmapping " + path_ + " failed: " + std::strerror(error));
}

std::string pager_statistics_json(Backend backend) {
  if (backend != Backend::pager) return "null";
  return autopager::default_pager().stats().to_json();
}

}  // namespace workloads

#include "mapping.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <umap/umap.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <stdexcept>

#include "autopager/pager.hpp"
#include "datafile.hpp"

namespace workloads {

const char* backend_name(Backend backend) { return backend == Backend::pager ? "umap" : "mmap"; }

MappedFile::MappedFile(const std::string& path, bool writable, Backend backend)
    : path_(path), backend_(backend), writable_(writable) {
  size_ = file_size(path);
  if (size_ == 0) throw DataError("data file " + path + " is empty; generate it again with --generate");
  fd_ = ::open(path.c_str(), writable ? O_RDWR : O_RDONLY);
  if (fd_ < 0) throw DataError("cannot open data file " + path + ": " + std::strerror(errno));
  const int prot = writable ? PROT_READ | PROT_WRITE : PROT_READ;
  if (backend == Backend::pager) {
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
  ::close(fd_);
  fd_ = -1;
  if (status != 0) throw std::runtime_error("unmapping " + path_ + " failed: " + std::strerror(error));
}

std::string pager_statistics_json(Backend backend) {
  if (backend != Backend::pager) return "null";
  return autopager::default_pager().stats().to_json();
}

}  // namespace workloads

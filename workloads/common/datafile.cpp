#include "datafile.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "progress.hpp"
#include "random.hpp"

namespace workloads {

namespace {

constexpr std::size_t kChunkBytes = 8ULL << 20;

std::runtime_error io_error(const std::string& what, const std::string& path) {
  return std::runtime_error(what + " " + path + ": " + std::strerror(errno));
}

// Closes a descriptor when the scope ends.
struct Descriptor {
  int fd;
  ~Descriptor() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string data_path(const std::string& dir, const std::string& name) { return dir + "/" + name; }

bool file_exists(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0;
}

std::uint64_t file_size(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    throw DataError("missing data file " + path + " (" + std::strerror(errno) +
                    "); make it first with the same options plus --generate");
  }
  return static_cast<std::uint64_t>(info.st_size);
}

namespace {

// Writes the file's `size` bytes chunk by chunk from `writer` and syncs them.
void write_chunks(const Descriptor& file, const std::string& path, const std::string& shown, std::uint64_t size,
                  const ChunkWriter& writer) {
  Progress progress("writing " + shown, size);
  std::vector<char> buffer(kChunkBytes);
  for (std::uint64_t offset = 0; offset < size; offset += kChunkBytes) {
    const std::size_t length = static_cast<std::size_t>(std::min<std::uint64_t>(kChunkBytes, size - offset));
    writer(offset, buffer.data(), length);
    for (std::size_t written = 0; written < length;) {
      const ssize_t n = ::pwrite(file.fd, buffer.data() + written, length - written, offset + written);
      if (n < 0) throw io_error("cannot write", path);
      written += static_cast<std::size_t>(n);
    }
    progress.advance(length);
  }
  if (::fdatasync(file.fd) != 0) throw io_error("cannot sync", path);
  ::posix_fadvise(file.fd, 0, 0, POSIX_FADV_DONTNEED);
}

}  // namespace

void write_file(const std::string& path, std::uint64_t size, const ChunkWriter& writer) {
  const std::filesystem::path target(path);
  if (target.has_parent_path()) {
    std::error_code error;
    std::filesystem::create_directories(target.parent_path(), error);
    if (error) throw std::runtime_error("cannot create data directory " + target.parent_path().string() + ": " + error.message());
  }
  const std::string temporary = path + ".partial";
  Descriptor file{::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644)};
  if (file.fd < 0) throw io_error("cannot create", temporary);
  write_chunks(file, temporary, path, size, writer);
  if (::rename(temporary.c_str(), path.c_str()) != 0) throw io_error("cannot rename " + temporary + " to", path);
}

void rewrite_file(const std::string& path, std::uint64_t size, const ChunkWriter& writer) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode) || static_cast<std::uint64_t>(info.st_size) != size)
    return write_file(path, size, writer);
  Descriptor file{::open(path.c_str(), O_WRONLY)};
  if (file.fd < 0) throw io_error("cannot open", path);
  write_chunks(file, path, path, size, writer);
}

void read_file(const std::string& path, const ChunkReader& reader, std::size_t align) {
  Descriptor file{::open(path.c_str(), O_RDONLY)};
  if (file.fd < 0) throw DataError("cannot open data file " + path + ": " + std::strerror(errno));
  const std::uint64_t size = file_size(path);
  const std::size_t chunk = kChunkBytes / align * align;
  std::vector<char> buffer(chunk);
  for (std::uint64_t offset = 0; offset < size; offset += chunk) {
    const std::size_t length = static_cast<std::size_t>(std::min<std::uint64_t>(chunk, size - offset));
    for (std::size_t done = 0; done < length;) {
      const ssize_t n = ::pread(file.fd, buffer.data() + done, length - done, offset + done);
      if (n <= 0) throw DataError("cannot read data file " + path + (n < 0 ? ": " + std::string(std::strerror(errno)) : ": truncated"));
      done += static_cast<std::size_t>(n);
    }
    reader(offset, buffer.data(), length);
  }
  ::posix_fadvise(file.fd, 0, 0, POSIX_FADV_DONTNEED);
}

std::uint64_t read_sampled_words(const std::string& path, std::uint64_t samples, const WordReader& reader) {
  Descriptor file{::open(path.c_str(), O_RDONLY)};
  if (file.fd < 0) throw DataError("cannot open data file " + path + ": " + std::strerror(errno));
  const std::uint64_t words = file_size(path) / sizeof(std::uint64_t);
  const std::uint64_t count = std::min(samples, words);
  std::uint64_t hash = 0;
  for (std::uint64_t k = 0; k < count; ++k) {
    const std::uint64_t index =
        count == 1 ? 0 : static_cast<std::uint64_t>(static_cast<unsigned __int128>(k) * (words - 1) / (count - 1));
    std::uint64_t word = 0;
    const ssize_t n = ::pread(file.fd, &word, sizeof word, index * sizeof word);
    if (n != sizeof word) {
      throw DataError("cannot read data file " + path + (n < 0 ? ": " + std::string(std::strerror(errno)) : ": truncated"));
    }
    reader(index, word);
    hash = mix64(hash ^ word);
  }
  ::posix_fadvise(file.fd, 0, 0, POSIX_FADV_DONTNEED);
  return hash;
}

void drop_from_page_cache(const std::string& path) {
  Descriptor file{::open(path.c_str(), O_RDONLY)};
  if (file.fd < 0) return;
  ::fdatasync(file.fd);
  ::posix_fadvise(file.fd, 0, 0, POSIX_FADV_DONTNEED);
}

}  // namespace workloads

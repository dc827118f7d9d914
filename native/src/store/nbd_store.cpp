// A store on an NBD export (libnbd): network-attached memory, or any disk an NBD server serves.
//
// Each connection has one I/O thread that drives libnbd's state machine with poll(2); the callers (fillers,
// evictors, flushes) submit their requests on a connection and wait for their completion callbacks, so many
// requests are in flight on each connection at once, and one read or write of several chunks has all its
// chunks in flight together. Where the server allows it (nbd_can_multi_conn), the store opens several
// connections and spreads the calls over them.
//
// libnbd has no timeouts: a request that is not answered within the store's timeout shuts the connection
// down (so that no late reply can write into a buffer the caller has given up), and that connection, like one
// whose server went away, fails every request from then on (EIO): a read the pager then cannot serve is
// SIGBUS, a write-back is reported and its page kept dirty.
#include <libnbd.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <vector>

#include "autopager/store.hpp"
#include "pager_threads.hpp"

namespace autopager {
namespace {

constexpr std::uint64_t kLargestRequest = 32ULL << 20;  // what NBD servers accept in one request

std::runtime_error nbd_failure(const std::string& uri, const std::string& what) {
  const char* reason = nbd_get_error();
  return std::runtime_error("NBD export " + uri + ": " + what + (reason ? std::string(": ") + reason : std::string()));
}

// The requests of one store call: their count still in flight and the first error.
class Completion {
 public:
  void add() {
    std::lock_guard<std::mutex> lock(mutex_);
    ++pending_;
  }
  void done(int error) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (error != 0 && error_ == 0) error_ = error;
    if (--pending_ == 0) changed_.notify_all();
  }
  // Waits until every request completed or `deadline` passed; returns whether they all completed.
  bool wait_until(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_until(lock, deadline, [this] { return pending_ == 0; });
  }
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return pending_ == 0; });
  }
  int error() {
    std::lock_guard<std::mutex> lock(mutex_);
    return error_;
  }

  static int on_complete(void* self, int* error) {
    static_cast<Completion*>(self)->done(*error);
    return 1;  // retire the command
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  unsigned pending_ = 0;
  int error_ = 0;
};

class Connection {
 public:
  Connection(const std::string& uri, std::chrono::milliseconds timeout) : handle_(nbd_create()) {
    if (handle_ == nullptr) throw nbd_failure(uri, "cannot create a handle");
    // No zeroing of read buffers before each read: a read that fails is never used (the pager SIGBUSes).
    nbd_set_pread_initialize(handle_, false);
    try {
      connect(uri, timeout);
      fd_ = nbd_aio_get_fd(handle_);
      wake_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
      if (wake_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd for an NBD connection");
      io_ = start_pager_thread("ap-nbd", [this] { drive(); });
    } catch (...) {
      if (wake_ >= 0) ::close(wake_);
      nbd_close(handle_);
      throw;
    }
  }
  ~Connection() {
    stopping_.store(true);
    wake();
    io_.join();
    nbd_close(handle_);
    ::close(wake_);
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  nbd_handle* handle() const { return handle_; }

  // Submits one request (`submit` calls nbd_aio_*) counted in `completion`; on a refused submission the
  // completion gets its error at once.
  template <typename Submit>
  void start(Completion& completion, Submit submit) {
    completion.add();
    nbd_completion_callback callback{Completion::on_complete, &completion, nullptr};
    if (submit(handle_, callback) < 0) {
      const int error = nbd_get_errno();
      completion.done(error != 0 ? error : EIO);
      return;
    }
    wake();
  }

  // Waits for `completion` until the deadline and returns true; past it, shuts the connection down so that
  // libnbd fails the requests still in flight (their buffers are then the caller's again), waits for that
  // and returns false.
  bool wait(Completion& completion, std::chrono::steady_clock::time_point deadline) {
    if (completion.wait_until(deadline)) return true;
    ::shutdown(fd_, SHUT_RDWR);
    wake();
    completion.wait();
    return false;
  }

 private:
  void connect(const std::string& uri, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    if (nbd_aio_connect_uri(handle_, uri.c_str()) < 0) throw nbd_failure(uri, "cannot connect");
    while (nbd_aio_is_ready(handle_) != 1) {
      if (nbd_aio_is_dead(handle_) == 1 || nbd_aio_is_closed(handle_) == 1)
        throw nbd_failure(uri, "the connection failed");
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) throw std::runtime_error("NBD export " + uri + ": no answer within the timeout");
      if (nbd_poll(handle_, static_cast<int>(left.count())) < 0) throw nbd_failure(uri, "the connection failed");
    }
  }

  void wake() {
    const std::uint64_t one = 1;
    (void)!::write(wake_, &one, sizeof one);
  }

  // The connection's I/O thread: sends and receives for every request submitted, until the store is
  // destroyed. Once the connection died (libnbd then failed every request in flight, and refuses later ones)
  // it only waits to be stopped: it is joined with the store, which a pager may keep until the exit.
  void drive() {
    while (!stopping_.load()) {
      const bool alive = nbd_aio_is_dead(handle_) != 1 && nbd_aio_is_closed(handle_) != 1;
      pollfd fds[2] = {{wake_, POLLIN, 0}, {fd_, 0, 0}};
      if (alive) {
        const unsigned direction = nbd_aio_get_direction(handle_);
        if (direction & LIBNBD_AIO_DIRECTION_READ) fds[1].events |= POLLIN;
        if (direction & LIBNBD_AIO_DIRECTION_WRITE) fds[1].events |= POLLOUT;
      }
      if (::poll(fds, alive ? 2 : 1, -1) < 0) {
        if (errno == EINTR) continue;
        return;
      }
      if (fds[0].revents & POLLIN) {
        std::uint64_t count;
        (void)!::read(wake_, &count, sizeof count);
      }
      if (!alive) continue;
      if (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) {
        nbd_aio_notify_read(handle_);
      } else if (fds[1].revents & POLLOUT) {
        nbd_aio_notify_write(handle_);
      }
    }
  }

  nbd_handle* handle_;
  int fd_ = -1;
  int wake_ = -1;
  std::atomic<bool> stopping_{false};
  std::thread io_;
};

class NbdStore final : public Store {
 public:
  NbdStore(const std::string& uri, const NbdStoreOptions& options)
      : uri_(uri), timeout_(std::chrono::milliseconds(options.timeout_ms)) {
    if (!is_nbd_uri(uri)) throw std::invalid_argument("'" + uri + "' is not an NBD URI (nbd://host:port/export or nbd+unix:///export?socket=PATH)");
    if (options.timeout_ms == 0) throw std::invalid_argument("NBD store option timeout_ms must be at least 1");
    connections_.push_back(std::make_unique<Connection>(uri, timeout_));
    nbd_handle* first = connections_.front()->handle();
    const std::int64_t size = nbd_get_size(first);
    if (size < 0) throw nbd_failure(uri, "cannot get the export's size");
    size_ = static_cast<std::uint64_t>(size);
    writable_ = nbd_is_read_only(first) != 1;
    can_flush_ = nbd_can_flush(first) == 1;
    const std::int64_t largest = nbd_get_block_size(first, LIBNBD_SIZE_MAXIMUM);
    largest_request_ = largest > 0 ? std::min<std::uint64_t>(largest, kLargestRequest) : kLargestRequest;
    const unsigned wanted = options.connections == 0 ? 4 : options.connections;
    if (nbd_can_multi_conn(first) == 1) {
      while (connections_.size() < wanted) connections_.push_back(std::make_unique<Connection>(uri, timeout_));
    }
  }

  ssize_t read(void* dst, std::size_t n, std::uint64_t offset) override {
    const std::size_t count = offset >= size_ ? 0 : static_cast<std::size_t>(std::min<std::uint64_t>(n, size_ - offset));
    if (count == 0) return 0;
    auto* bytes = static_cast<char*>(dst);
    const int error = transfer(count, [&](nbd_handle* h, std::size_t done, std::size_t length, nbd_completion_callback cb) {
      return nbd_aio_pread(h, bytes + done, length, offset + done, cb, 0);
    });
    if (error != 0) return fail(error);
    return static_cast<ssize_t>(count);
  }

  ssize_t write(const void* src, std::size_t n, std::uint64_t offset) override {
    if (!writable_) return fail(EROFS);
    if (offset > size_ || n > size_ - offset) return fail(ENOSPC);
    const auto* bytes = static_cast<const char*>(src);
    const int error = transfer(n, [&](nbd_handle* h, std::size_t done, std::size_t length, nbd_completion_callback cb) {
      return nbd_aio_pwrite(h, bytes + done, length, offset + done, cb, 0);
    });
    if (error != 0) return fail(error);
    return static_cast<ssize_t>(n);
  }

  // NBD flush on every connection: the protocol promises durability only for the writes of the
  // connection flushed (unless multi-conn, where one would do; flushing all costs little).
  int sync() override {
    if (!can_flush_ || !writable_) return 0;
    Completion completion;
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    for (auto& connection : connections_) {
      connection->start(completion, [](nbd_handle* h, nbd_completion_callback cb) { return nbd_aio_flush(h, cb, 0); });
    }
    bool answered = true;
    for (auto& connection : connections_) answered = connection->wait(completion, deadline) && answered;
    if (!answered) return static_cast<int>(fail(ETIMEDOUT));
    return completion.error() != 0 ? static_cast<int>(fail(completion.error())) : 0;
  }

  std::uint64_t size() const override { return size_; }
  bool writable() const override { return writable_; }

 private:
  // Moves `count` bytes in chunks the server accepts, all in flight at once on one connection, and waits for
  // them; returns 0, the first error, or ETIMEDOUT when the server did not answer in time.
  template <typename Chunk>
  int transfer(std::size_t count, Chunk chunk) {
    Connection& connection = *connections_[next_.fetch_add(1, std::memory_order_relaxed) % connections_.size()];
    Completion completion;
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    for (std::size_t done = 0; done < count; done += largest_request_) {
      const std::size_t length = static_cast<std::size_t>(std::min<std::uint64_t>(largest_request_, count - done));
      connection.start(completion, [&](nbd_handle* h, nbd_completion_callback cb) { return chunk(h, done, length, cb); });
    }
    if (!connection.wait(completion, deadline)) return ETIMEDOUT;
    return completion.error();
  }

  static ssize_t fail(int error) {
    errno = error;
    return -1;
  }

  std::string uri_;
  std::chrono::milliseconds timeout_;
  std::vector<std::unique_ptr<Connection>> connections_;
  std::atomic<std::size_t> next_{0};
  std::uint64_t size_ = 0;
  std::uint64_t largest_request_ = kLargestRequest;
  bool writable_ = true;
  bool can_flush_ = false;
};

}  // namespace

std::shared_ptr<Store> make_nbd_store(const std::string& uri, const NbdStoreOptions& options) {
  return std::make_shared<NbdStore>(uri, options);
}

}  // namespace autopager

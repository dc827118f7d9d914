// A store on an NBD export (libnbd): network-attached memory, or any disk an NBD server serves.
//
// Each connection has one I/O thread that drives libnbd's state machine with poll(2); the callers (fillers,
// evictors, flushes) submit their requests on a connection and wait for their completion callbacks, so many
// requests are in flight on each connection at once. A call longer than a request (a write-back of a run of
// pages) is cut into requests of at most kRequestSize, all in flight together. Where the server allows it
// (nbd_can_multi_conn), the store opens several connections and deals the requests out over them in turn, so
// that one call's requests are received and stored by the server in parallel.
//
// libnbd has no timeouts: a call that is not answered within the store's timeout shuts its connections
// down (so that no late reply can write into a buffer the caller has given up), and such a connection, like one
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

// The most bytes one request carries (fewer where the server says so: nbd_get_block_size). A write-back of
// 8 MiB as one request is received whole before the server stores any of it, into a buffer nbdkit allocates
// for it (fresh memory, faulted in every time), and storing it holds the memory plugin's one lock over all
// 8 MiB; as 1 MiB requests over the connections, the server receives and stores them in parallel. A page of
// 1 MiB is still one request (smaller requests for reads cost more CPU and gained nothing measured).
constexpr std::uint64_t kRequestSize = 1ULL << 20;
// The send buffer asked for on a Unix socket (Linux caps it at net.core.wmem_max): a 1 MiB request goes out
// in one call from the submitting thread, in a few large pieces, instead of 200 KiB at a time (the default)
// with the I/O thread sending the rest, each piece a wake-up of the server. TCP keeps its own tuning.
constexpr int kUnixSendBuffer = 4 << 20;

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
      enlarge_send_buffer();
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
  // completion gets its error at once. libnbd sends the request from this thread as far as the socket takes
  // it; the I/O thread, already polling for the replies, is woken only when the rest is left to send.
  template <typename Submit>
  void start(Completion& completion, Submit submit) {
    completion.add();
    nbd_completion_callback callback{Completion::on_complete, &completion, nullptr};
    if (submit(handle_, callback) < 0) {
      const int error = nbd_get_errno();
      completion.done(error != 0 ? error : EIO);
      return;
    }
    if (nbd_aio_get_direction(handle_) & LIBNBD_AIO_DIRECTION_WRITE) wake();
  }

  // Shuts the connection down, so that libnbd fails the requests in flight on it (their buffers are then
  // their callers' again) and every later one.
  void shut_down() {
    ::shutdown(fd_, SHUT_RDWR);
    wake();
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

  void enlarge_send_buffer() {
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0 || address.ss_family != AF_UNIX) return;
    (void)::setsockopt(fd_, SOL_SOCKET, SO_SNDBUF, &kUnixSendBuffer, sizeof kUnixSendBuffer);  // the default still works
  }

  void wake() {
    const std::uint64_t one = 1;
    (void)!::write(wake_, &one, sizeof one);
  }

  // The connection's I/O thread: receives every reply, and sends what the submitting thread could not, until
  // the store is destroyed. Only this thread and a submission (which wakes it when output is left) change
  // libnbd's direction, and this thread reads it again before every poll. Once the connection died (libnbd
  // then failed every request in flight, and refuses later ones) it only waits to be stopped: it is joined
  // with the store, which a pager may keep until the exit.
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
    request_size_ = largest > 0 ? std::min<std::uint64_t>(largest, kRequestSize) : kRequestSize;
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
    if (!answered(completion, deadline, 0, connections_.size())) return static_cast<int>(fail(ETIMEDOUT));
    return completion.error() != 0 ? static_cast<int>(fail(completion.error())) : 0;
  }

  std::uint64_t size() const override { return size_; }
  bool writable() const override { return writable_; }

 private:
  // Moves `count` bytes as requests of at most request_size_, all in flight at once, dealt out over the
  // connections in turn, and waits for them; returns 0, the first error, or ETIMEDOUT when the server did not
  // answer in time.
  template <typename Chunk>
  int transfer(std::size_t count, Chunk chunk) {
    const std::size_t requests = static_cast<std::size_t>((count + request_size_ - 1) / request_size_);
    const std::size_t first = next_.fetch_add(requests, std::memory_order_relaxed);
    Completion completion;
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    for (std::size_t i = 0; i < requests; ++i) {
      const std::size_t done = static_cast<std::size_t>(i * request_size_);
      const std::size_t length = static_cast<std::size_t>(std::min<std::uint64_t>(request_size_, count - done));
      connections_[(first + i) % connections_.size()]->start(
          completion, [&](nbd_handle* h, nbd_completion_callback cb) { return chunk(h, done, length, cb); });
    }
    if (!answered(completion, deadline, first, std::min(requests, connections_.size()))) return ETIMEDOUT;
    return completion.error();
  }

  // Waits for `completion` until the deadline and returns true; past it, shuts down the `used` connections
  // from index `first` on (libnbd then fails their requests, so no late reply writes into a buffer the caller
  // has taken back), waits for that and returns false.
  bool answered(Completion& completion, std::chrono::steady_clock::time_point deadline, std::size_t first,
                std::size_t used) {
    if (completion.wait_until(deadline)) return true;
    for (std::size_t i = 0; i < used; ++i) connections_[(first + i) % connections_.size()]->shut_down();
    completion.wait();
    return false;
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
  std::uint64_t request_size_ = kRequestSize;
  bool writable_ = true;
  bool can_flush_ = false;
};

}  // namespace

std::shared_ptr<Store> make_nbd_store(const std::string& uri, const NbdStoreOptions& options) {
  return std::make_shared<NbdStore>(uri, options);
}

}  // namespace autopager

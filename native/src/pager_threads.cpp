#include "pager_threads.hpp"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <future>
#include <memory>
#include <mutex>
#include <set>
#include <system_error>

#include "program_end.hpp"

namespace autopager {
namespace {

// The pager threads of this process, by thread id. Never destroyed: threads end during exit.
struct PagerThreads {
  std::mutex mutex;
  std::set<pid_t> ids;
  bool watched = false;  // the watch for the program's end is running
};

PagerThreads& pager_threads() {
  static PagerThreads* threads = [] {
    auto* made = new PagerThreads();
    // A forked child has none of its parent's threads: it starts a watch of its own with its first pager thread.
    pthread_atfork([] { pager_threads().mutex.lock(); }, [] { pager_threads().mutex.unlock(); },
                   [] {
                     PagerThreads& threads = pager_threads();
                     threads.ids.clear();
                     threads.watched = false;
                     threads.mutex.unlock();
                   });
    return made;
  }();
  return *threads;
}

std::thread start_blocking_signals(const char* name, std::function<void()> body) {
  sigset_t blocked;
  sigfillset(&blocked);
  for (int synchronous : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS}) sigdelset(&blocked, synchronous);
  sigset_t previous;
  int err = pthread_sigmask(SIG_BLOCK, &blocked, &previous);
  if (err != 0) throw std::system_error(err, std::generic_category(), "blocking signals for a pager thread");
  // The thread counts as the pager's from before start_pager_thread returns: the watch never takes it for
  // one of the program's.
  auto registered = std::make_shared<std::promise<void>>();
  std::future<void> ready = registered->get_future();
  try {
    std::thread thread([body = std::move(body), registered] {  // inherits the mask
      const pid_t self = gettid();
      {
        std::lock_guard<std::mutex> lock(pager_threads().mutex);
        pager_threads().ids.insert(self);
      }
      registered->set_value();
      body();
      std::lock_guard<std::mutex> lock(pager_threads().mutex);
      pager_threads().ids.erase(self);
    });
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    pthread_setname_np(thread.native_handle(), name);
    ready.wait();
    return thread;
  } catch (const std::system_error& e) {
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    throw std::system_error(e.code(), "starting a pager thread (a limit on threads or memory?)");
  }
}

}  // namespace

std::thread start_pager_thread(const char* name, std::function<void()> body) {
  PagerThreads& threads = pager_threads();
  {
    std::unique_lock<std::mutex> lock(threads.mutex);
    if (!threads.watched) {
      threads.watched = true;
      lock.unlock();
      try {
        start_blocking_signals("ap-watch", watch_for_program_end).detach();
      } catch (...) {
        std::lock_guard<std::mutex> again(threads.mutex);
        threads.watched = false;
        throw;
      }
    }
  }
  return start_blocking_signals(name, std::move(body));
}

bool is_pager_thread(pid_t tid) {
  std::lock_guard<std::mutex> lock(pager_threads().mutex);
  return pager_threads().ids.count(tid) != 0;
}

}  // namespace autopager

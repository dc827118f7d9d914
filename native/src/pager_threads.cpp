#include "pager_threads.hpp"

#include <pthread.h>
#include <signal.h>

#include <cerrno>
#include <system_error>

namespace autopager {

std::thread start_pager_thread(const char* name, std::function<void()> body) {
  sigset_t blocked;
  sigfillset(&blocked);
  for (int synchronous : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS}) sigdelset(&blocked, synchronous);
  sigset_t previous;
  int err = pthread_sigmask(SIG_BLOCK, &blocked, &previous);
  if (err != 0) throw std::system_error(err, std::generic_category(), "blocking signals for a pager thread");
  try {
    std::thread thread(std::move(body));  // inherits the mask
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    pthread_setname_np(thread.native_handle(), name);
    return thread;
  } catch (const std::system_error& e) {
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    throw std::system_error(e.code(), "starting a pager thread (a limit on threads or memory?)");
  }
}

}  // namespace autopager

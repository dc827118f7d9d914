// Starting the pager's own threads (fillers, evictors, the monitor, the watch for the program's end). They
// run with every asynchronous signal blocked, so that a signal is delivered to one of the program's
// threads: a handler run on a pager thread that touched a region would wait for a fault only that thread
// could serve. Synchronous signals (SIGSEGV, SIGBUS, ...) stay deliverable: blocking them would not stop
// them, only make the kernel kill the process.
#pragma once

#include <sys/types.h>

#include <functional>
#include <thread>

namespace autopager {

// Starts `body` on a new thread with asynchronous signals blocked; the caller's mask is unchanged.
// `name` (at most 15 characters, "ap-..."), is what ps, top -H and /proc/PID/task/TID/comm show for it.
// The first one also starts the process's watch for its last program thread (program_end.hpp).
// Throws std::system_error when the thread cannot be created.
std::thread start_pager_thread(const char* name, std::function<void()> body);

// Whether the thread `tid` of this process is one start_pager_thread started (and has not ended).
bool is_pager_thread(pid_t tid);

}  // namespace autopager

// A process ends when its last thread does (glibc then calls exit(0)), but the pager's threads would keep a
// program alive whose main thread ended with pthread_exit() and whose other threads have all ended. The
// watch, one pager thread a process ("ap-watch"), looks once a second whether the main thread has ended,
// then waits (on pidfds of single threads, Linux 6.9+; elsewhere looking once a second) for every thread
// that is neither a pager thread nor the kernel's (io_uring workers), and then calls exit(0) as glibc would:
// atexit handlers run, and the pagers write every dirty page back.
#pragma once

namespace autopager {

// The watch's body; never returns but through exit(0).
void watch_for_program_end();

}  // namespace autopager

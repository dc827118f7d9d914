/* A program whose main thread ends with pthread_exit(): under glibc the process ends when its last thread
 * does, with status 0 and its atexit handlers run; the pager's threads must not keep it alive. The child's
 * main thread maps a file through the UMap C API, writes, starts a thread that writes every page and ends,
 * and ends first; the exit writes every page back. The parent checks the status, the handler and the file.
 * A child that hangs is killed after a minute (a signal the child gets could go unseen: its only threads
 * left would be the pager's, which block them). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <umap/umap.h>

enum { kPages = 256, kStride = 512, kSkipped = 77 };

static size_t length;
static uint8_t* region;
static int atexit_pipe = -1;

static uint8_t written(size_t at) { return (uint8_t)(at / kStride + 3); }

static void* write_every_page(void* unused) {
  (void)unused;
  for (size_t at = 0; at < length; at += kStride) region[at] = written(at);
  return NULL;
}

static void say_atexit_ran(void) {
  if (write(atexit_pipe, "x", 1) != 1) _exit(5);
}

static pid_t child_pid;

static void kill_the_child(int signal) {
  (void)signal;
  kill(child_pid, SIGKILL);
}

static void child(const char* path) {
  atexit(say_atexit_ran);
  int fd = open(path, O_RDWR);
  region = (uint8_t*)umap(NULL, length, PROT_READ | PROT_WRITE, UMAP_PRIVATE, fd, 0);
  if (region == UMAP_FAILED) _exit(2);
  region[7] = 0x42;
  pthread_t writer;
  if (pthread_create(&writer, NULL, write_every_page, NULL) != 0) _exit(3);
  pthread_detach(writer);
  pthread_exit(NULL);
}

int main(int argc, char** argv) {
#if defined(__SANITIZE_THREAD__)
  puts("skipped: ThreadSanitizer's own background thread keeps such a process alive without the pager too");
  return kSkipped;
#endif
  const char* path = argc > 1 ? argv[1] : "pthread_exit_program.dat";
  setenv("UMAP_BUFSIZE", "16", 1); /* 16 pages: pages are evicted too */
  length = kPages * (size_t)sysconf(_SC_PAGESIZE);
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (fd < 0 || ftruncate(fd, (off_t)length) != 0) {
    perror(path);
    return 1;
  }
  int ran[2];
  if (pipe(ran) != 0) return 1;
  pid_t pid = fork();
  if (pid == 0) {
    close(ran[0]);
    atexit_pipe = ran[1];
    child(path);
  }
  close(ran[1]);
  child_pid = pid;
  signal(SIGALRM, kill_the_child);
  alarm(60);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  alarm(0);
  char mark = 0;
  const int handler_ran = read(ran[0], &mark, 1) == 1;
  int failed = 0;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "the child ended with %s %d, not status 0\n", WIFEXITED(status) ? "status" : "signal",
            WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    failed = 1;
  }
  if (!handler_ran) {
    fprintf(stderr, "the child's atexit handler did not run\n");
    failed = 1;
  }
  uint8_t* expected = calloc(length, 1); /* after the fork: the child would leak it */
  if (expected == NULL) return 1;
  expected[7] = 0x42;
  for (size_t at = 0; at < length; at += kStride) expected[at] = written(at);
  uint8_t* contents = malloc(length);
  if (contents == NULL || pread(fd, contents, length, 0) != (ssize_t)length || memcmp(contents, expected, length) != 0) {
    fprintf(stderr, "the file does not hold every write\n");
    failed = 1;
  }
  free(contents);
  free(expected);
  close(fd);
  unlink(path);
  return failed;
}

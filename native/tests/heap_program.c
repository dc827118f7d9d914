/* The heap a program gets from malloc, mmap and realloc, as tests/core/test_exec_heap.py runs it with and without
 * `autopager exec heap=...`: each step prints a checksum of every byte it reads, which must be the same both
 * ways.
 *   heap_program steps MIB    every step below on blocks of MIB MiB
 *   heap_program big MIB      one block of MIB MiB, random updates over it, then its checksum
 *   heap_program drop MIB     a block of MIB MiB written throughout, then freed
 *   heap_program drop-at-exit MIB    the same block, never freed
 *   heap_program hold MIB     a block of MIB MiB written, then a wait for the end of standard input
 *   heap_program fill-disk MIB DIR   a block of MIB MiB, then a file in DIR written until its file system is
 *                                    full, then the block written throughout, then its checksum
 *   heap_program fill-disk-fork MIB DIR   a block half written, DIR's file system filled, some more of the
 *                                         block written, then a fork: both processes read the block
 * Its blocks are as large as the test's heap_min or larger (but the one the steps make below it). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static uint64_t checksum(const unsigned char* bytes, size_t n) {
  uint64_t sum = 1469598103934665603ull;
  for (size_t i = 0; i < n; i += 8) {
    uint64_t word;
    memcpy(&word, bytes + i, 8);
    sum = (sum ^ word) * 1099511628211ull;
  }
  return sum;
}

static uint64_t next(uint64_t* state) {
  *state = *state * 6364136223846793005ull + 1442695040888963407ull;
  return *state >> 11;
}

/* Writes a pattern into every third page, so the others are never touched. */
static void fill(unsigned char* bytes, size_t n, uint64_t seed) {
  for (size_t page = 0; page < n / 4096; page += 3)
    for (size_t at = 0; at < 4096; at += 512) bytes[page * 4096 + at] = (unsigned char)next(&seed);
}

static void print(const char* step, const unsigned char* bytes, size_t n) {
  printf("%s %016llx\n", step, (unsigned long long)checksum(bytes, n));
  fflush(stdout);
}

/* Writes every byte of [bytes, bytes + n). */
static void fill_all(unsigned char* bytes, size_t n, uint64_t seed) {
  for (size_t at = 0; at < n; at += 8) {
    uint64_t word = next(&seed);
    memcpy(bytes + at, &word, 8);
  }
}

static unsigned char* map_anonymous(size_t size) {
  void* mapped = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return mapped == MAP_FAILED ? NULL : mapped;
}

/* With the heap's threshold between SIZE / 4 and SIZE (test_exec_heap.py: 24 MiB blocks, heap_min 16 MiB), every
 * block and mapping of SIZE or more is served when made, and each call below meets it served (but the realloc
 * after fork, whose block fork handed to the kernel). */
static int steps(size_t size) {
  unsigned char* block = malloc(size);
  if (block == NULL) return 1;
  fill(block, size, 1);
  print("malloc", block, size);

  block = realloc(block, 2 * size);  /* a served block grows into a new one */
  if (block == NULL) return 1;
  print("realloc-kept", block, size);
  fill(block + size, size, 2);
  print("realloc-grown", block, 2 * size);

  unsigned char* small = malloc(size / 4);  /* glibc's, below the threshold */
  if (small == NULL) return 1;
  fill(small, size / 4, 12);
  small = realloc(small, size);  /* grows past the threshold: served from now on */
  if (small == NULL) return 1;
  fill(small + size / 4, size - size / 4, 13);
  print("realloc-from-small", small, size);
  free(small);

  pid_t child = fork();
  if (child == 0) {
    print("fork-child-reads", block, 2 * size);
    fill(block, 2 * size, 3);
    print("fork-child-wrote", block, 2 * size);
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
  print("fork-parent-after-child-wrote", block, 2 * size);
  fill(block, size, 14);
  print("fork-parent-writes", block, 2 * size);

  unsigned char* zeros = calloc(1, size);
  if (zeros == NULL) return 1;
  print("calloc", zeros, size);
  free(zeros);

  block = realloc(block, 3 * size);  /* the kernel's block (since fork) into a served one */
  if (block == NULL) return 1;
  fill(block + 2 * size, size, 15);
  print("realloc-after-fork", block, 3 * size);
  free(block);

  unsigned char* mapped = map_anonymous(size);
  if (mapped == NULL) return 1;
  fill(mapped, size, 4);
  madvise(mapped + size / 4, size / 2, MADV_DONTNEED);  /* zeros again */
  print("madvise-dontneed", mapped, size);
  fill(mapped + size / 4, size / 2, 16);
  print("madvise-dontneed-written", mapped, size);
  munmap(mapped, size);

  /* MADV_FREE: each page of the range reads as it was or as zeros, as the kernel has reclaimed it or not. */
  mapped = map_anonymous(size);
  if (mapped == NULL) return 1;
  fill_all(mapped, size, 10);
  unsigned char* before = malloc(size / 2);
  if (before == NULL) return 1;
  memcpy(before, mapped + size / 4, size / 2);
  madvise(mapped + size / 4, size / 2, MADV_FREE);
  static const unsigned char zero_page[4096];
  size_t other_pages = 0;
  for (size_t page = 0; page < size / 2; page += 4096) {
    const unsigned char* seen = mapped + size / 4 + page;
    other_pages += memcmp(seen, before + page, 4096) != 0 && memcmp(seen, zero_page, 4096) != 0;
  }
  printf("madvise-free pages-neither-as-they-were-nor-zeros %zu\n", other_pages);
  free(before);
  print("madvise-free-outside-below", mapped, size / 4);
  print("madvise-free-outside-above", mapped + 3 * size / 4, size / 4);
  fill_all(mapped + size / 4, size / 2, 17);
  print("madvise-free-written", mapped, size);
  munmap(mapped, size);

  mapped = map_anonymous(size);
  if (mapped == NULL) return 1;
  fill(mapped, size, 5);
  mprotect(mapped, size, PROT_READ);
  print("mprotect-read-only", mapped, size);
  mprotect(mapped, size, PROT_READ | PROT_WRITE);
  fill(mapped, size, 18);
  print("mprotect-writable-again", mapped, size);
  munmap(mapped, size);

  mapped = map_anonymous(size);
  if (mapped == NULL) return 1;
  fill(mapped, size, 11);
  munmap(mapped + size / 4, size / 4);  /* a hole in the middle */
  print("munmap-part-below", mapped, size / 4);
  print("munmap-part-above", mapped + size / 2, size / 2);
  munmap(mapped, size);

  unsigned char* moved = map_anonymous(size);
  if (moved == NULL) return 1;
  fill(moved, size, 7);
  moved = mremap(moved, size, 2 * size, MREMAP_MAYMOVE);
  if (moved == MAP_FAILED) return 1;
  fill(moved + size, size, 8);
  print("mremap-grown", moved, 2 * size);
  munmap(moved, 2 * size);

  /* Served to its end. */
  unsigned char* again = map_anonymous(size);
  if (again == NULL) return 1;
  fill(again, size, 6);
  print("munmap-whole", again, size);
  munmap(again, size);

  /* Below the threshold: the kernel's. */
  unsigned char* below = map_anonymous(size / 4);
  if (below == NULL) return 1;
  fill(below, size / 4, 19);
  print("below-threshold", below, size / 4);
  munmap(below, size / 4);
  return 0;
}

static int big(size_t size) {
  unsigned char* block = malloc(size);
  if (block == NULL) return 1;
  uint64_t seed = 7;
  for (size_t i = 0; i < size >> 12; ++i) block[next(&seed) % size] += (unsigned char)(i | 1);
  print("big", block, size);
  free(block);
  return 0;
}

/* Writes a file in DIRECTORY until its file system is full. */
static int fill_file_system(const char* directory) {
  char path[4096];
  snprintf(path, sizeof path, "%s/filler", directory);
  FILE* filler = fopen(path, "w");
  if (filler == NULL) return -1;
  static char chunk[1 << 16];
  while (fwrite(chunk, 1, sizeof chunk, filler) == sizeof chunk && fflush(filler) == 0) {
  }
  fclose(filler);
  return 0;
}

static int fill_disk(size_t size, const char* directory) {
  unsigned char* block = malloc(size);
  if (block == NULL || fill_file_system(directory) != 0) return 1;
  fill(block, size, 9);
  print("fill-disk", block, size);
  free(block);
  return 0;
}

/* The first half of a block written and the second read (with a pager's buffer below half the block, the first
 * half's pages go to the scratch file), the disk filled, a part of the second half written (pages no scratch
 * file has room for), then a fork: the child and the parent read the whole block. */
static int fill_disk_fork(size_t size, const char* directory) {
  unsigned char* block = malloc(size);
  if (block == NULL) return 1;
  fill(block, size / 2, 20);
  print("fill-disk-second-half", block + size / 2, size / 2);
  if (fill_file_system(directory) != 0) return 1;
  fill(block + size / 2, size / 8, 21);
  print("fill-disk-before-fork", block, size);
  pid_t child = fork();
  if (child == 0) {
    print("fill-disk-fork-child-reads", block, size);
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
  fill(block, size, 22);
  print("fill-disk-fork-parent-writes", block, size);
  free(block);
  return 0;
}

/* A block written throughout, then freed (or left to the exit): its pages are dropped, never written anywhere. */
static int drop(size_t size, int at_exit) {
  unsigned char* block = malloc(size);
  if (block == NULL) return 1;
  fill_all(block, size, 23);
  print("drop", block, size);
  if (!at_exit) free(block);
  return 0;
}

/* A block written, then a wait for the end of standard input (the test looks at the process meanwhile). */
static int hold(size_t size) {
  unsigned char* block = malloc(size);
  if (block == NULL) return 1;
  fill(block, size, 24);
  print("hold", block, size);
  char byte;
  while (read(0, &byte, 1) > 0) {
  }
  print("hold-after", block, size);
  free(block);
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: heap_program steps|big|drop|drop-at-exit|hold|fill-disk|fill-disk-fork MIB [DIR]\n");
    return 2;
  }
  size_t size = strtoull(argv[2], NULL, 10) << 20;
  if (strcmp(argv[1], "fill-disk") == 0) return argc == 4 ? fill_disk(size, argv[3]) : 2;
  if (strcmp(argv[1], "fill-disk-fork") == 0) return argc == 4 ? fill_disk_fork(size, argv[3]) : 2;
  if (strcmp(argv[1], "drop") == 0) return drop(size, 0);
  if (strcmp(argv[1], "drop-at-exit") == 0) return drop(size, 1);
  if (strcmp(argv[1], "hold") == 0) return hold(size);
  return strcmp(argv[1], "big") == 0 ? big(size) : steps(size);
}

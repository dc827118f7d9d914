/* The heap a program gets from malloc, mmap and realloc, as tests/test_exec.py's heap tests run it with and
 * without `autopager exec heap=...`: each step prints a checksum of the bytes it reads, which must be the
 * same both ways.
 *   heap_program steps MIB    every step below on blocks of MIB MiB
 *   heap_program big MIB      one block of MIB MiB, random updates over it, then its checksum
 *   heap_program fill-disk MIB DIR   a block of MIB MiB, then a file in DIR written until its file system is
 *                                    full, then the block written throughout, then its checksum */
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

static int steps(size_t size) {
  unsigned char* block = malloc(size);
  fill(block, size, 1);
  print("malloc", block, size);

  pid_t child = fork();
  if (child == 0) {
    print("fork-child-reads", block, size);
    fill(block, size, 3);
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
  print("fork-parent-after-child-wrote", block, size);

  unsigned char* zeros = calloc(1, size);
  print("calloc", zeros, size);
  free(zeros);

  block = realloc(block, 2 * size);  /* glibc grows an mmap'd block with mremap */
  print("realloc-kept", block, size);
  fill(block + size, size, 2);
  print("realloc-grown", block, 2 * size);

  free(block);

  unsigned char* mapped = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) return 1;
  fill(mapped, size, 4);
  madvise(mapped + size / 4, size / 2, MADV_DONTNEED);  /* zeros again */
  print("madvise-dontneed", mapped, size);
  fill(mapped, size, 5);
  mprotect(mapped, size, PROT_READ);
  print("mprotect-read-only", mapped, size);
  munmap(mapped + size / 4, size / 4);  /* a hole in the middle */
  print("munmap-part-below", mapped, size / 4);
  print("munmap-part-above", mapped + size / 2, size / 2);
  munmap(mapped, size);

  unsigned char* moved = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (moved == MAP_FAILED) return 1;
  fill(moved, size, 7);
  moved = mremap(moved, size, 2 * size, MREMAP_MAYMOVE);
  if (moved == MAP_FAILED) return 1;
  fill(moved + size, size, 8);
  print("mremap-grown", moved, 2 * size);
  munmap(moved, 2 * size);

  /* Served to its end. */
  unsigned char* again = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (again == MAP_FAILED) return 1;
  fill(again, size, 6);
  print("munmap-whole", again, size);
  munmap(again, size);
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

static int fill_disk(size_t size, const char* directory) {
  unsigned char* block = malloc(size);
  if (block == NULL) return 1;
  char path[4096];
  snprintf(path, sizeof path, "%s/filler", directory);
  FILE* filler = fopen(path, "w");
  if (filler == NULL) return 1;
  static char chunk[1 << 16];
  while (fwrite(chunk, 1, sizeof chunk, filler) == sizeof chunk && fflush(filler) == 0) {
  }
  fclose(filler);
  fill(block, size, 9);
  print("fill-disk", block, size);
  free(block);
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: heap_program steps|big|fill-disk MIB [DIR]\n");
    return 2;
  }
  size_t size = strtoull(argv[2], NULL, 10) << 20;
  if (strcmp(argv[1], "fill-disk") == 0) return argc == 4 ? fill_disk(size, argv[3]) : 2;
  return strcmp(argv[1], "big") == 0 ? big(size) : steps(size);
}

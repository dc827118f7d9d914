// A user's own program: maps a file read-only and scans it sparsely (a word of each 4 KiB page, twice over),
// densely (every word), or probes it at random for some seconds. usage: probe FILE scan|seqall|random SECONDS
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
int main(int argc, char** argv) {
  if (argc < 3 || (!strcmp(argv[2], "random") && argc < 4)) {
    fprintf(stderr, "usage: probe FILE scan|seqall|random SECONDS\n");
    return 2;
  }
  int fd = open(argv[1], O_RDONLY); struct stat st; fstat(fd, &st);
  const uint64_t* p = mmap(NULL, st.st_size, PROT_READ, MAP_SHARED, fd, 0);
  uint64_t words = st.st_size / 8, sum = 0; double t0 = now();
  if (!strcmp(argv[2], "scan")) {
    for (int pass = 0; pass < 2; pass++) for (uint64_t i = 0; i < words; i += 512) sum += p[i];
    printf("scan %.3f s (%.2f GB/s) %lu\n", now() - t0, 2.0 * st.st_size / (now() - t0) / 1e9, sum);
  } else if (!strcmp(argv[2], "seqall")) {
    for (uint64_t i = 0; i < words; i++) sum += p[i];
    printf("seqall %.3f s (%.2f GB/s) %lu\n", now() - t0, 1.0 * st.st_size / (now() - t0) / 1e9, sum);
  } else {
    double secs = atof(argv[3]); uint64_t n = 0, x = 88172645463325252ull;
    while (now() - t0 < secs) { for (int k = 0; k < 64; k++) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; sum += p[x % words]; } n += 64; }
    printf("random %.0f probes/s %lu\n", n / (now() - t0), sum);
  }
  return 0;
}

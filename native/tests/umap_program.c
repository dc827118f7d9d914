/* A program in the style of UMap's examples, in C: it uses only umap.h and links with -lumap. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <umap/umap.h>

int main(int argc, char** argv) {
  const char* path = argc > 1 ? argv[1] : "umap_program.dat";
  const uint64_t psize = umapcfg_get_umap_page_size();
  const uint64_t pages = 64;
  const size_t length = (size_t)(pages * psize);
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (fd < 0 || ftruncate(fd, (off_t)length) != 0) {
    perror(path);
    return 1;
  }
  uint64_t* base = (uint64_t*)umap(NULL, length, PROT_READ | PROT_WRITE, UMAP_PRIVATE, fd, 0);
  if (base == UMAP_FAILED) {
    perror("umap");
    return 1;
  }
  struct umap_prefetch_item items[2];
  items[0].page_base_addr = (char*)base + 5 * psize;
  items[1].page_base_addr = (char*)base + 15 * psize;
  umap_prefetch(2, items);
  const size_t words = length / sizeof(uint64_t);
  for (size_t i = 0; i < words; ++i) base[i] = i * 3;
  umap_flush();
  if (uunmap(base, length) != 0) {
    perror("uunmap");
    return 1;
  }
  uint64_t value = 0;
  for (size_t i = 0; i < words; i += words / 7) {
    if (pread(fd, &value, sizeof value, (off_t)(i * sizeof value)) != sizeof value || value != i * 3) {
      fprintf(stderr, "word %zu: expected %zu, found %llu\n", i, i * 3, (unsigned long long)value);
      return 1;
    }
  }
  close(fd);
  unlink(path);
  printf("umap_program: %zu words written and read back through %llu-byte pages\n", words,
         (unsigned long long)psize);
  return 0;
}

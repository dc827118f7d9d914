#include "graph.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "datafile.hpp"
#include "progress.hpp"
#include "random.hpp"

namespace workloads {

namespace {

constexpr unsigned kEdgeFactor = 16;
constexpr double kA = 0.57, kB = 0.19, kC = 0.19;
constexpr std::uint64_t kSeed = 0x5eed0bf5;
constexpr std::uint64_t kEdgesPerStream = 1 << 16;

struct Edge {
  std::uint32_t from, to;
};

// A bijection of [0, 2^scale) that keeps 0 in place (so vertex 0 stays the hub R-MAT makes it) and
// scatters the other vertices, as a real graph's numbering would.
std::uint32_t relabel(std::uint64_t vertex, unsigned scale) {
  const std::uint64_t mask = (1ULL << scale) - 1;
  vertex = (vertex * 0x9e3779b97f4a7c15ULL) & mask;
  vertex ^= vertex >> (scale / 2 + 1);
  vertex = (vertex * 0xbf58476d1ce4e5b9ULL) & mask;
  return static_cast<std::uint32_t>(vertex);
}

Edge rmat_edge(Random& random, unsigned scale) {
  std::uint64_t from = 0, to = 0;
  for (unsigned bit = 0; bit < scale; ++bit) {
    const double r = random.unit();
    const bool right = r >= kA && (r < kA + kB || r >= kA + kB + kC);
    const bool down = r >= kA + kB;
    from = (from << 1) | down;
    to = (to << 1) | right;
  }
  return {relabel(from, scale), relabel(to, scale)};
}

std::vector<Edge> generate_edges(unsigned scale) {
  const std::uint64_t count = (std::uint64_t{kEdgeFactor} << scale);
  std::vector<Edge> edges(count);
  const std::uint64_t streams = (count + kEdgesPerStream - 1) / kEdgesPerStream;
  Progress progress("generating R-MAT edges, scale " + std::to_string(scale), count, sizeof(Edge) * 2);
#pragma omp parallel for schedule(dynamic)
  for (std::uint64_t stream = 0; stream < streams; ++stream) {
    Random random(kSeed ^ (stream * 0x100000001b3ULL));
    const std::uint64_t end = std::min(count, (stream + 1) * kEdgesPerStream);
    for (std::uint64_t i = stream * kEdgesPerStream; i < end; ++i) edges[i] = rmat_edge(random, scale);
    progress.advance(end - stream * kEdgesPerStream);
  }
  return edges;
}

// CSR of the undirected graph (each edge in both directions, self loops dropped), lists sorted.
void build_csr(const std::vector<Edge>& edges, std::uint64_t vertices, std::vector<std::uint64_t>& offsets,
               std::vector<std::uint32_t>& neighbors) {
  offsets.assign(vertices + 1, 0);
#pragma omp parallel for
  for (std::size_t i = 0; i < edges.size(); ++i) {
    if (edges[i].from == edges[i].to) continue;
    __atomic_fetch_add(&offsets[edges[i].from + 1], 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&offsets[edges[i].to + 1], 1, __ATOMIC_RELAXED);
  }
  for (std::uint64_t v = 0; v < vertices; ++v) offsets[v + 1] += offsets[v];
  neighbors.resize(offsets[vertices]);
  std::vector<std::uint64_t> cursor(offsets.begin(), offsets.end() - 1);
#pragma omp parallel for
  for (std::size_t i = 0; i < edges.size(); ++i) {
    const Edge e = edges[i];
    if (e.from == e.to) continue;
    neighbors[__atomic_fetch_add(&cursor[e.from], 1, __ATOMIC_RELAXED)] = e.to;
    neighbors[__atomic_fetch_add(&cursor[e.to], 1, __ATOMIC_RELAXED)] = e.from;
  }
#pragma omp parallel for schedule(dynamic, 4096)
  for (std::uint64_t v = 0; v < vertices; ++v) {
    std::sort(neighbors.begin() + offsets[v], neighbors.begin() + offsets[v + 1]);
  }
}

template <class T>
void write_array(const std::string& path, const std::vector<T>& values) {
  const char* bytes = reinterpret_cast<const char*>(values.data());
  write_file(path, values.size() * sizeof(T), [bytes](std::uint64_t offset, char* buffer, std::size_t length) {
    std::memcpy(buffer, bytes + offset, length);
  });
}

// The last offset, i.e. the number of neighbour entries the offsets file promises.
bool read_last_offset(const std::string& path, std::uint64_t vertices, std::uint64_t& last) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return false;
  const bool ok = ::pread(fd, &last, sizeof last, vertices * sizeof(std::uint64_t)) == sizeof last;
  ::close(fd);
  return ok;
}

}  // namespace

GraphFiles graph_files(const std::string& data_dir, unsigned scale) {
  const std::string stem = data_path(data_dir, "bfs-s" + std::to_string(scale));
  return {stem + ".off", stem + ".adj"};
}

bool graph_is_complete(const GraphFiles& files, unsigned scale) {
  const std::uint64_t vertices = 1ULL << scale;
  std::uint64_t entries = 0;
  return file_exists(files.offsets) && file_exists(files.neighbors) &&
         file_size(files.offsets) == (vertices + 1) * sizeof(std::uint64_t) &&
         read_last_offset(files.offsets, vertices, entries) &&
         file_size(files.neighbors) == entries * sizeof(std::uint32_t);
}

void generate_graph(const GraphFiles& files, unsigned scale) {
  if (graph_is_complete(files, scale)) {
    std::fprintf(stderr, "reusing the graph in %s and %s\n", files.offsets.c_str(), files.neighbors.c_str());
    return;
  }
  std::vector<std::uint64_t> offsets;
  std::vector<std::uint32_t> neighbors;
  build_csr(generate_edges(scale), 1ULL << scale, offsets, neighbors);
  // The offsets last: they are what marks the graph complete.
  write_array(files.neighbors, neighbors);
  write_array(files.offsets, offsets);
}

}  // namespace workloads

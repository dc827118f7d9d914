// bfs: level-synchronous parallel breadth-first search from vertex 0 over a mapped R-MAT graph (the
// UMap bfs pattern): each level scans the vertices in order and expands those on the frontier. --searches N
// measures N searches, each from the disk on a new mapping after the graph is dropped from the page cache: a
// run long enough to measure of a search that takes seconds. Every search must find the same levels. The
// levels are checked: vertex 0 at level 0, and, in full validation, against the whole graph read again:
// every edge joins levels at most 1 apart (or two unreached vertices), every reached vertex but 0 has a
// neighbour one level up. The checksum hashes every vertex's level.
// Metric: seconds a search (the mean of the searches).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "datafile.hpp"
#include "graph.hpp"
#include "mapping.hpp"
#include "random.hpp"
#include "workload.hpp"

using namespace workloads;

namespace {

constexpr std::uint32_t kUnreached = std::numeric_limits<std::uint32_t>::max();

// Fills `levels` (one a vertex) with each vertex's distance from vertex 0, kUnreached where there is none.
void breadth_first_levels(const std::uint64_t* offsets, const std::uint32_t* neighbors,
                          std::vector<std::uint32_t>& levels) {
  std::fill(levels.begin(), levels.end(), kUnreached);
  const std::uint64_t vertices = levels.size();
  std::uint32_t* level_of = levels.data();
  level_of[0] = 0;
  for (std::uint32_t level = 0;; ++level) {
    std::uint64_t discovered = 0;
#pragma omp parallel for schedule(dynamic, 1024) reduction(+ : discovered)
    for (std::uint64_t v = 0; v < vertices; ++v) {
      if (__atomic_load_n(&level_of[v], __ATOMIC_RELAXED) != level) continue;
      for (std::uint64_t e = offsets[v]; e < offsets[v + 1]; ++e) {
        std::uint32_t* slot = &level_of[neighbors[e]];
        std::uint32_t expected = kUnreached;
        if (__atomic_load_n(slot, __ATOMIC_RELAXED) == kUnreached &&
            __atomic_compare_exchange_n(slot, &expected, level + 1, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
          ++discovered;
        }
      }
    }
    if (discovered == 0) break;
  }
}

std::vector<std::uint64_t> read_offsets(const std::string& path) {
  std::vector<std::uint64_t> offsets(file_size(path) / sizeof(std::uint64_t));
  read_file(path, [&offsets](std::uint64_t offset, const char* data, std::size_t length) {
    std::copy(data, data + length, reinterpret_cast<char*>(offsets.data()) + offset);
  });
  return offsets;
}

// Empty when levels rooted at vertex 0 are a breadth-first labelling of the graph, else the first violation.
std::string check_edges(const GraphFiles& files, const std::vector<std::uint32_t>& levels) {
  const std::vector<std::uint64_t> offsets = read_offsets(files.offsets);
  std::vector<bool> has_parent(levels.size(), false);
  std::string problem;
  std::uint64_t vertex = 0;
  read_file(files.neighbors, [&](std::uint64_t offset, const char* data, std::size_t length) {
    const auto* neighbors = reinterpret_cast<const std::uint32_t*>(data);
    const std::uint64_t first = offset / sizeof(std::uint32_t);
    for (std::uint64_t i = 0; i < length / sizeof(std::uint32_t) && problem.empty(); ++i) {
      while (offsets[vertex + 1] <= first + i) ++vertex;
      const std::uint32_t from = levels[vertex], to = levels[neighbors[i]];
      const bool both_unreached = from == kUnreached && to == kUnreached;
      const bool adjacent_levels = from != kUnreached && to != kUnreached && (from > to ? from - to : to - from) <= 1;
      if (!both_unreached && !adjacent_levels) {
        std::ostringstream out;
        out << "edge " << vertex << "-" << neighbors[i] << " joins levels " << static_cast<std::int64_t>(from)
            << " and " << static_cast<std::int64_t>(to);
        problem = out.str();
      }
      if (from != kUnreached && to + 1 == from) has_parent[vertex] = true;
    }
  });
  if (!problem.empty()) return problem;
  for (std::uint64_t v = 1; v < levels.size(); ++v) {
    if (levels[v] != kUnreached && !has_parent[v]) return "vertex " + std::to_string(v) + " has no parent";
  }
  return "";
}

// Reached vertices, depth, and a hash of the whole labelling.
std::string summarize(const std::vector<std::uint32_t>& levels) {
  std::uint64_t reached = 0, depth = 0, hash = 0;
  for (std::uint64_t v = 0; v < levels.size(); ++v) {
    hash = mix64(hash ^ levels[v]);
    if (levels[v] == kUnreached) continue;
    ++reached;
    depth = std::max<std::uint64_t>(depth, levels[v]);
  }
  std::ostringstream out;
  out << "reached " << reached << " depth " << depth << " levels " << std::hex << hash;
  return out.str();
}

Result run(const Options& options, const Settings& settings) {
  const unsigned scale = static_cast<unsigned>(options.integer("scale", 1, 31));
  const std::uint64_t searches = options.integer("searches", 1, 1000000);
  const GraphFiles files = graph_files(settings.data_dir, scale);
  if (settings.generate_only) {
    generate_graph(files, scale);
    return {};
  }
  if (!graph_is_complete(files, scale)) {
    throw DataError("no complete graph of scale " + std::to_string(scale) + " in " + settings.data_dir +
                    " (missing or partial " + files.offsets + " / " + files.neighbors +
                    "); make it with --generate --scale " + std::to_string(scale));
  }
  const std::uint64_t vertices = 1ULL << scale;
  Result result{"seconds", 0, "minimize", "ok", "", ""};
  std::vector<std::uint32_t> levels(vertices);
  std::string first_summary, summary, problem;
  for (std::uint64_t search = 1; search <= searches; ++search) {
    if (search > 1) {
      drop_from_page_cache(files.offsets);
      drop_from_page_cache(files.neighbors);
    }
    MappedFile offsets(files.offsets, /*writable=*/false, settings.backend);
    MappedFile neighbors(files.neighbors, /*writable=*/false, settings.backend);
    Stopwatch timer;
    breadth_first_levels(offsets.as<std::uint64_t>(), neighbors.as<std::uint32_t>(), levels);
    result.value += timer.seconds() / static_cast<double>(searches);
    if (search == searches) result.stats = pager_statistics_json(settings.backend);
    summary = summarize(levels);
    if (search == 1) first_summary = summary;
    else if (summary != first_summary && problem.empty())
      problem = "search " + std::to_string(search) + " found other levels than search 1 (" + summary + ")";
  }
  result.validation = settings.validation;
  if (problem.empty() && levels[0] != 0) problem = "vertex 0 is not at level 0";
  if (problem.empty() && settings.validation == Validation::full) problem = check_edges(files, levels);
  if (!problem.empty()) result.check = problem;
  result.checksum = summary;
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  Options options("bfs", "Breadth-first search from vertex 0 over a mapped R-MAT graph (CSR).");
  options.add("scale", "20", "log2 of the number of vertices (16 edges a vertex)");
  options.add("searches", "1", "searches from vertex 0, each from the disk on a new mapping (the metric is their mean)");
  return workload_main(options, argc, argv, run);
}

// The BFS input: an undirected R-MAT graph (a=0.57, b=0.19, c=0.19, d=0.05, 16 edges a vertex) in
// compressed sparse row form, as two files: the offsets (2^scale + 1 uint64) and the neighbours (uint32).
#pragma once

#include <cstdint>
#include <string>

namespace workloads {

struct GraphFiles {
  std::string offsets;    // bfs-s<scale>.off: offsets[v] .. offsets[v+1] index v's neighbours
  std::string neighbors;  // bfs-s<scale>.adj
};

GraphFiles graph_files(const std::string& data_dir, unsigned scale);

// Whether both files exist and agree with each other and with `scale`.
bool graph_is_complete(const GraphFiles& files, unsigned scale);

// Generates the graph (deterministic for a scale, whatever the thread count) unless it is complete.
void generate_graph(const GraphFiles& files, unsigned scale);

}  // namespace workloads

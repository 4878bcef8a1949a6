// PageRank, the graph-analytics built-in side task: the graph (a generated
// R-MAT graph, or an edge-list file) in compressed sparse rows of incoming
// edges, and a power iteration that advances in bounded slices so that one
// side-task step stays within a few milliseconds at any graph size.
//
// Thread-safety: none; one thread drives a PageRankEngine.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace pw {

using GraphEdge = std::pair<int64_t, int64_t>;  // (source, target)

// R-MAT (Chakrabarti et al.; Graph500's a=0.57, b=c=0.19): 2^scale vertices,
// edge_factor * 2^scale directed edges, deterministic for a seed. Reserves
// all edges up front, so a graph too large for memory fails at once
// (std::bad_alloc) rather than after minutes of generation.
std::vector<GraphEdge> GenerateRmat(int scale, int edge_factor, uint64_t seed);

// "u v" per line (whitespace-separated non-negative integers; '#' and '%'
// start comments; blank lines skipped). NotFound / IoError for the file,
// InvalidArgument "FILE:LINE: ..." for a bad line. `num_vertices` = largest id + 1.
struct EdgeList {
  int64_t num_vertices = 0;
  std::vector<GraphEdge> edges;
};
Result<EdgeList> ReadEdgeList(const std::string& path);

// Incoming-edge CSR: the sources of the edges into v are
// sources[offsets[v] .. offsets[v+1]); out_degree counts multi-edges.
struct InCsr {
  int64_t num_vertices = 0;
  std::vector<int64_t> offsets;
  std::vector<int32_t> sources;
  std::vector<int32_t> out_degree;
};
// InvalidArgument when an id is outside [0, num_vertices) or there are 2^31 or more vertices.
Result<InCsr> BuildInCsr(int64_t num_vertices, const std::vector<GraphEdge>& edges);

// rank'(v) = (1-d)/n + d * (sum over edges u->v of rank(u)/outdeg(u) + dangling/n),
// where dangling is the rank held by vertices without out-edges (spread
// uniformly, so ranks keep summing to 1). Starts from 1/n everywhere.
class PageRankEngine {
 public:
  PageRankEngine(InCsr graph, double damping);
  // Does at most about `max_ops` units of work (an edge or a vertex each)
  // and returns the number of edges it processed; returns early when it
  // completes an iteration (at the last vertex).
  int64_t Advance(int64_t max_ops);
  int64_t iterations() const { return iterations_; }
  // L1 change of the last completed iteration.
  double residual() const { return residual_; }
  // Ranks after the last completed iteration.
  const std::vector<double>& ranks() const { return rank_; }
  const InCsr& graph() const { return graph_; }

 private:
  InCsr graph_;
  double damping_;
  std::vector<double> rank_, next_, contrib_;
  int phase_ = 0;          // 0: contributions of the current ranks, 1: pull sums
  int64_t cursor_ = 0;     // next vertex of the phase
  double dangling_ = 0, residual_ = 0;
  int64_t iterations_ = 0;
};

}  // namespace pw

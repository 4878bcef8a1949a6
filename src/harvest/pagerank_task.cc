// PageRank side task: R-MAT or edge-list graph, incoming-edge CSR, power
// iteration in bounded slices (harvest/pagerank_task.h). Work unit: edges.
#include "harvest/pagerank_task.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <limits>
#include <random>

#include "core/file_io.h"
#include "harvest/builtin_tasks.h"

namespace pw {

std::vector<GraphEdge> GenerateRmat(int scale, int edge_factor, uint64_t seed) {
  const int64_t n = int64_t{1} << scale;
  const int64_t m = n * edge_factor;
  std::vector<GraphEdge> edges;
  edges.reserve(static_cast<size_t>(m));
  std::mt19937_64 rng(seed);
  // Our own [0,1) conversion: std distributions may differ across libraries.
  auto uniform = [&rng] { return static_cast<double>(rng() >> 11) * 0x1.0p-53; };
  constexpr double a = 0.57, b = 0.19, c = 0.19;
  for (int64_t e = 0; e < m; ++e) {
    int64_t u = 0, v = 0;
    for (int bit = scale - 1; bit >= 0; --bit) {
      const double r = uniform();
      if (r < a) {
      } else if (r < a + b) {
        v |= int64_t{1} << bit;
      } else if (r < a + b + c) {
        u |= int64_t{1} << bit;
      } else {
        u |= int64_t{1} << bit;
        v |= int64_t{1} << bit;
      }
    }
    edges.emplace_back(u, v);
  }
  return edges;
}

Result<EdgeList> ReadEdgeList(const std::string& path) {
  // ReadTextFile gives the NotFound / IoError messages for the file itself.
  PW_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path));
  EdgeList list;
  size_t start = 0;
  int64_t line_no = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + start, end - start);
    start = end + 1;
    ++line_no;
    const size_t hash = line.find_first_of("#%");
    if (hash != std::string_view::npos) line = line.substr(0, hash);
    int64_t ids[2];
    int count = 0;
    size_t i = 0;
    auto bad = [&](const std::string& why) {
      std::string shown(line.substr(0, 60));
      while (!shown.empty() && (shown.back() == '\r' || shown.back() == ' ')) shown.pop_back();
      return Status::InvalidArgument(path + ":" + std::to_string(line_no) + ": " + why + " in '" + shown +
                                     "'; each line is 'SOURCE TARGET' (non-negative vertex ids), '#' starts a comment");
    };
    while (true) {
      while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
      if (i == line.size()) break;
      size_t j = i;
      while (j < line.size() && !std::isspace(static_cast<unsigned char>(line[j]))) ++j;
      const std::string_view word = line.substr(i, j - i);
      if (count == 2) return bad("more than two fields");
      int64_t v = 0;
      for (char ch : word) {
        if (ch < '0' || ch > '9') return bad("'" + std::string(word) + "' is not a vertex id");
        if (v > (std::numeric_limits<int32_t>::max() - 9) / 10) return bad("vertex id too large (max 2^31-2)");
        v = v * 10 + (ch - '0');
      }
      ids[count++] = v;
      i = j;
    }
    if (count == 0) continue;
    if (count == 1) return bad("one vertex id where two were expected");
    list.edges.emplace_back(ids[0], ids[1]);
    list.num_vertices = std::max(list.num_vertices, std::max(ids[0], ids[1]) + 1);
  }
  if (list.edges.empty()) {
    return Status::InvalidArgument(path + ": no edges; each line is 'SOURCE TARGET' (non-negative vertex ids)");
  }
  return list;
}

Result<InCsr> BuildInCsr(int64_t num_vertices, const std::vector<GraphEdge>& edges) {
  if (num_vertices <= 0 || num_vertices >= std::numeric_limits<int32_t>::max()) {
    return Status::InvalidArgument("graph: " + std::to_string(num_vertices) +
                                   " vertices; PageRank takes 1 to 2^31-2 vertices");
  }
  InCsr g;
  g.num_vertices = num_vertices;
  g.offsets.assign(static_cast<size_t>(num_vertices) + 1, 0);
  g.out_degree.assign(static_cast<size_t>(num_vertices), 0);
  for (const auto& [u, v] : edges) {
    if (u < 0 || v < 0 || u >= num_vertices || v >= num_vertices) {
      return Status::InvalidArgument("graph: edge " + std::to_string(u) + " -> " + std::to_string(v) +
                                     " has a vertex outside [0, " + std::to_string(num_vertices) + ")");
    }
    ++g.offsets[v + 1];
    ++g.out_degree[u];
  }
  for (int64_t v = 0; v < num_vertices; ++v) g.offsets[v + 1] += g.offsets[v];
  g.sources.resize(edges.size());
  std::vector<int64_t> fill(g.offsets.begin(), g.offsets.end() - 1);
  for (const auto& [u, v] : edges) g.sources[fill[v]++] = static_cast<int32_t>(u);
  return g;
}

PageRankEngine::PageRankEngine(InCsr graph, double damping) : graph_(std::move(graph)), damping_(damping) {
  const size_t n = static_cast<size_t>(graph_.num_vertices);
  rank_.assign(n, 1.0 / static_cast<double>(n));
  next_.assign(n, 0.0);
  contrib_.assign(n, 0.0);
}

int64_t PageRankEngine::Advance(int64_t max_ops) {
  const int64_t n = graph_.num_vertices;
  const double inv_n = 1.0 / static_cast<double>(n);
  int64_t ops = 0, edges = 0;
  while (ops < max_ops) {
    if (phase_ == 0) {
      // Contributions (and the dangling mass) of the ranks of the last iteration.
      const int64_t end = std::min(n, cursor_ + std::max<int64_t>(1, max_ops - ops));
      for (int64_t u = cursor_; u < end; ++u) {
        const int32_t d = graph_.out_degree[u];
        if (d == 0) {
          dangling_ += rank_[u];
          contrib_[u] = 0;
        } else {
          contrib_[u] = rank_[u] / d;
        }
      }
      ops += end - cursor_;
      cursor_ = end;
      if (cursor_ == n) phase_ = 1, cursor_ = 0;
      continue;
    }
    const double base = (1.0 - damping_) * inv_n + damping_ * dangling_ * inv_n;
    while (cursor_ < n && ops < max_ops) {
      double sum = 0;
      const int64_t b = graph_.offsets[cursor_], e = graph_.offsets[cursor_ + 1];
      for (int64_t k = b; k < e; ++k) sum += contrib_[graph_.sources[k]];
      next_[cursor_] = base + damping_ * sum;
      ops += 1 + (e - b);
      edges += e - b;
      ++cursor_;
    }
    if (cursor_ == n) {
      double residual = 0;
      for (int64_t v = 0; v < n; ++v) residual += std::abs(next_[v] - rank_[v]);
      ops += n;
      residual_ = residual;
      rank_.swap(next_);
      ++iterations_;
      phase_ = 0, cursor_ = 0, dangling_ = 0;
      break;  // a step never crosses an iteration, so iters=N stops at exactly N
    }
  }
  return edges;
}

namespace {

class PageRankTask : public SideTask {
 public:
  PageRankTask(int scale, int edge_factor, uint64_t seed, std::string graph_file, double damping, int64_t iters,
               int64_t slice)
      : scale_(scale), edge_factor_(edge_factor), seed_(seed), graph_file_(std::move(graph_file)),
        damping_(damping), iters_(iters), slice_(slice) {}
  std::string name() const override { return "pagerank"; }
  std::string unit() const override { return "edges"; }
  Status Setup() override {
    Result<InCsr> csr = Status::Internal("unset");
    if (!graph_file_.empty()) {
      PW_ASSIGN_OR_RETURN(EdgeList list, ReadEdgeList(graph_file_));
      csr = BuildInCsr(list.num_vertices, list.edges);
    } else {
      std::vector<GraphEdge> edges = GenerateRmat(scale_, edge_factor_, seed_);
      csr = BuildInCsr(int64_t{1} << scale_, edges);
    }
    if (!csr.ok()) return csr.status();
    engine_ = std::make_unique<PageRankEngine>(std::move(csr).value(), damping_);
    return Status::Ok();
  }
  Result<double> Step() override {
    if (!engine_) return Status::FailedPrecondition("pagerank: Step before Setup");
    return static_cast<double>(engine_->Advance(slice_));
  }
  bool Done() const override { return iters_ > 0 && engine_ && engine_->iterations() >= iters_; }
  std::vector<std::pair<std::string, double>> Metrics() const override {
    if (!engine_) return {};
    return {{"vertices", static_cast<double>(engine_->graph().num_vertices)},
            {"edges", static_cast<double>(engine_->graph().sources.size())},
            {"iterations", static_cast<double>(engine_->iterations())},
            {"residual", engine_->residual()}};
  }

 private:
  int scale_, edge_factor_;
  uint64_t seed_;
  std::string graph_file_;
  double damping_;
  int64_t iters_, slice_;
  std::unique_ptr<PageRankEngine> engine_;
};

}  // namespace

BuiltinSideTaskInfo PageRankTaskInfo() {
  return {"pagerank",
          "edges",
          "PageRank (power iteration) on a generated R-MAT graph or an edge-list file",
          {{"scale", "16", "R-MAT graph of 2^scale vertices (1-30)"},
           {"edge_factor", "16", "R-MAT edges per vertex (1-64)"},
           {"seed", "1", "R-MAT generator seed"},
           {"graph", "", "edge-list file ('SOURCE TARGET' per line) instead of R-MAT"},
           {"damping", "0.85", "damping factor (0-1)"},
           {"iters", "0", "iterations before the task finishes (0: never)"},
           {"slice", "200000", "edges and vertices visited per step (bounds the step time)"}}};
}

Result<std::unique_ptr<SideTask>> MakePageRankTask(const TaskOptions& o) {
  PW_ASSIGN_OR_RETURN(int64_t scale, o.Int("scale", 1, 30));
  PW_ASSIGN_OR_RETURN(int64_t edge_factor, o.Int("edge_factor", 1, 64));
  PW_ASSIGN_OR_RETURN(int64_t seed, o.Int("seed", 0, std::numeric_limits<int64_t>::max()));
  PW_ASSIGN_OR_RETURN(double damping, o.Double("damping", 0.0, 1.0));
  PW_ASSIGN_OR_RETURN(int64_t iters, o.Int("iters", 0, std::numeric_limits<int32_t>::max()));
  PW_ASSIGN_OR_RETURN(int64_t slice, o.Int("slice", 1, int64_t{1} << 40));
  if (o.Given("graph") && (o.Given("scale") || o.Given("edge_factor") || o.Given("seed"))) {
    return Status::InvalidArgument("side task pagerank: graph=FILE reads the graph from a file; "
                                   "scale, edge_factor and seed apply only to the generated R-MAT graph");
  }
  return std::unique_ptr<SideTask>(std::make_unique<PageRankTask>(
      static_cast<int>(scale), static_cast<int>(edge_factor), static_cast<uint64_t>(seed), o.String("graph"),
      damping, iters, slice));
}

}  // namespace pw

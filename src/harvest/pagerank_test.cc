// PageRank correctness: a hand-solved 3-vertex graph, a dense power
// iteration reference on R-MAT graphs (with dangling vertices), bounded
// slices, the edge-list reader's errors and the generator's determinism.
#include "harvest/pagerank_task.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "harvest/side_task.h"

namespace pw {
namespace {

void RunIterations(PageRankEngine& engine, int64_t iterations, int64_t slice) {
  while (engine.iterations() < iterations) engine.Advance(slice);
}

TEST(PageRankTest, HandSolvedThreeVertexGraph) {
  // 0->1, 0->2, 1->2, 2->0; no dangling vertex. With c = (1-d)/3 the fixed point is
  //   r0 = c + d r2,  r1 = c + d r0/2,  r2 = c + d (r0/2 + r1)
  // => r0 = c (1 + d + d^2) / (1 - d^2 (1+d) / 2), then r1 and r2 from r0.
  const double d = 0.85, c = (1 - d) / 3;
  const double r0 = c * (1 + d + d * d) / (1 - d * d * (1 + d) / 2);
  const double r1 = c + d * r0 / 2;
  const double r2 = c + d * (r0 / 2 + r1);
  ASSERT_NEAR(r0 + r1 + r2, 1.0, 1e-12);
  Result<InCsr> csr = BuildInCsr(3, {{0, 1}, {0, 2}, {1, 2}, {2, 0}});
  ASSERT_TRUE(csr.ok()) << csr.status().ToString();
  PageRankEngine engine(std::move(csr).value(), d);
  RunIterations(engine, 200, /*slice=*/2);  // tiny slices: every phase split across steps
  EXPECT_NEAR(engine.ranks()[0], r0, 1e-12);
  EXPECT_NEAR(engine.ranks()[1], r1, 1e-12);
  EXPECT_NEAR(engine.ranks()[2], r2, 1e-12);
  EXPECT_LT(engine.residual(), 1e-12);
}

// Dense reference: M[v][u] = 1/outdeg(u) per edge u->v; dangling mass spread uniformly.
std::vector<double> DensePageRank(int64_t n, const std::vector<GraphEdge>& edges, double d, int iterations) {
  std::vector<std::vector<double>> m(n, std::vector<double>(n, 0.0));
  std::vector<int> out(n, 0);
  for (const auto& [u, v] : edges) ++out[u];
  for (const auto& [u, v] : edges) m[v][u] += 1.0 / out[u];
  std::vector<double> r(n, 1.0 / n), next(n);
  for (int it = 0; it < iterations; ++it) {
    double dangling = 0;
    for (int64_t u = 0; u < n; ++u) {
      if (out[u] == 0) dangling += r[u];
    }
    for (int64_t v = 0; v < n; ++v) {
      double s = 0;
      for (int64_t u = 0; u < n; ++u) s += m[v][u] * r[u];
      next[v] = (1 - d) / n + d * (s + dangling / n);
    }
    r.swap(next);
  }
  return r;
}

TEST(PageRankTest, MatchesDenseReferenceOnRmatGraphs) {
  for (uint64_t seed : {1, 2, 7}) {
    const int scale = 6;
    std::vector<GraphEdge> edges = GenerateRmat(scale, 4, seed);
    const int64_t n = int64_t{1} << scale;
    int dangling = 0;
    std::vector<int> out(n, 0);
    for (const auto& [u, v] : edges) ++out[u];
    for (int x : out) dangling += x == 0;
    EXPECT_GT(dangling, 0) << "R-MAT graphs this small leave vertices without out-edges";
    Result<InCsr> csr = BuildInCsr(n, edges);
    ASSERT_TRUE(csr.ok());
    PageRankEngine engine(std::move(csr).value(), 0.85);
    RunIterations(engine, 7, /*slice=*/37);
    const std::vector<double> want = DensePageRank(n, edges, 0.85, 7);
    double sum = 0;
    for (int64_t v = 0; v < n; ++v) {
      EXPECT_NEAR(engine.ranks()[v], want[v], 1e-13) << "seed " << seed << " vertex " << v;
      sum += engine.ranks()[v];
    }
    EXPECT_NEAR(sum, 1.0, 1e-12);
  }
}

TEST(PageRankTest, AdvanceIsBoundedAndCountsEveryEdgeOncePerIteration) {
  std::vector<GraphEdge> edges = GenerateRmat(8, 8, 3);
  Result<InCsr> csr = BuildInCsr(256, edges);
  ASSERT_TRUE(csr.ok());
  PageRankEngine engine(std::move(csr).value(), 0.85);
  int64_t total = 0;
  while (engine.iterations() < 2) {
    const int64_t e = engine.Advance(100);
    EXPECT_LE(e, 100 + 256) << "one vertex's in-edges may overshoot the slice, never more";
    total += e;
  }
  EXPECT_EQ(total, 2 * static_cast<int64_t>(edges.size()));
}

TEST(PageRankTest, RmatIsDeterministicAndInRange) {
  const std::vector<GraphEdge> a = GenerateRmat(10, 16, 42), b = GenerateRmat(10, 16, 42), c = GenerateRmat(10, 16, 43);
  EXPECT_EQ(a.size(), size_t{16} << 10);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  for (const auto& [u, v] : a) {
    ASSERT_GE(u, 0);
    ASSERT_LT(u, 1024);
    ASSERT_GE(v, 0);
    ASSERT_LT(v, 1024);
  }
}

class EdgeListTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& text) {
    const std::string path = (std::filesystem::temp_directory_path() /
                              ("pw_pagerank_" + std::to_string(getpid()) + "_" + std::to_string(n_++) + ".txt"))
                                 .string();
    std::ofstream(path) << text;
    paths_.push_back(path);
    return path;
  }
  void TearDown() override {
    for (const std::string& p : paths_) std::remove(p.c_str());
  }
  std::vector<std::string> paths_;
  int n_ = 0;
};

TEST_F(EdgeListTest, ReadsEdgesWithComments) {
  const std::string path = Write("# a graph\n0 1\n\n0\t2  % trailing comment\n1 2\r\n2 0\n");
  Result<EdgeList> list = ReadEdgeList(path);
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  EXPECT_EQ(list->num_vertices, 3);
  EXPECT_EQ(list->edges, (std::vector<GraphEdge>{{0, 1}, {0, 2}, {1, 2}, {2, 0}}));
}

TEST_F(EdgeListTest, BadLinesNameFileAndLine) {
  struct Case {
    std::string text, expect;
  } cases[] = {{"0 1\n1 x\n", ":2: 'x' is not a vertex id"},
               {"0 1\n\n3\n", ":3: one vertex id"},
               {"0 1 2\n", ":1: more than two fields"},
               {"0 -1\n", ":1: '-1' is not a vertex id"},
               {"# only comments\n", "no edges"}};
  for (const Case& c : cases) {
    const std::string path = Write(c.text);
    Result<EdgeList> list = ReadEdgeList(path);
    ASSERT_FALSE(list.ok()) << c.text;
    EXPECT_EQ(list.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(list.status().message().find(path), std::string::npos) << list.status().message();
    EXPECT_NE(list.status().message().find(c.expect), std::string::npos) << list.status().message();
  }
  Result<EdgeList> missing = ReadEdgeList("/nonexistent/graph.txt");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/nonexistent/graph.txt"), std::string::npos);
}

TEST_F(EdgeListTest, TaskRunsFromFileAndFinishesAfterIters) {
  const std::string path = Write("0 1\n0 2\n1 2\n2 0\n");
  Result<SideTaskSpec> spec = ParseSideTaskSpec("pagerank:graph=" + path + ",iters=5,slice=3");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  Result<std::unique_ptr<SideTask>> task = MakeBuiltinSideTask(*spec);
  ASSERT_TRUE(task.ok());
  ASSERT_TRUE((*task)->Setup().ok());
  double work = 0;
  int steps = 0;
  while (!(*task)->Done() && steps < 1000) {
    Result<double> w = (*task)->Step();
    ASSERT_TRUE(w.ok());
    work += *w;
    ++steps;
  }
  EXPECT_TRUE((*task)->Done());
  EXPECT_EQ(work, 5 * 4);  // every edge once per iteration
  EXPECT_EQ((*task)->unit(), "edges");

  // With the default slice (far more than the graph) a step ends at an
  // iteration's end, so the task still stops after exactly 5.
  Result<std::unique_ptr<SideTask>> whole = MakeBuiltinSideTask(*ParseSideTaskSpec("pagerank:graph=" + path + ",iters=5"));
  ASSERT_TRUE(whole.ok());
  ASSERT_TRUE((*whole)->Setup().ok());
  steps = 0;
  while (!(*whole)->Done() && steps < 100) {
    ASSERT_TRUE((*whole)->Step().ok());
    ++steps;
  }
  EXPECT_EQ(steps, 5);
  for (const auto& [k, v] : (*whole)->Metrics()) {
    if (k == "iterations") {
      EXPECT_EQ(v, 5);
    }
  }
}

TEST(PageRankTest, CsrRejectsOutOfRangeEdges) {
  Result<InCsr> csr = BuildInCsr(3, {{0, 1}, {1, 3}});
  ASSERT_FALSE(csr.ok());
  EXPECT_NE(csr.status().message().find("1 -> 3"), std::string::npos) << csr.status().message();
}

}  // namespace
}  // namespace pw

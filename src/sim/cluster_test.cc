// Uneven clusters: speeds per rank, sites joined by a slower link, and links
// that carry one message at a time; each checked against a timeline worked
// out by hand.
#include "sim/cluster.h"

#include <gtest/gtest.h>

#include "sim/cost_model.h"
#include "sim/cost_model_json.h"
#include "sim/simulator.h"

namespace pw {
namespace {

// Hand-written 1F1B for p = 2 (stage r on rank r) with m = 1 or 2.
Schedule TwoRanks(int m) {
  Schedule s = MakeEmptySchedule("1f1b", *Placement::Sequential(2), m);
  if (m == 1) {
    s.programs[0] = {Fwd(0, 0), Bwd(0, 0)};
    s.programs[1] = {Fwd(1, 0), Bwd(1, 0)};
  } else {
    s.programs[0] = {Fwd(0, 0), Fwd(0, 1), Bwd(0, 0), Bwd(0, 1)};
    s.programs[1] = {Fwd(1, 0), Bwd(1, 0), Fwd(1, 1), Bwd(1, 1)};
  }
  return s;
}

Result<SimResult> SimulateWithFB(const Schedule& s, CostModel costs) {
  PW_RETURN_IF_ERROR(costs.ParseUniformCosts("F=1,B=2"));
  PW_RETURN_IF_ERROR(costs.Resolve(s));
  return Simulate(s, costs);
}

TEST(ClusterTest, ASlowRankTakesLongerForEveryComputation) {
  CostModel costs;
  costs.cluster.rank_speed = {1, 0.5};
  Result<SimResult> r = SimulateWithFB(TwoRanks(1), costs);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // F0 [0,1], F1 [1,3] (1 / 0.5), B1 [3,7] (2 / 0.5), B0 [7,9].
  EXPECT_DOUBLE_EQ(r->makespan, 9.0);
  EXPECT_DOUBLE_EQ(r->ranks[1].busy, 6.0);
  EXPECT_DOUBLE_EQ(r->ranks[0].busy, 3.0);
}

TEST(ClusterTest, MessagesBetweenSitesUseTheCrossSiteLink) {
  CostModel costs;
  costs.comm_latency = 0.5;
  costs.cluster.site_of_rank = {0, 1};
  costs.cluster.cross_site_latency = 5;
  Result<SimResult> r = SimulateWithFB(TwoRanks(1), costs);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // F0 [0,1], +5 -> F1 [6,7], B1 [7,9], +5 -> B0 [14,16].
  EXPECT_DOUBLE_EQ(r->spans[1][0].start, 6.0);
  EXPECT_DOUBLE_EQ(r->makespan, 16.0);
  // One site: the within-site latency.
  costs.cluster.site_of_rank = {0, 0};
  r = SimulateWithFB(TwoRanks(1), costs);
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->makespan, 7.0);
}

TEST(ClusterTest, ALinkCarriesOneMessageAtATime) {
  CostModel costs;
  costs.comm_bandwidth = 2;
  costs.ParseUniformCosts("F=1,B=2");
  costs.stages[0].output_bytes = 10;  // 5 time units on the link
  Schedule s = TwoRanks(2);
  ASSERT_TRUE(costs.Resolve(s).ok());
  Result<SimResult> r = Simulate(s, costs);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // Rank 0's F0 [0,1] and F1 [1,2] send on one link: the first message
  // holds it [1,6], the second [6,11]. Rank 1: F0 [6,7] B0 [7,9] F1 [11,12]
  // B1 [12,14]; its gradients go back on the other link: [9,14], [14,19].
  // Rank 0: B0 [14,16], B1 [19,21]. Two links in parallel would end at 19.
  EXPECT_DOUBLE_EQ(r->spans[1][2].start, 11.0);
  EXPECT_DOUBLE_EQ(r->spans[0][3].start, 19.0);
  EXPECT_DOUBLE_EQ(r->makespan, 21.0);
}

TEST(ClusterTest, CommunicationIsNotScaledByTheRankSpeed) {
  CostModel costs;
  ASSERT_TRUE(costs.ParseUniformCosts("F=1,B=2,SEND_F=0.4,OPT=3").ok());
  costs.cluster.rank_speed = {0.5, 1};
  ASSERT_TRUE(costs.Resolve(TwoRanks(1)).ok());
  const KindRegistry kinds;
  EXPECT_DOUBLE_EQ(costs.Duration(0, Action{0, 0, ActionKind::kSendForward}, kinds), 0.4);
  EXPECT_DOUBLE_EQ(costs.Duration(0, Action{0, kNoMicrobatch, ActionKind::kOptimizer}, kinds), 6.0);
  EXPECT_DOUBLE_EQ(costs.Duration(1, Action{1, 0, ActionKind::kForward}, kinds), 1.0);
}

TEST(ClusterTest, ResolveRefusesAClusterOfAnotherSize) {
  CostModel costs;
  costs.cluster.rank_speed = {1, 1, 1};
  Status st = costs.Resolve(TwoRanks(1));
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("rank_speed has 3 entries but the schedule has 2 ranks"), std::string::npos)
      << st.message();
  costs.cluster.rank_speed = {1, 0};
  st = costs.Resolve(TwoRanks(1));
  EXPECT_NE(st.message().find("rank_speed of rank 1 is 0"), std::string::npos) << st.message();
  costs.cluster.rank_speed.clear();
  costs.cluster.site_of_rank = {0, 0, 1};
  st = costs.Resolve(TwoRanks(1));
  EXPECT_NE(st.message().find("the sites name 3 ranks but the schedule has 2"), std::string::npos) << st.message();
}

TEST(ClusterTest, SiteListsAndSpeeds) {
  Result<std::vector<int>> sites = ParseSiteList("0-3,4-7", 8);
  ASSERT_TRUE(sites.ok()) << sites.status().ToString();
  EXPECT_EQ(*sites, (std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1}));
  sites = ParseSiteList("0+2,1+3", 0);
  ASSERT_TRUE(sites.ok());
  EXPECT_EQ(*sites, (std::vector<int>{0, 1, 0, 1}));
  EXPECT_NE(ParseSiteList("0-3,3-7", 8).status().message().find("names rank 3 twice"), std::string::npos);
  EXPECT_NE(ParseSiteList("0-2,4-7", 8).status().message().find("leaves rank 3 out"), std::string::npos);
  EXPECT_NE(ParseSiteList("0-3,4-8", 8).status().message().find("names rank 8 but there are 8 ranks"),
            std::string::npos);
  EXPECT_NE(ParseSiteList("0-x", 8).status().message().find("'x' is not a rank"), std::string::npos);
  EXPECT_NE(ParseSiteList("3-1", 8).status().message().find("runs backwards"), std::string::npos);
  Result<std::vector<double>> speeds = ParseRankSpeeds("1, 1,0.5");
  ASSERT_TRUE(speeds.ok());
  EXPECT_EQ(*speeds, (std::vector<double>{1, 1, 0.5}));
  EXPECT_FALSE(ParseRankSpeeds("1,-1").ok());
  EXPECT_FALSE(ParseRankSpeeds("1,,1").ok());
}

TEST(ClusterTest, JsonRoundTripsAndNamesBadFields) {
  const std::string text = R"({"stages": [{"F": 1, "B": 2}],
    "cluster": {"rank_speed": [1, 0.5, 1, 1], "sites": [[0, 1], [2, 3]],
                "cross_site": {"latency": 20, "bandwidth": 125000}}})";
  Result<CostModel> costs = ParseCostModelJson(text, "c.json");
  ASSERT_TRUE(costs.ok()) << costs.status().ToString();
  EXPECT_EQ(costs->cluster.site_of_rank, (std::vector<int>{0, 0, 1, 1}));
  EXPECT_DOUBLE_EQ(costs->cluster.cross_site_bandwidth, 125000);
  EXPECT_EQ(costs->cluster.Describe(), "sites 0-1 | 2-3, cross-site 20 + bytes/1.25e+05; rank 1 at speed 0.5");
  Result<CostModel> again = ParseCostModelJson(FormatCostModelJson(*costs), "again.json");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->cluster.rank_speed, costs->cluster.rank_speed);
  EXPECT_EQ(again->cluster.site_of_rank, costs->cluster.site_of_rank);
  EXPECT_DOUBLE_EQ(again->cluster.cross_site_latency, 20);

  Result<Cluster> bad = ParseClusterJson(R"({"sites": [[0, 1], [1, 2]]})", "x.json");
  EXPECT_NE(bad.status().message().find("x.json.sites: site list"), std::string::npos) << bad.status().message();
  bad = ParseClusterJson(R"({"cross_site": {"latncy": 1}})", "x.json");
  EXPECT_NE(bad.status().message().find("latncy is not a link key"), std::string::npos) << bad.status().message();
  bad = ParseClusterJson(R"({"speed": [1]})", "x.json");
  EXPECT_NE(bad.status().message().find("is not a cluster key"), std::string::npos) << bad.status().message();
}

}  // namespace
}  // namespace pw

#include "comm/world_info.h"

#include <gtest/gtest.h>

#include "comm/grid.h"

namespace pw {
namespace {

Result<WorldInfo> Parse(std::map<std::string, std::string> vars) {
  return WorldFromEnvironment(MapEnvironment(std::move(vars)));
}

TEST(WorldFromEnvironment, Torchrun) {
  auto w = Parse({{"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "29500"}, {"RANK", "3"},
                  {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}});
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->rank, 3);
  EXPECT_EQ(w->world_size, 8);
  EXPECT_EQ(w->local_rank, 1);
  EXPECT_EQ(w->master_addr, "10.0.0.1");
  EXPECT_EQ(w->master_port, 29500);
  EXPECT_EQ(w->source, "torchrun");
  EXPECT_EQ(w->ToString(), "rank 3/8 (local 1) via torchrun, store 10.0.0.1:29500");
}

TEST(WorldFromEnvironment, LocalWorldSizeIsReadAndChecked) {
  auto w = Parse({{"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "1234"}, {"RANK", "3"},
                  {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "2"}});
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->local_world_size, 2);
  auto unknown = Parse({{"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "1234"}, {"RANK", "0"},
                        {"WORLD_SIZE", "2"}});
  ASSERT_TRUE(unknown.ok());
  EXPECT_EQ(unknown->local_world_size, 0);
  auto bad = Parse({{"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "1234"}, {"RANK", "3"},
                    {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "2"}, {"LOCAL_WORLD_SIZE", "2"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("LOCAL_WORLD_SIZE=2"), std::string::npos) << bad.status().ToString();
}

TEST(WorldFromEnvironment, TorchrunWithoutLocalRankUsesRank) {
  auto w = Parse({{"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "1234"}, {"RANK", "1"},
                  {"WORLD_SIZE", "2"}});
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->local_rank, 1);
}

TEST(WorldFromEnvironment, TorchrunAgentStore) {
  auto w = Parse({{"MASTER_ADDR", "n0"}, {"MASTER_PORT", "29500"}, {"RANK", "0"},
                  {"WORLD_SIZE", "8"}, {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                  {"TORCHELASTIC_RESTART_COUNT", "2"}});
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_TRUE(w->store_hosted_by_launcher);
  EXPECT_EQ(w->store_prefix, "/worker/attempt_2");
  auto own = Parse({{"MASTER_ADDR", "n0"}, {"MASTER_PORT", "29500"}, {"RANK", "0"},
                    {"WORLD_SIZE", "8"}, {"TORCHELASTIC_USE_AGENT_STORE", "False"}});
  ASSERT_TRUE(own.ok());
  EXPECT_FALSE(own->store_hosted_by_launcher);
  EXPECT_EQ(own->store_prefix, "");
}

TEST(WorldFromEnvironment, TorchrunWinsOverSlurmAndMpi) {
  auto w = Parse({{"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}, {"RANK", "5"},
                  {"WORLD_SIZE", "8"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"},
                  {"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"}});
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->rank, 5);
  EXPECT_EQ(w->source, "torchrun");
}

TEST(WorldFromEnvironment, PartialTorchrunNamesTheMissingVariable) {
  auto w = Parse({{"RANK", "0"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}});
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(w.status().message().find("RANK is set but WORLD_SIZE is not"), std::string::npos)
      << w.status().message();
  auto no_port = Parse({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}});
  ASSERT_FALSE(no_port.ok());
  EXPECT_NE(no_port.status().message().find("MASTER_PORT is not set"), std::string::npos);
  auto no_addr = Parse({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "1"}});
  ASSERT_FALSE(no_addr.ok());
  EXPECT_NE(no_addr.status().message().find("MASTER_ADDR is not set"), std::string::npos);
}

TEST(WorldFromEnvironment, InconsistentValues) {
  std::map<std::string, std::string> base = {{"MASTER_ADDR", "h"}, {"MASTER_PORT", "29500"}};
  auto with = [&](std::map<std::string, std::string> extra) {
    auto vars = base;
    vars.insert(extra.begin(), extra.end());
    return Parse(vars);
  };
  auto too_big = with({{"RANK", "4"}, {"WORLD_SIZE", "4"}});
  ASSERT_FALSE(too_big.ok());
  EXPECT_NE(too_big.status().message().find("RANK=4 is not below WORLD_SIZE=4"),
            std::string::npos) << too_big.status().message();
  EXPECT_FALSE(with({{"RANK", "x"}, {"WORLD_SIZE", "4"}}).ok());
  EXPECT_FALSE(with({{"RANK", "1"}, {"WORLD_SIZE", "0"}}).ok());
  EXPECT_FALSE(with({{"RANK", "-1"}, {"WORLD_SIZE", "4"}}).ok());
  EXPECT_FALSE(with({{"RANK", "1"}, {"WORLD_SIZE", "4 "}}).ok());
  EXPECT_FALSE(with({{"RANK", "1"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "2"}}).ok());
  auto bad_port = Parse({{"MASTER_ADDR", "h"}, {"MASTER_PORT", "70000"}, {"RANK", "0"},
                         {"WORLD_SIZE", "1"}});
  ASSERT_FALSE(bad_port.ok());
  EXPECT_NE(bad_port.status().message().find("MASTER_PORT"), std::string::npos);
}

TEST(WorldFromEnvironment, OpenMpi) {
  auto w = Parse({{"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "4"},
                  {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}, {"MASTER_ADDR", "n1"},
                  {"MASTER_PORT", "29400"}, {"GLOO_SOCKET_IFNAME", "eth0"}});
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->rank, 2);
  EXPECT_EQ(w->world_size, 4);
  EXPECT_EQ(w->local_rank, 0);
  EXPECT_EQ(w->source, "mpirun");
  EXPECT_EQ(w->gloo_interface, "eth0");
  auto no_master = Parse({{"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "4"}});
  ASSERT_FALSE(no_master.ok());
  EXPECT_NE(no_master.status().message().find("-x MASTER_ADDR"), std::string::npos)
      << no_master.status().message();
  auto partial = Parse({{"OMPI_COMM_WORLD_SIZE", "4"}});
  ASSERT_FALSE(partial.ok());
  EXPECT_NE(partial.status().message().find("OMPI_COMM_WORLD_RANK is not"), std::string::npos);
}

TEST(WorldFromEnvironment, Slurm) {
  auto w = Parse({{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "1"},
                  {"SLURM_JOB_NODELIST", "gpu[07-10,12],cpu3"}, {"SLURM_JOB_ID", "123456"}});
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->rank, 5);
  EXPECT_EQ(w->world_size, 8);
  EXPECT_EQ(w->local_rank, 1);
  EXPECT_EQ(w->master_addr, "gpu07");
  EXPECT_EQ(w->master_port, 20000 + 123456 % 20000);
  EXPECT_EQ(w->source, "slurm");
  // MASTER_ADDR / MASTER_PORT override the node list and job id.
  auto over = Parse({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"MASTER_ADDR", "m"},
                     {"MASTER_PORT", "4000"}, {"SLURM_JOB_NODELIST", "a[1-2]"}});
  ASSERT_TRUE(over.ok()) << over.status().ToString();
  EXPECT_EQ(over->master_addr, "m");
  EXPECT_EQ(over->master_port, 4000);
  // sbatch without srun: SLURM_NTASKS alone is not a rank.
  auto sbatch_only = Parse({{"SLURM_NTASKS", "2"}, {"SLURM_JOB_ID", "1"}});
  EXPECT_EQ(sbatch_only.status().code(), StatusCode::kNotFound);
  auto no_host = Parse({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_ID", "9"}});
  ASSERT_FALSE(no_host.ok());
  EXPECT_NE(no_host.status().message().find("MASTER_ADDR"), std::string::npos);
  auto no_port = Parse({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"},
                        {"SLURM_JOB_NODELIST", "n1"}});
  ASSERT_FALSE(no_port.ok());
  EXPECT_NE(no_port.status().message().find("MASTER_PORT"), std::string::npos);
  auto partial = Parse({{"SLURM_PROCID", "0"}, {"SLURM_JOB_NODELIST", "n1"}});
  ASSERT_FALSE(partial.ok());
  EXPECT_NE(partial.status().message().find("SLURM_NTASKS is not"), std::string::npos);
}

TEST(WorldFromEnvironment, NothingSetIsNotFound) {
  auto w = Parse({{"HOME", "/root"}});
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), StatusCode::kNotFound);
}

TEST(FirstSlurmHost, SimpleForms) {
  EXPECT_EQ(*FirstSlurmHost("node1"), "node1");
  EXPECT_EQ(*FirstSlurmHost("node1,node2"), "node1");
  EXPECT_EQ(*FirstSlurmHost("node[01-04]"), "node01");
  EXPECT_EQ(*FirstSlurmHost("node[3,5-7]"), "node3");
  EXPECT_EQ(*FirstSlurmHost("rack[1-2]-n[4-5],other"), "rack1-n4");
  EXPECT_EQ(*FirstSlurmHost("gpu-[10-11].cluster"), "gpu-10.cluster");
  EXPECT_FALSE(FirstSlurmHost("").ok());
  EXPECT_FALSE(FirstSlurmHost("node[1-2").ok());
  EXPECT_FALSE(FirstSlurmHost("node[]").ok());
}

TEST(IsLoopbackAddress, Forms) {
  EXPECT_TRUE(IsLoopbackAddress("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackAddress("127.1.2.3"));
  EXPECT_TRUE(IsLoopbackAddress("localhost"));
  EXPECT_TRUE(IsLoopbackAddress("::1"));
  EXPECT_FALSE(IsLoopbackAddress("10.0.0.1"));
  EXPECT_FALSE(IsLoopbackAddress("node1"));
}

TEST(GridLayout, PipelineMajor) {
  auto grid = GridLayout::Create(4, 2, 8);
  ASSERT_TRUE(grid.ok());
  EXPECT_EQ(grid->WorldRank(1, 1), 5);
  EXPECT_EQ(grid->PipelineRank(6), 2);
  EXPECT_EQ(grid->DataRank(6), 1);
  EXPECT_EQ(grid->PipelineMembers(1), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(grid->DataParallelMembers(1), (std::vector<int>{1, 5}));
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ(grid->WorldRank(grid->PipelineRank(r), grid->DataRank(r)), r);
  }
  EXPECT_EQ(grid->ToString(), "pp=4 x dp=2 (world rank = dp_rank * 4 + pp_rank)");
  auto bad = GridLayout::Create(3, 2, 8);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("needs 6 ranks but the world has 8"),
            std::string::npos);
  EXPECT_FALSE(GridLayout::Create(0, 8, 0).ok());
}

}  // namespace
}  // namespace pw

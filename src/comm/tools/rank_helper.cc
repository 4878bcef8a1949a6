// Rank bodies for src/comm's multi-process tests. Run under
// LaunchLocalRanks (or torchrun): `pw_comm_rank_helper SCENARIO [key=value...]`.
// Each scenario prints what the test checks and exits 0 on success.
//
//   ring             world p2p around the ring, FIFO per tag, pipeline chain
//   grid pp=2        pipeline p2p and data-parallel all-reduce (sum, avg,
//                    several buckets), barrier; serving=1 adds the serving
//                    group driven from a second thread
//   peer-exit        rank 0 exits right after the rendezvous; rank 1's recv
//                    (op=allreduce: all-reduce) must fail within timeout_ms
//   peer-silent      rank 0 stays alive but never sends; rank 1's recv must
//                    time out after about timeout_ms
//   idle-wait        rank 1 waits 2 s for a message; prints its CPU time
//   fail bad=R mode=exit3|abort|hang|hang-ignore-term
//                    rank R fails that way; the other ranks wait for it
//                    (exit3/abort) or finish at once (hang*)
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>

#include "comm/process_groups.h"

namespace {

using pw::PendingOp;
using pw::ProcessGroups;
using pw::ReduceKind;
using pw::Status;

std::map<std::string, std::string> args;

int IntArg(const std::string& key, int fallback) {
  auto it = args.find(key);
  return it == args.end() ? fallback : std::atoi(it->second.c_str());
}

double CpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

#define EXPECT_OK(expr)                                                            \
  do {                                                                             \
    Status st_ = (expr);                                                           \
    if (!st_.ok()) {                                                               \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, st_.ToString().c_str()); \
      return 1;                                                                    \
    }                                                                              \
  } while (0)

#define EXPECT_TRUE(cond)                                                          \
  do {                                                                             \
    if (!(cond)) {                                                                 \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      return 1;                                                                    \
    }                                                                              \
  } while (0)

int Ring(ProcessGroups& g) {
  auto& world = g.world();
  const int n = world.size(), r = world.rank();
  const int next = (r + 1) % n, prev = (r + n - 1) % n;
  // Two messages with the same tag arrive in order; a third with another tag.
  at::Tensor a = at::empty({3, 5}), b = at::empty({1000}), c = at::empty({2, 2});
  PendingOp ra = world.PostRecv(a, prev, 7);
  PendingOp rb = world.PostRecv(b, prev, 7);
  PendingOp rc = world.PostRecv(c, prev, 9);
  PendingOp s3 = world.Send(at::full({2, 2}, 100.0f + r), next, 9);
  PendingOp s1 = world.Send(at::full({3, 5}, 1.0f * r), next, 7);
  PendingOp s2 = world.Send(at::arange(1000, at::kFloat) + r, next, 7);
  for (PendingOp* op : {&s1, &s2, &s3, &ra, &rb, &rc}) EXPECT_OK(op->Wait());
  EXPECT_TRUE(a.eq(1.0f * prev).all().item<bool>());
  EXPECT_TRUE(b.equal(at::arange(1000, at::kFloat) + prev));
  EXPECT_TRUE(c.eq(100.0f + prev).all().item<bool>());
  // A non-contiguous receive buffer and a non-contiguous send.
  at::Tensor t = at::empty({6, 4}).t();  // [4, 6], non-contiguous
  PendingOp rt = world.PostRecv(t, prev, 11);
  PendingOp st = world.Send((at::arange(24, at::kFloat).view({6, 4}) * (r + 1)).t().t().t(),
                            next, 11);
  EXPECT_OK(st.Wait());
  EXPECT_OK(rt.Wait());
  EXPECT_TRUE(t.equal((at::arange(24, at::kFloat).view({6, 4}) * (prev + 1)).t()));

  // A pipeline chain: forward adds 1 at each stage, backward multiplies by 2.
  auto& pipe = g.pipeline();
  const int s = pipe.rank(), p = pipe.size();
  at::Tensor x = at::zeros({64});
  if (s > 0) EXPECT_OK(pipe.PostRecv(x, s - 1, 0).Wait());
  x += 1;
  if (s + 1 < p) EXPECT_OK(pipe.Send(x, s + 1, 0).Wait());
  at::Tensor grad = at::ones({64});
  if (s + 1 < p) EXPECT_OK(pipe.PostRecv(grad, s + 1, 1).Wait());
  grad *= 2;
  if (s > 0) EXPECT_OK(pipe.Send(grad, s - 1, 1).Wait());
  EXPECT_TRUE(x.eq(s + 1.0f).all().item<bool>());
  EXPECT_TRUE(grad.eq(static_cast<float>(1 << (p - s))).all().item<bool>());

  // Errors that user code can cause come back as Status, not crashes.
  Status bad = world.Send(at::ones({1}), n + 3, 0).Wait();
  EXPECT_TRUE(!bad.ok() && bad.code() == pw::StatusCode::kInvalidArgument);
  EXPECT_OK(world.Barrier());
  std::printf("ring ok rank=%d size=%d\n", r, n);
  return 0;
}

int AllReduceChecks(pw::CommGroup& dp, int tag_base) {
  const int n = dp.size();
  // Each member contributes world-rank-dependent values; sum over members.
  auto member_value = [&](int group_rank) { return 1.0f + dp.WorldRankOf(group_rank); };
  float sum = 0;
  for (int i = 0; i < n; ++i) sum += member_value(i);
  const float mine = member_value(dp.rank());
  for (size_t bucket_bytes : {pw::kDefaultBucketBytes, size_t{64}}) {
    std::vector<at::Tensor> grads = {at::full({2, 3}, mine), at::full({7}, 2 * mine),
                                     at::full({4, 3}, 3 * mine).t(), at::full({1}, mine)};
    EXPECT_OK(dp.AllReduce(grads, ReduceKind::kSum, bucket_bytes).Wait());
    EXPECT_TRUE(grads[0].eq(sum).all().item<bool>());
    EXPECT_TRUE(grads[1].eq(2 * sum).all().item<bool>());
    EXPECT_TRUE(grads[2].eq(3 * sum).all().item<bool>());
    EXPECT_TRUE(grads[2].sizes() == at::IntArrayRef({3, 4}));
    EXPECT_TRUE(grads[3].eq(sum).all().item<bool>());
    std::vector<at::Tensor> avg = {at::full({5}, mine), at::full({3, 3}, mine)};
    EXPECT_OK(dp.AllReduce(avg, ReduceKind::kAvg, bucket_bytes).Wait());
    EXPECT_TRUE(avg[0].allclose(at::full({5}, sum / n)));
    EXPECT_TRUE(avg[1].allclose(at::full({3, 3}, sum / n)));
  }
  // One big contiguous tensor is reduced in place.
  at::Tensor big = at::full({1 << 16}, mine);
  EXPECT_OK(dp.AllReduce({big}, ReduceKind::kAvg).Wait());
  EXPECT_TRUE(big.allclose(at::full({1 << 16}, sum / n)));
  return 0;
}

int Grid(ProcessGroups& g) {
  // Pipeline: stage 0 sends to stage 1 of the same replica.
  auto& pipe = g.pipeline();
  EXPECT_TRUE(pipe.size() == g.grid().pp() && pipe.rank() == g.pp_rank());
  EXPECT_TRUE(g.data_parallel().size() == g.grid().dp());
  EXPECT_TRUE(g.data_parallel().rank() == g.dp_rank());
  EXPECT_TRUE(g.rank() == g.dp_rank() * g.grid().pp() + g.pp_rank());
  at::Tensor act = at::empty({8, 4});
  if (g.pp_rank() == 0) {
    EXPECT_OK(pipe.Send(at::full({8, 4}, 10.0f * g.dp_rank() + 1), 1, 0).Wait());
  } else if (g.pp_rank() == 1) {
    EXPECT_OK(pipe.PostRecv(act, 0, 0).Wait());
    EXPECT_TRUE(act.eq(10.0f * g.dp_rank() + 1).all().item<bool>());
  }
  // Serving group, driven from a second thread while this one reduces.
  int serving_result = 0;
  std::thread serving_thread;
  if (pw::CommGroup* serving = g.serving()) {
    serving_thread = std::thread([serving, &serving_result] {
      at::Tensor t = at::ones({16});
      Status st = serving->AllReduce({t}, ReduceKind::kSum).Wait();
      serving_result = st.ok() && t.eq(static_cast<float>(serving->size())).all().item<bool>()
                           ? 1 : -1;
    });
  }
  if (int rc = AllReduceChecks(g.data_parallel(), 0); rc != 0) return rc;
  if (serving_thread.joinable()) {
    serving_thread.join();
    EXPECT_TRUE(serving_result == 1);
  }
  EXPECT_OK(g.world().Barrier());
  std::printf("grid ok rank=%d pp_rank=%d dp_rank=%d serving=%d\n", g.rank(), g.pp_rank(),
              g.dp_rank(), serving_result);
  return 0;
}

int PeerExit(ProcessGroups& g, const std::string& op, double timeout_s) {
  if (g.rank() == 0) {
    std::fflush(stdout);
    _exit(0);  // like a crash: no goodbye, the kernel closes the sockets
  }
  double start = Now();
  Status st;
  if (op == "allreduce") {
    st = g.world().AllReduce({at::ones({1024})}, ReduceKind::kSum).Wait();
  } else {
    at::Tensor x = at::empty({1024});
    st = g.world().PostRecv(x, 0, 0).Wait();
  }
  double waited = Now() - start;
  std::printf("peer-exit %s: error=%d after %.2f s: %s\n", op.c_str(), !st.ok(), waited,
              st.ToString().c_str());
  return !st.ok() && waited < timeout_s + 1.0 ? 0 : 1;
}

// exit_after_failure: rank 0 dies; rank 1's receive fails, then rank 1
// hangs as a teardown stuck on a dead peer would. The deadline must end it.
int StuckAfterFailure(ProcessGroups& g) {
  if (g.rank() == 0) {
    std::fflush(stdout);
    _exit(0);
  }
  at::Tensor x = at::empty({16});
  Status st = g.world().PostRecv(x, 0, 0).Wait();
  std::printf("stuck-after-failure: error=%d; now hanging\n", !st.ok());
  std::fflush(stdout);
  std::this_thread::sleep_for(std::chrono::seconds(60));
  return 0;  // not reached when the deadline works
}

int PeerSilent(ProcessGroups& g, double timeout_s) {
  if (g.rank() == 0) {
    std::this_thread::sleep_for(std::chrono::duration<double>(timeout_s + 1.5));
    return 0;
  }
  double start = Now();
  at::Tensor x = at::empty({16});
  Status st = g.world().PostRecv(x, 0, 0).Wait();
  double waited = Now() - start;
  std::printf("peer-silent: error=%d after %.2f s: %s\n", !st.ok(), waited,
              st.ToString().c_str());
  return !st.ok() && waited > timeout_s * 0.8 && waited < timeout_s + 1.0 ? 0 : 1;
}

int IdleWait(ProcessGroups& g) {
  if (g.rank() == 0) {
    std::this_thread::sleep_for(std::chrono::seconds(2));
    EXPECT_OK(g.world().Send(at::ones({256}), 1, 0).Wait());
    return 0;
  }
  at::Tensor x = at::empty({256});
  PendingOp recv = g.world().PostRecv(x, 0, 0);
  double wall = Now(), cpu = CpuSeconds();
  EXPECT_OK(recv.Wait());
  wall = Now() - wall;
  cpu = CpuSeconds() - cpu;
  std::printf("idle-wait wall=%.3f s cpu=%.1f ms\n", wall, cpu * 1e3);
  return 0;
}

int Fail(ProcessGroups& g, int bad, const std::string& mode) {
  if (g.rank() == bad) {
    if (mode == "hang-ignore-term") signal(SIGTERM, SIG_IGN);  // before saying so
    std::fprintf(stderr, "rank %d about to fail: %s\n", bad, mode.c_str());
    std::fflush(stderr);
    if (mode == "exit3") {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      std::exit(3);
    }
    if (mode == "abort") {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      std::abort();
    }
    while (true) pause();  // hang, hang-ignore-term
  }
  if (mode == "hang" || mode == "hang-ignore-term") return 0;
  // Blocked waiting on the failing rank, with a long timeout: only the
  // launcher can end this quickly.
  at::Tensor x = at::empty({16});
  Status st = g.world().PostRecv(x, bad, 0).Wait();
  std::printf("rank %d: recv from the failed rank returned %s\n", g.rank(),
              st.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s SCENARIO [key=value...]\n", argv[0]);
    return 2;
  }
  std::string scenario = argv[1];
  for (int i = 2; i < argc; ++i) {
    std::string kv = argv[i];
    size_t eq = kv.find('=');
    if (eq != std::string::npos) args[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  at::set_num_threads(1);
  auto world = pw::WorldFromEnvironment(pw::ProcessEnvironment());
  if (!world.ok()) {
    std::fprintf(stderr, "%s\n", world.status().ToString().c_str());
    return 2;
  }
  pw::ProcessGroupsOptions options;
  options.pp = IntArg("pp", 1);
  options.timeout = std::chrono::milliseconds(IntArg("timeout_ms", 20000));
  options.rendezvous_timeout = std::chrono::milliseconds(IntArg("rendezvous_ms", 20000));
  options.serving_group = IntArg("serving", 0) != 0;
  options.exit_after_failure = IntArg("exit_after_failure", 0) != 0;
  auto groups = ProcessGroups::Create(*world, options);
  if (!groups.ok()) {
    std::fprintf(stderr, "%s\n", groups.status().ToString().c_str());
    return 2;
  }
  ProcessGroups& g = *groups;
  double timeout_s = options.timeout.count() / 1000.0;
  if (scenario == "ring") return Ring(g);
  if (scenario == "grid") return Grid(g);
  if (scenario == "peer-exit") return PeerExit(g, args["op"], timeout_s);
  if (scenario == "peer-silent") return PeerSilent(g, timeout_s);
  if (scenario == "idle-wait") return IdleWait(g);
  if (scenario == "stuck-after-failure") return StuckAfterFailure(g);
  if (scenario == "fail") return Fail(g, IntArg("bad", 1), args["mode"]);
  std::fprintf(stderr, "unknown scenario '%s'\n", scenario.c_str());
  return 2;
}

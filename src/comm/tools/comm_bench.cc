// Loopback send/recv bandwidth and latency between two local ranks over the
// Gloo groups of comm/. Run without arguments: it launches itself as 2 ranks
// (LaunchLocalRanks), one thread each, and rank 0 prints a table:
//
//   build-comm/src/comm/pw_comm_bench [--iters-scale X]
//
// ping-pong: rank 0 sends, rank 1 sends the same size back; one-way time =
//            median round trip / 2, bandwidth = bytes / one-way time.
// stream:    rank 0 sends k messages back to back to receives rank 1 posted
//            in advance; bandwidth = k * bytes / time until the last arrives.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "comm/launcher.h"
#include "comm/process_groups.h"
#include "os/environment.h"

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a) {
  return std::chrono::duration<double>(Clock::now() - a).count();
}

bool Check(const pw::Status& st) {
  if (!st.ok()) std::fprintf(stderr, "%s\n", st.ToString().c_str());
  return st.ok();
}

int RankBody(double scale) {
  at::set_num_threads(1);
  auto world = pw::WorldFromEnvironment(pw::ProcessEnvironment());
  if (!Check(world.status())) return 1;
  auto groups = pw::ProcessGroups::Create(*world, {});
  if (!Check(groups.status())) return 1;
  pw::CommGroup& g = groups->world();
  const int me = g.rank(), peer = 1 - me;
  struct Size { const char* name; int64_t bytes; int iters; };
  const std::vector<Size> sizes = {{"4 B", 4, 2000},      {"4 KiB", 4 << 10, 1000},
                                   {"1 MiB", 1 << 20, 200}, {"64 MiB", 64 << 20, 10}};
  if (me == 0) {
    std::printf("%-8s %14s %14s %16s\n", "size", "one-way us", "ping-pong GB/s",
                "stream GB/s");
  }
  for (const Size& size : sizes) {
    const int iters = std::max(2, static_cast<int>(size.iters * scale));
    at::Tensor out = at::ones({size.bytes / 4});
    at::Tensor in = at::empty({size.bytes / 4});
    // Ping-pong (2 warm-up rounds); the median round trip resists the noise
    // of other processes on the machine.
    std::vector<double> round_trips;
    Clock::time_point start;
    for (int i = -2; i < iters; ++i) {
      Clock::time_point round = Clock::now();
      if (me == 0) {
        pw::PendingOp recv = g.PostRecv(in, peer, 1);
        if (!Check(g.Send(out, peer, 0).Wait()) || !Check(recv.Wait())) return 1;
      } else {
        if (!Check(g.PostRecv(in, peer, 0).Wait()) || !Check(g.Send(out, peer, 1).Wait())) {
          return 1;
        }
      }
      if (i >= 0) round_trips.push_back(Seconds(round));
    }
    std::sort(round_trips.begin(), round_trips.end());
    double one_way = round_trips[round_trips.size() / 2] / 2;
    // Stream: the receiver posts a window of receives, the sender sends them all.
    const int window = std::min(iters, 16);
    std::vector<at::Tensor> buffers;
    // Touched beforehand (zeros), so page faults are not charged to the network.
    for (int i = 0; i < window; ++i) buffers.push_back(at::zeros({size.bytes / 4}));
    if (!Check(g.Barrier())) return 1;
    start = Clock::now();
    int done = 0;
    while (done < iters) {
      int batch = std::min(window, iters - done);
      std::vector<pw::PendingOp> ops;
      for (int i = 0; i < batch; ++i) {
        ops.push_back(me == 0 ? g.Send(out, peer, 2) : g.PostRecv(buffers[i], peer, 2));
      }
      for (auto& op : ops) {
        if (!Check(op.Wait())) return 1;
      }
      done += batch;
    }
    at::Tensor ack = at::zeros({1});
    if (me == 1 && !Check(g.Send(ack, 0, 3).Wait())) return 1;
    if (me == 0 && !Check(g.PostRecv(ack, 1, 3).Wait())) return 1;
    double stream = Seconds(start);
    if (me == 0) {
      std::printf("%-8s %14.1f %14.3f %16.3f\n", size.name, one_way * 1e6,
                  size.bytes / one_way / 1e9, size.bytes * static_cast<double>(iters) /
                                                  stream / 1e9);
      std::fflush(stdout);
    }
  }
  return Check(g.Barrier()) ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  double scale = 1.0;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--iters-scale") scale = std::atof(argv[i + 1]);
  }
  if (pw::EnvironmentVariable("RANK")) return RankBody(scale);
  std::vector<std::string> self = {"/proc/self/exe"};
  self.assign(argv, argv + argc);
  self[0] = "/proc/self/exe";
  pw::LaunchOptions options;
  options.timeout = std::chrono::minutes(5);
  pw::Status st = pw::LaunchLocalRanks(self, 2, options);
  if (!st.ok()) {
    std::fprintf(stderr, "pw_comm_bench: %s\n", st.ToString().c_str());
    return 1;
  }
  return 0;
}

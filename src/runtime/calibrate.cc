#include "runtime/calibrate.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "model/partitioner.h"
#include "model/stage_module.h"
#include "os/memory.h"
#include "os/shared_library.h"
#include "os/socket.h"
#include "os/unique_fd.h"

namespace pw {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kMinRepeats = 3;
constexpr int kMaxRepeats = 9;
constexpr double kUnitBudgetS = 0.6;

double MsSince(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// OpenBLAS keeps its own thread count, which at::set_num_threads does not
// reach when LibTorch's BLAS is OpenBLAS built with pthreads; the symbols
// are looked up at run time because another BLAS lacks them.
class OneBlasThread {
 public:
  OneBlasThread() {
    get_ = reinterpret_cast<int (*)()>(FindLoadedSymbol("openblas_get_num_threads"));
    set_ = reinterpret_cast<void (*)(int)>(FindLoadedSymbol("openblas_set_num_threads"));
    if (get_ != nullptr && set_ != nullptr) {
      saved_ = get_();
      set_(1);
    }
  }
  ~OneBlasThread() {
    if (saved_ > 0) set_(saved_);
  }
  OneBlasThread(const OneBlasThread&) = delete;
  OneBlasThread& operator=(const OneBlasThread&) = delete;

 private:
  int (*get_)() = nullptr;
  void (*set_)(int) = nullptr;
  int saved_ = 0;
};

struct Samples {
  std::vector<double> f, b, i, w;
};

// One repeat on `stage`: F, I, W on microbatch 0, then F, B on microbatch 1.
Status RunOnce(StageModule& stage, const at::Tensor& input, const at::Tensor& targets, const at::Tensor& grad,
               Samples* out) {
  auto t = Clock::now();
  PW_RETURN_IF_ERROR(stage.Forward(0, input, targets).status());
  const double f1 = MsSince(t);
  t = Clock::now();
  PW_RETURN_IF_ERROR(stage.BackwardInput(0, grad).status());
  const double i = MsSince(t);
  t = Clock::now();
  PW_RETURN_IF_ERROR(stage.BackwardWeight(0));
  const double w = MsSince(t);
  t = Clock::now();
  PW_RETURN_IF_ERROR(stage.Forward(1, input, targets).status());
  const double f2 = MsSince(t);
  t = Clock::now();
  PW_RETURN_IF_ERROR(stage.BackwardFull(1, grad).status());
  const double b = MsSince(t);
  if (out != nullptr) {
    out->f.insert(out->f.end(), {f1, f2});
    out->i.push_back(i);
    out->w.push_back(w);
    out->b.push_back(b);
  }
  return Status::Ok();
}

Result<StageCost> TimeUnit(StageModule& stage, const at::Tensor& input, const at::Tensor& targets,
                           const at::Tensor& grad) {
  PW_RETURN_IF_ERROR(RunOnce(stage, input, targets, grad, nullptr));  // warm-up
  Samples s;
  const auto start = Clock::now();
  for (int r = 0; r < kMaxRepeats; ++r) {
    if (r >= kMinRepeats && MsSince(start) > 1000 * kUnitBudgetS) break;
    PW_RETURN_IF_ERROR(RunOnce(stage, input, targets, grad, &s));
  }
  StageCost c;
  c.forward = Median(s.f);
  c.backward = Median(s.b);
  c.backward_input = Median(s.i);
  c.backward_weight = Median(s.w);
  return c;
}

}  // namespace

Result<search::UnitTimings> CalibrateUnitTimings(const ModelConfig& model, int microbatch_size, uint64_t seed) {
  if (microbatch_size < 1) {
    return Status::InvalidArgument("calibration needs a microbatch size >= 1, got " + std::to_string(microbatch_size));
  }
  ModelConfig one_block = model;
  one_block.n_layers = 1;
  PW_ASSIGN_OR_RETURN(ModelPartition units, PartitionModel(one_block, 3, "0,1,0"));

  PW_RETURN_IF_ERROR(KeepFreedMemoryForReuse());  // as every rank runs (train_worker.cc)
  const int saved_threads = at::get_num_threads();
  at::set_num_threads(1);
  OneBlasThread one_blas_thread;
  struct RestoreThreads {
    int n;
    ~RestoreThreads() { at::set_num_threads(n); }
  } restore{saved_threads};

  at::Generator gen = at::detail::createCPUGenerator(seed);
  const int64_t b = microbatch_size, t = model.seq_len, d = model.d_model;
  const at::Tensor tokens = at::randint(model.vocab_size, {b, t}, gen, at::kLong);
  const at::Tensor targets = at::randint(model.vocab_size, {b, t}, gen, at::kLong);
  const at::Tensor hidden = at::randn({b, t, d}, gen, at::kFloat);
  // Small output gradients, as a loss scaled by 1/m gives.
  const at::Tensor grad_hidden = at::randn({b, t, d}, gen, at::kFloat).mul_(1e-3);
  const at::Tensor grad_loss = at::ones({1}, at::kFloat);

  search::UnitTimings out;
  {
    StageModule embedding(one_block, units.stages[0], seed);
    PW_ASSIGN_OR_RETURN(out.embedding, TimeUnit(embedding, tokens, {}, grad_hidden));
  }
  {
    StageModule block(one_block, units.stages[1], seed);
    PW_ASSIGN_OR_RETURN(out.block, TimeUnit(block, hidden, {}, grad_hidden));
  }
  {
    StageModule head(one_block, units.stages[2], seed);
    PW_ASSIGN_OR_RETURN(out.head, TimeUnit(head, hidden, targets, grad_loss));
  }
  return out;
}

}  // namespace pw

namespace pw {
namespace {

// The link's errors, named as such.
Status InLink(const Status& error) {
  return error.ok() ? error : Status::IoError("loopback link: " + error.message());
}
Status LinkSend(int fd, const char* data, size_t n) { return InLink(SendAll(fd, data, n)); }
Status LinkReceive(int fd, char* data, size_t n) { return InLink(ReceiveAll(fd, data, n)); }
Status Configure(int fd) { return InLink(SetNoDelayAndReceiveTimeout(fd, 5)); }

constexpr int kConnectTimeoutMs = 5000;  // as long as a reply may take (Configure)
constexpr int kPingRounds = 15;
constexpr int kBulkRounds = 6;  // the first is a warm-up

}  // namespace

Result<LinkTimings> CalibrateLoopbackLink(double message_bytes) {
  const size_t bytes = static_cast<size_t>(std::max(1.0, message_bytes));
  Result<TcpListener> listener = ListenOnLoopback();
  if (!listener.ok()) return InLink(listener.status());
  // The listener's backlog completes the connect at once, before Accept.
  const sockaddr_in addr = LoopbackAddress(listener->port);
  Result<UniqueFd> connected =
      ConnectWithTimeout(AF_INET, 0, reinterpret_cast<const sockaddr*>(&addr), sizeof addr, kConnectTimeoutMs);
  if (!connected.ok()) return InLink(connected.status());
  Result<UniqueFd> accepted = Accept(listener->fd.get());
  if (!accepted.ok()) return InLink(accepted.status());
  UniqueFd client = std::move(*connected);
  UniqueFd server = std::move(*accepted);
  PW_RETURN_IF_ERROR(Configure(client.get()));
  PW_RETURN_IF_ERROR(Configure(server.get()));

  // The peer: echoes each ping, acknowledges each bulk message with a byte.
  Status peer_status;
  std::thread peer([&] {
    std::vector<char> buf(bytes);
    for (int i = 0; i < kPingRounds && peer_status.ok(); ++i) {
      peer_status = LinkReceive(server.get(), buf.data(), 1);
      if (peer_status.ok()) peer_status = LinkSend(server.get(), buf.data(), 1);
    }
    for (int i = 0; i < kBulkRounds && peer_status.ok(); ++i) {
      peer_status = LinkReceive(server.get(), buf.data(), bytes);
      if (peer_status.ok()) peer_status = LinkSend(server.get(), buf.data(), 1);
    }
  });
  std::vector<char> message(bytes, 1);
  std::vector<double> pings, bulks;
  Status status;
  for (int i = 0; i < kPingRounds && status.ok(); ++i) {
    const auto t = Clock::now();
    status = LinkSend(client.get(), message.data(), 1);
    if (status.ok()) status = LinkReceive(client.get(), message.data(), 1);
    pings.push_back(MsSince(t));
  }
  for (int i = 0; i < kBulkRounds && status.ok(); ++i) {
    const auto t = Clock::now();
    status = LinkSend(client.get(), message.data(), bytes);
    if (status.ok()) status = LinkReceive(client.get(), message.data(), 1);
    if (i > 0) bulks.push_back(MsSince(t));
  }
  if (!status.ok()) ShutdownSocket(client.get());  // unblocks the peer
  peer.join();
  PW_RETURN_IF_ERROR(status);
  PW_RETURN_IF_ERROR(peer_status);
  LinkTimings out;
  out.latency_ms = Median(pings) / 2;
  // The bulk round is one latency plus the transfer plus the ack's latency.
  const double transfer_ms = std::max(Median(bulks) - 2 * out.latency_ms, 1e-6);
  out.bytes_per_ms = static_cast<double>(bytes) / transfer_ms;
  return out;
}

}  // namespace pw

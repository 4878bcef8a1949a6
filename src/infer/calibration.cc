#include "infer/calibration.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "comm/process_groups.h"
#include "infer/layer_math.h"
#include "infer/prepacked_linear.h"
#include "model/panel_linear.h"

namespace pw {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kPingTag = 100, kBulkTag = 102, kAckTag = 103;

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double MeasureGemmFlops(const ModelConfig& config, LinearLayout layout, WeightFormat format) {
  const int64_t rows = 256, d = config.d_model, h = int64_t{config.ffn_width()};
  at::Tensor x = at::randn({rows, d});
  at::Tensor w = at::randn({h, d});
  at::Tensor packed, scale;
  if (layout == LinearLayout::kOneDnn && PrepackableLinear(h, d)) {
    packed = at::empty({h * d});
    PrepackLinearWeight(w, packed);
  } else if (layout == LinearLayout::kPanels) {
    packed = PackInPanels(w, format, &scale);
  }
  auto multiply = [&] {
    if (!packed.defined()) return at::matmul(x, w.t());
    return layout == LinearLayout::kPanels ? PanelLinearOf(x, packed, h, at::Tensor(), at::Tensor(), scale)
                                           : PrepackedLinear(x, packed, h, at::Tensor(), LinearEpilogue::kNone);
  };
  at::Tensor out = multiply();  // warm-up (allocations, BLAS init, kernel generation)
  int reps = 0;
  Clock::time_point start = Clock::now();
  double elapsed = 0;
  while (reps < 3 || elapsed < 0.05) {
    out = multiply();
    ++reps;
    elapsed = Seconds(start);
  }
  return 2.0 * rows * d * h * reps / std::max(elapsed, 1e-9);
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

Status Step(Status status, const char* step) {
  if (status.ok()) return status;
  return Status::IoError(std::string("weight pool calibration (") + step + "): " + status.message());
}

}  // namespace

Result<PoolCalibration> Calibrate(const ModelConfig& config, ProcessGroups* groups, LinearLayout layout,
                                  WeightFormat format) {
  c10::InferenceMode inference_mode;
  CommGroup& group = *groups->serving();
  const int rank = group.rank();
  PoolCalibration calibration;
  double gemm = MeasureGemmFlops(config, layout, format);
  double latency = 0, bandwidth = 0;
  if (group.size() >= 2 && rank <= 1) {
    const int peer = 1 - rank;
    at::Tensor ping = at::zeros({1});
    // One exchange: rank 0 sends `out` and waits for a 4-byte answer.
    auto exchange = [&](const at::Tensor& out, int tag) -> Status {
      if (rank == 0) {
        PW_RETURN_IF_ERROR(group.Send(out, peer, tag).Wait());
        return group.PostRecv(ping, peer, kAckTag).Wait();
      }
      PW_RETURN_IF_ERROR(group.PostRecv(out, peer, tag).Wait());
      return group.Send(ping, peer, kAckTag).Wait();
    };
    PW_RETURN_IF_ERROR(Step(group.Barrier(), "barrier"));  // both ranks ready
    // Medians, not means: on a shared machine a descheduled rank adds
    // milliseconds to a few exchanges, which says nothing about the link.
    std::vector<double> round_trips;
    for (int i = 0; i < 31; ++i) {
      Clock::time_point start = Clock::now();
      PW_RETURN_IF_ERROR(Step(exchange(ping, kPingTag), "ping-pong"));
      round_trips.push_back(Seconds(start));
    }
    const double round_trip = Median(round_trips);
    latency = round_trip / 2;
    int64_t floats = std::clamp<int64_t>(BlockParamCount(config), int64_t{4} << 20,
                                         int64_t{16} << 20);
    // Subtract the fastest round trip (the acknowledgement's own cost), not
    // the median: the median may hold scheduling delays larger than the
    // transfer itself.
    const double min_round_trip = *std::min_element(round_trips.begin(), round_trips.end());
    at::Tensor bulk = at::zeros({floats});
    // The first transfer is not timed: socket buffers grow on first use.
    PW_RETURN_IF_ERROR(Step(exchange(bulk, kBulkTag), "bulk transfer"));
    std::vector<double> rates;
    for (int i = 0; i < 5; ++i) {
      Clock::time_point start = Clock::now();
      PW_RETURN_IF_ERROR(Step(exchange(bulk, kBulkTag), "bulk transfer"));
      double seconds = Seconds(start);
      rates.push_back(double(floats) * 4 / std::max(seconds - min_round_trip, seconds / 2));
    }
    bandwidth = Median(rates);
  } else if (group.size() >= 2) {
    PW_RETURN_IF_ERROR(Step(group.Barrier(), "barrier"));
  }
  // Share: average GEMM rate, rank 0's link figures.
  at::Tensor figures = at::zeros({3}, at::kDouble);
  double* f = figures.data_ptr<double>();
  f[0] = gemm / group.size();
  if (rank == 0) {
    f[1] = latency;
    f[2] = bandwidth;
  }
  PW_RETURN_IF_ERROR(Step(group.AllReduce({figures}, ReduceKind::kSum).Wait(), "all-reduce"));
  calibration.gemm_flops = f[0];
  calibration.latency_s = f[1];
  calibration.bandwidth = f[2];
  if (group.size() < 2) {
    calibration.latency_s = 0;
    calibration.bandwidth = 0;
  }
  return calibration;
}

}  // namespace pw

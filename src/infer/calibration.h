// Start-up calibration of the weight pool's cost model (weight_pool.h
// PoolCalibration): measured, not assumed.
//
//   gemm_flops  each rank times x[256, d] @ W^T for the block's largest
//               weight (fc, [mlp_ratio*d, d]) for about 50 ms, with the
//               kernels the passes will use (`layout`: oneDNN over a
//               prepacked weight, infer/prepacked_linear.h; pipewright's
//               panels, model/panel_linear.h, in the blocks' `format`;
//               else OpenBLAS); the ranks' figures are averaged
//   latency_s   ranks 0 and 1 ping-pong a 4-byte message 31 times over the
//               serving group; one-way = median round trip / 2
//   bandwidth   rank 0 sends rank 1 a buffer of BlockBytes clamped to
//               [16, 64] MiB, 5 times, each acknowledged; bandwidth = median
//               of bytes / (time - the fastest round trip)
// Medians: on a shared machine a descheduled rank adds milliseconds to some
// exchanges, which says nothing about the link.
// Rank 0's link figures are shared with every rank (an all-reduce), so every
// rank decides with the same model. Loopback links are symmetric, so one
// pair stands for all.
//
// Thread-safety: a collective over groups->serving(); call it from the
// engine thread before the serving thread starts (it uses tags the serving
// protocol never uses, but it also runs an all-reduce on the group).
// Failure: IoError from the transport, naming the step.
#pragma once

#include "core/status.h"
#include "infer/weight_pool.h"

namespace pw {

Result<PoolCalibration> Calibrate(const ModelConfig& config, ProcessGroups* groups,
                                  LinearLayout layout = LinearLayout::kPlain,
                                  WeightFormat format = WeightFormat::kFp32);

}  // namespace pw

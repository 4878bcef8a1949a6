// Identifiers shared by every layer. Plain integers keep the IR compact
// (a schedule of p = 1024 ranks and m = 8192 microbatches holds ~17 M
// actions); names make signatures say which integer is which.
#pragma once

#include <cstdint>

namespace pw {

using RankId = int32_t;        // a process in the pipeline dimension, 0..p-1
using StageId = int32_t;       // a virtual stage (model chunk), 0..S-1
using MicrobatchId = int32_t;  // 0..m-1

// Microbatch of actions that concern a whole stage (REDUCE_GRAD, OPT).
inline constexpr MicrobatchId kNoMicrobatch = -1;

}  // namespace pw

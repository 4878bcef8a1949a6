// The shared look of pipewright's pictures (svg_timeline, time_grid,
// sim_report): one letter and one colour per action kind, which chunk of
// its rank a stage is, and number formatting — so that the SVG, the text
// grid and the summary agree. Internal to viz/; not a user-facing API.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "schedule/schedule.h"
#include "sim/simulator.h"

namespace pw::viz_internal {

// One upper-case letter per kind, unique within a schedule's registry:
// F B I W for compute, S (SEND_F, SEND_B), R (RECV_F, RECV_B),
// G (REDUCE_GRAD), O (OPT); a user kind takes the first letter of its name
// that is still free (OFFLOAD -> 'L' when 'O' is taken), else '?'.
// Built once per picture. Thread-compatible.
class KindLetters {
 public:
  explicit KindLetters(const KindRegistry& kinds);
  char Of(ActionKind kind) const { return letters_[static_cast<size_t>(kind)]; }

 private:
  std::vector<char> letters_;  // by kind id
};

// Fill colour (#rrggbb) of a kind, from the Okabe-Ito palette so that the
// compute kinds stay apart under the common colour-vision deficiencies:
// F blue, B bluish green, I orange, W reddish purple; communication light
// grey; REDUCE_GRAD and OPT dark greys; user kinds cycle through mid greys.
std::string KindFill(const KindRegistry& kinds, ActionKind kind);

// Human name for legends: "forward", "backward", "backward (input)", ...;
// the registered name for other kinds.
std::string KindDescription(const KindRegistry& kinds, ActionKind kind);

// `hex` (#rrggbb) mixed with white; t = 0 keeps it, t = 1 gives white.
std::string Lighten(std::string_view hex, double t);
// True when black text reads better than white on `hex`.
bool PrefersDarkText(std::string_view hex);

// For each stage, its position among the stages its rank owns (0 for the
// first chunk, 1 for the second ...). All zeros for one stage per rank.
std::vector<int> ChunkOfStage(const Placement& placement);
// The most stages any rank owns.
int MaxChunksPerRank(const Placement& placement);

// Aborts (PW_CHECK) unless `result` holds one span per action of `schedule`,
// i.e. it was simulated from this schedule with SimOptions::record_spans.
void CheckSpansMatch(const Schedule& schedule, const SimResult& result);

// Aborts (PW_CHECK) unless `result` has one entry per rank of `schedule`.
void CheckRanksMatch(const Schedule& schedule, const SimResult& result);

// The smallest 1, 2 or 5 x 10^k that is at least `raw` (1 for raw <= 0):
// round steps for time axes.
double NiceStep(double raw);

// Short decimal text: at most 6 significant digits, no trailing zeros
// ("3", "2.5", "0.001", "1.5e+09").
std::string FormatNumber(double v);
// "33.3%" for 0.333.
std::string FormatPercent(double ratio);

}  // namespace pw::viz_internal

// AutoModePolicy: what auto pool mode learns and decides, apart from the
// transport (infer/remote_pool.h has the rules and why). The pool asks it
// which mode a pass runs, tells it what each pass measured, and asks it
// whether to commit for good — to CaS (give the weight cache up) or to WaS
// (send no CaS request again); the pool keeps the cache slots, announces a
// commitment to the other ranks and follows theirs.
//   * Learning: each pass's measured time (wall time less attention)
//     beyond ChooseMode's prediction for its mode becomes that mode's
//     correction: the mean of the mode's first passes, then an EWMA of
//     weight 0.2. The job's first pass teaches nothing (it runs cold).
//   * Probing (when learning): after kProbeAfterPasses passes in a row of
//     one mode, a mode taught fewer than kTaughtBeforeDroppingCache passes
//     runs once.
//   * Committing: to CaS after kCommitAfterPasses CaS passes in a row (when
//     learning, both modes taught kTaughtBeforeDroppingCache passes) where
//     ShouldDropWeightCache agrees; to WaS after kCommitAfterPasses WaS
//     passes in a row (when learning, both modes taught) still predicted
//     faster, or after a WaS pass once both are taught and WaS wins
//     decisively (WasWinsDecisively).
//
// Thread-safety: plain state; the pool's one engine thread uses it. Pure:
// no clock, no transport.
#pragma once

#include <cstdint>

#include "infer/weight_pool.h"

namespace pw {

class AutoModePolicy {
 public:
  // Passes in one mode before the other is tried once (learning).
  static constexpr int64_t kProbeAfterPasses = 4;
  // The passes each mode must have taught before auto gives its weight
  // cache up for CaS, which is for good and costs most when wrong. One WaS
  // pass is not enough: its correction, learned at that pass's rows, stands
  // for every other row count, so one slow WaS pass at prefill rows can
  // commit auto-net to a CaS that is slower at decode rows. Committing to
  // WaS needs one pass of each: CaS is the mode it rules out, and a first
  // CaS pass (an owner allocating for a new client) errs on CaS's slow side.
  static constexpr int64_t kTaughtBeforeDroppingCache = 2;
  // Passes of one mode in a row before auto commits to it: a settled
  // choice, not one noisy pass.
  static constexpr int64_t kCommitAfterPasses = 8;

  // `learn`: correct the predictions with what the passes measure (else
  // they follow from the calibration alone, and nothing is probed).
  explicit AutoModePolicy(bool learn) : learn_(learn) {}

  // The mode (kWas or kCas) of a pass whose predicted costs are `cost`:
  // the faster with the corrections, unless a mode is due a probe.
  PoolMode Choose(const PassCost& cost) const;

  // A pass ended: it ran in `mode`, was the `passes_run`-th pass of the
  // pool (the first teaches nothing), took `measured_s` less its attention
  // and was predicted `cost` (ChooseMode at its rows). Learns from it when
  // learning and it ran WaS or CaS, and counts it in the runs in a row.
  void EndPass(PoolMode mode, int64_t passes_run, double measured_s, const PassCost& cost);

  // Whether the CaS passes have settled enough to ask ShouldDropWeightCache
  // (with extra_was_s() and extra_cas_s()) whether to commit to CaS.
  bool CasSettled() const;

  // Whether to commit to WaS after a pass that ran in `mode`, predicted
  // `cost` at its rows.
  bool ShouldCommitToWas(PoolMode mode, const PassCost& cost) const;

  // The corrections learned so far (PoolStats::learned_extra_*_s).
  double extra_was_s() const { return extra_was_s_; }
  double extra_cas_s() const { return extra_cas_s_; }

 private:
  bool learn_;
  double extra_was_s_ = 0, extra_cas_s_ = 0;
  int64_t taught_was_ = 0, taught_cas_ = 0;        // passes learned from
  int64_t consecutive_was_ = 0, consecutive_cas_ = 0;  // passes in a row
};

}  // namespace pw

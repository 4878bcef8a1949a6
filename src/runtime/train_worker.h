// The body of one rank of `pipewright train` (and of the tests' rank
// helper): reads the world from the environment (WorldFromEnvironment),
// runs RunPipelineRank, and reports. World rank 0 prints
//   "step <n>  loss <x>  lr <x>  grad_norm <x>  <t> ms" for about 20 of
//   the steps (or a progress bar: job.progress relays it to the launcher,
//   a terminal draws it in place), "val step <n> loss <x>" after a validation,
//   "summary: ..." at the end and the observers' summary after it;
// writes job.metrics_out (one JSON object per step: step, loss, lr,
// grad_norm, tokens_per_s, bubble_ratio_measured, bubble_ratio_predicted,
// bubble_ratio_predicted_from ("estimate" or "measured"), the memory
// peaks, val_loss when measured, update_skipped when --on-nonfinite skip
// left the step's update out; then {"observers": [every world rank's report]})
// and job.loss_curve (SVG of train and validation loss).
// With print_params (tests), every number has 17 significant digits, there
// is no summary line, and every rank prints
//   "param <name> <sum> <abs_sum> <weighted_sum>".
// Stdout is flushed per line.
//
// Thread-safety: one call per process. Failure: as RunPipelineRank, or
// IoError for an output file.
#pragma once

#include "core/status.h"
#include "job/train_job.h"
#include "runtime/rank_observer.h"
#include "schedule/schedule.h"

namespace pw {

Status RunWorker(const TrainJob& job, const Schedule& compute_schedule, bool print_params,
                 const TrainObserverHooks& observer = {});

}  // namespace pw

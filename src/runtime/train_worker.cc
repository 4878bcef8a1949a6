#include "runtime/train_worker.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "comm/world_info.h"
#include "core/paired_blocks.h"
#include "core/units.h"
#include "os/memory.h"
#include "runtime/allocator_stats.h"
#include "runtime/trainer.h"
#include "os/atomic_file.h"
#include "viz/line_chart.h"
#include "viz/progress.h"

namespace pw {
namespace {

// What world rank 0 shows and writes of a run: step lines or a progress
// bar, the metrics file, the summary, the loss curve.
class RunReporter {
 public:
  RunReporter(const TrainJob& job, bool print_params)
      : job_(job),
        print_params_(print_params),
        progress_(stdout, print_params ? ProgressMode::kPlain
                          : job.progress ? ProgressMode::kRelay
                          : IsTerminal(stdout) ? ProgressMode::kInPlace
                                               : ProgressMode::kPlain),
        start_(std::chrono::steady_clock::now()) {}

  Status Open() {
    if (job_.metrics_out.empty()) return Status::Ok();
    metrics_ = std::make_unique<std::ofstream>(job_.metrics_out, std::ios::trunc);
    if (!*metrics_) {
      metrics_.reset();
      return Status::IoError("cannot write --metrics-out " + job_.metrics_out);
    }
    return Status::Ok();
  }

  void OnStep(const StepReport& r) {
    if (reports_.empty()) first_step_ = r.step;
    reports_.push_back(r);
    if (metrics_ != nullptr) {
      nlohmann::json line = {{"step", r.step}, {"loss", r.loss}, {"lr", r.lr}, {"grad_norm", r.grad_norm},
                             {"tokens_per_s", r.tokens_per_s}, {"bubble_ratio_measured", r.bubble_ratio_measured},
                             {"bubble_ratio_predicted", r.bubble_ratio_predicted},
                             {"bubble_ratio_predicted_from", r.bubble_predicted_from_timeline ? "measured" : "estimate"}};
      if (r.has_val_loss) line["val_loss"] = r.val_loss;
      if (r.update_skipped) line["update_skipped"] = true;  // --on-nonfinite skip
      if (job_.recompute_paired > 0) line["recompute_held"] = r.recompute_held;
      line["peak_allocated_bytes"] = r.peak_allocated_bytes;
      line["peak_resident_bytes"] = r.peak_resident_bytes;
      line["peak_bytes_predicted"] = r.peak_bytes_predicted;
      if (Offloads(r)) {  // only schedules with OFFLOAD: other runs' lines stay as they were
        line["offloaded_bytes"] = r.offloaded_bytes;
        std::vector<double> ms;
        for (double seconds : r.offload_seconds) ms.push_back(seconds * 1000);
        line["offload_ms"] = ms;
      }
      WriteMetricsLine(line);
    }
    if (print_params_) {  // full precision for tests
      std::printf("step %lld loss %.17g lr %.17g grad_norm %.17g time_s %.3f\n", static_cast<long long>(r.step),
                  r.loss, r.lr, r.grad_norm, r.seconds);
    } else if (progress_.active()) {
      ProgressInfo info;
      info.step = r.step + 1;
      info.total = job_.steps;
      info.loss = r.loss;
      info.tokens_per_s = r.tokens_per_s;
      info.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
      info.first_step = first_step_;
      progress_.Update(info);
    } else if (ShowsStepLine(r)) {
      std::printf("step %4lld  loss %.4f  lr %.2e  grad_norm %.3f  %.0f ms\n", static_cast<long long>(r.step),
                  r.loss, r.lr, r.grad_norm, r.seconds * 1e3);
    }
    if (r.has_val_loss && progress_.active()) {
      progress_.Message("val step " + std::to_string(r.step) + " loss " + std::to_string(r.val_loss));
    } else if (r.has_val_loss) {
      std::printf(print_params_ ? "val step %lld loss %.17g\n" : "val step %lld loss %.4f\n",
                  static_cast<long long>(r.step), r.val_loss);
    }
    std::fflush(stdout);
  }

  // After training: the summary line, the observers' text and report line,
  // the loss curve.
  Status Finish(const std::vector<std::string>& observer_reports, const TrainObserverHooks& observer) {
    progress_.Finish();
    if (!print_params_ && !reports_.empty()) PrintSummary();
    if (!observer_reports.empty()) {
      if (observer.summarize) {
        std::vector<double> step_seconds;
        for (const StepReport& r : reports_) step_seconds.push_back(r.seconds);
        const std::string text = observer.summarize(observer_reports, step_seconds);
        std::printf("%s", text.c_str());
        if (!text.empty() && text.back() != '\n') std::printf("\n");
      }
      if (metrics_ != nullptr) {
        nlohmann::json all = nlohmann::json::array();
        for (const std::string& r : observer_reports) {
          all.push_back(r.empty() ? nlohmann::json(nullptr) : nlohmann::json::parse(r, nullptr, false));
        }
        WriteMetricsLine({{"observers", all}});
      }
    }
    std::fflush(stdout);
    if (job_.loss_curve.empty()) return Status::Ok();
    PW_RETURN_IF_ERROR(WriteLossCurve());
    std::printf("wrote %s (loss curve)\n", job_.loss_curve.c_str());
    return Status::Ok();
  }

 private:
  // Without a progress bar, a long run prints about 20 step lines (the
  // first, every k-th, the last); --metrics-out has every step.
  bool ShowsStepLine(const StepReport& r) const {
    const int64_t every = std::max<int64_t>(1, job_.steps / 20);
    return r.step == first_step_ || (r.step + 1) % every == 0 || r.step + 1 == job_.steps;
  }

  void WriteMetricsLine(const nlohmann::json& line) {
    *metrics_ << line.dump() << '\n' << std::flush;
  }

  void PrintSummary() {
    double busy_seconds = 0;
    for (const StepReport& r : reports_) busy_seconds += r.seconds;
    const StepReport& last = reports_.back();
    const double tokens = static_cast<double>(reports_.size()) * job_.microbatches * job_.microbatch_size *
                          job_.model.seq_len * job_.dp;
    std::printf("summary: %zu steps  final loss %.4f", reports_.size(), last.loss);
    const auto skipped = std::count_if(reports_.begin(), reports_.end(),
                                       [](const StepReport& r) { return r.update_skipped; });
    if (skipped > 0) std::printf("  %lld updates skipped (non-finite)", static_cast<long long>(skipped));
    if (last.has_val_loss) std::printf("  val loss %.4f", last.val_loss);
    std::printf("  %.0f tokens/s  bubbles %.1f%% (predicted %.1f%% from %s costs)\n",
                busy_seconds > 0 ? tokens / busy_seconds : 0.0, 100 * MedianMeasuredBubbles(),
                100 * last.bubble_ratio_predicted,
                last.bubble_predicted_from_timeline ? "measured" : "estimated");
    PrintMemory();
    PrintOffload();
    PrintRecomputePaired();
  }

  static bool Offloads(const StepReport& r) {
    return std::any_of(r.offloaded_bytes.begin(), r.offloaded_bytes.end(), [](double b) { return b > 0; });
  }

  // Per pipeline rank, OFFLOAD's bytes and OFFLOAD + RELOAD's time in a
  // typical step (the median over the steps after the first); nothing
  // without offload.
  void PrintOffload() const {
    if (std::none_of(reports_.begin(), reports_.end(), Offloads)) return;
    const size_t ranks = reports_.back().offloaded_bytes.size();
    std::string bytes, ms;
    for (size_t r = 0; r < ranks; ++r) {
      std::vector<double> b, t;
      for (size_t i = reports_.size() > 1 ? 1 : 0; i < reports_.size(); ++i) {
        const StepReport& s = reports_[i];
        b.push_back(r < s.offloaded_bytes.size() ? s.offloaded_bytes[r] : 0.0);
        t.push_back(r < s.offload_seconds.size() ? s.offload_seconds[r] * 1000 : 0.0);
      }
      std::sort(b.begin(), b.end());
      std::sort(t.begin(), t.end());
      const char* sep = r == 0 ? "" : " / ";
      bytes += sep + FormatBytes(b[b.size() / 2]);
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.1f ms", t[t.size() / 2]);
      ms += sep + std::string(buf);
    }
    std::printf("offload per rank and step: %s to the host and back, in %s (OFFLOAD + RELOAD)\n", bytes.c_str(),
                ms.c_str());
  }

  // --recompute-paired: recomputation's paired cost (core/paired_blocks.h;
  // "allowed" = DROP and RECOMPUTE run, "held" = skipped) and, per pipeline
  // rank, the largest step peak of each phase over the counted pairs.
  struct RecomputePaired {
    PairedSlowdown time;
    std::vector<double> peak_run_bytes, peak_held_bytes;
  };

  RecomputePaired MeasureRecomputePaired() const {
    RecomputePaired out;
    const int64_t last = reports_.back().step;
    std::vector<double> seconds(static_cast<size_t>(last + 1), 0.0);
    for (const StepReport& r : reports_) seconds[static_cast<size_t>(r.step)] = r.seconds;
    // The run's first step allocates and starts the ranks apart: not counted.
    out.time = ComputePairedSlowdown(seconds, first_step_ + 1, job_.recompute_paired, job_.seed);
    if (out.time.pairs == 0) return out;
    const size_t ranks = reports_.back().peak_allocated_bytes.size();
    out.peak_run_bytes.assign(ranks, 0.0);
    out.peak_held_bytes.assign(ranks, 0.0);
    const int64_t end = out.time.first_step + 2 * job_.recompute_paired * out.time.pairs;
    for (const StepReport& r : reports_) {
      if (r.step < out.time.first_step || r.step >= end) continue;
      std::vector<double>& peaks = r.recompute_held ? out.peak_held_bytes : out.peak_run_bytes;
      for (size_t k = 0; k < ranks && k < r.peak_allocated_bytes.size(); ++k) {
        peaks[k] = std::max(peaks[k], r.peak_allocated_bytes[k]);
      }
    }
    return out;
  }

  void PrintRecomputePaired() {
    if (job_.recompute_paired <= 0) return;
    const RecomputePaired m = MeasureRecomputePaired();
    if (m.time.pairs == 0) {
      // Pairs start at multiples of 2K; the first counted one after the
      // run's first step.
      const int64_t pair_steps = 2 * static_cast<int64_t>(job_.recompute_paired);
      const int64_t start = (first_step_ + 1 + pair_steps - 1) / pair_steps * pair_steps;
      std::printf("recompute paired: no complete pair of %d-step blocks after the first step; run at least %lld "
                  "steps\n", job_.recompute_paired, static_cast<long long>(start + pair_steps - first_step_));
      return;
    }
    std::string run, held;
    double largest_run = 0, largest_held = 0;
    for (size_t k = 0; k < m.peak_run_bytes.size(); ++k) {
      const char* sep = k == 0 ? "" : " / ";
      run += sep + FormatBytes(m.peak_run_bytes[k]);
      held += sep + FormatBytes(m.peak_held_bytes[k]);
      largest_run = std::max(largest_run, m.peak_run_bytes[k]);
      largest_held = std::max(largest_held, m.peak_held_bytes[k]);
    }
    std::printf("recompute paired (%lld pairs of %d-step blocks from step %lld): step %+.2f%% [%+.2f, %+.2f] "
                "(%.1f ms with DROP and RECOMPUTE, %.1f ms without); peak per rank %s with, %s without "
                "(largest %.1f MiB lower)\n",
                static_cast<long long>(m.time.pairs), m.time.block_steps, static_cast<long long>(m.time.first_step),
                100 * m.time.slowdown, 100 * m.time.ci95_low, 100 * m.time.ci95_high, m.time.allowed_step_ms,
                m.time.held_step_ms, run.c_str(), held.c_str(), (largest_held - largest_run) / 1048576.0);
    if (metrics_ != nullptr) {
      WriteMetricsLine({{"recompute_paired", {{"block_steps", m.time.block_steps}, {"pairs", m.time.pairs},
                                 {"first_step", m.time.first_step}, {"cost", m.time.slowdown},
                                 {"ci95_low", m.time.ci95_low}, {"ci95_high", m.time.ci95_high},
                                 {"step_ms_with", m.time.allowed_step_ms}, {"step_ms_without", m.time.held_step_ms},
                                 {"peak_bytes_with", m.peak_run_bytes}, {"peak_bytes_without", m.peak_held_bytes}}}});
    }
  }

  // The measured bubble ratio of a typical step: the median over the steps
  // after the first (warm-up: it allocates, and its ranks start apart).
  double MedianMeasuredBubbles() const {
    std::vector<double> ratios;
    for (size_t i = reports_.size() > 1 ? 1 : 0; i < reports_.size(); ++i) {
      ratios.push_back(reports_[i].bubble_ratio_measured);
    }
    std::sort(ratios.begin(), ratios.end());
    const size_t n = ratios.size();
    return n % 2 == 1 ? ratios[n / 2] : (ratios[n / 2 - 1] + ratios[n / 2]) / 2;
  }

  // Per pipeline rank, the largest step peak of the run beside the prediction.
  void PrintMemory() const {
    const size_t ranks = reports_.back().peak_allocated_bytes.size();
    if (ranks == 0) return;
    std::string allocated, resident, predicted;
    for (size_t r = 0; r < ranks; ++r) {
      double a = 0, rss = 0;
      for (const StepReport& s : reports_) {
        if (r < s.peak_allocated_bytes.size()) a = std::max(a, s.peak_allocated_bytes[r]);
        if (r < s.peak_resident_bytes.size()) rss = std::max(rss, s.peak_resident_bytes[r]);
      }
      const char* sep = r == 0 ? "" : " / ";
      allocated += sep + FormatBytes(a);
      resident += sep + FormatBytes(rss);
      const auto& p = reports_.back().peak_bytes_predicted;
      predicted += sep + (r < p.size() ? FormatBytes(p[r]) : std::string("?"));
    }
    std::printf("memory peak per rank: tensors %s (predicted %s), resident %s\n", allocated.c_str(),
                predicted.c_str(), resident.c_str());
  }

  Status WriteLossCurve() const {
    ChartSeries train{"train loss", "#0072B2", {}, {}};
    ChartSeries val{"validation loss", "#D55E00", {}, {}};
    for (const StepReport& r : reports_) {
      train.x.push_back(static_cast<double>(r.step));
      train.y.push_back(r.loss);
      if (r.has_val_loss) {
        val.x.push_back(static_cast<double>(r.step));
        val.y.push_back(r.val_loss);
      }
    }
    const std::string title = "pipewright train (" + job_.schedule + "): loss";
    return WriteFile(job_.loss_curve, RenderLineChartSvg(title, "step", {train, val}), Durability::kAtomic)
        .WithContext("--loss-curve");
  }

  const TrainJob& job_;
  const bool print_params_;
  ProgressPrinter progress_;
  const std::chrono::steady_clock::time_point start_;
  std::unique_ptr<std::ofstream> metrics_;
  std::vector<StepReport> reports_;
  int64_t first_step_ = 0;
};

}  // namespace

Status RunWorker(const TrainJob& job, const Schedule& compute_schedule, bool print_params,
                 const TrainObserverHooks& observer) {
  PW_ASSIGN_OR_RETURN(WorldInfo world, WorldFromEnvironment(ProcessEnvironment()));
  InstallCountingCpuAllocator();  // before the model exists: its parameters count
  PW_RETURN_IF_ERROR(KeepFreedMemoryForReuse());  // no page faults for each step's activations
  const bool is_printer = world.rank == 0;
  std::unique_ptr<RunReporter> reporter;
  if (is_printer) {
    reporter = std::make_unique<RunReporter>(job, print_params);
    PW_RETURN_IF_ERROR(reporter->Open());
  }
  NamedTensors params;
  std::vector<std::string> observer_reports;
  PW_RETURN_IF_ERROR(RunPipelineRank(
      job, compute_schedule, world,
      [&](const StepReport& r) {
        if (reporter != nullptr) reporter->OnStep(r);
      },
      print_params ? &params : nullptr, &observer_reports, observer));
  if (reporter != nullptr) PW_RETURN_IF_ERROR(reporter->Finish(observer_reports, observer));
  for (const ParamSummary& p : SummarizeParams(params)) {
    std::printf("param %s %.17g %.17g %.17g\n", p.name.c_str(), p.sum, p.abs_sum, p.weighted_sum);
  }
  std::fflush(stdout);
  return Status::Ok();
}

}  // namespace pw

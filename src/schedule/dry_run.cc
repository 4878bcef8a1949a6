#include "schedule/dry_run.h"

#include "schedule/list_scheduler.h"

#include <algorithm>
#include <cstdint>

namespace pw {

bool ProducesEvent(const Action& a, const Dependency& d) {
  if (a.stage != d.stage) return false;
  switch (d.event) {
    case EventType::kForwardDone: return a.kind == ActionKind::kForward && a.microbatch == d.microbatch;
    case EventType::kInputGradDone: return ProducesInputGrad(a.kind) && a.microbatch == d.microbatch;
    case EventType::kWeightGradDone: return ProducesWeightGrad(a.kind) && a.microbatch == d.microbatch;
    case EventType::kStageGradsDone: return ProducesWeightGrad(a.kind);
    case EventType::kUserKindDone: return a.kind == d.user_kind && a.microbatch == d.microbatch;
  }
  return false;
}

namespace {

constexpr size_t kMaxStuckLines = 16;  // stuck ranks listed one per line
constexpr size_t kMaxCycleEdges = 8;   // edges of the cycle spelled out
constexpr size_t kMaxSuggestions = 2;

// What one stuck rank waits for.
struct Wait {
  bool stuck = false;
  size_t step = 0;                      // the stuck action
  std::optional<Dependency> dep;        // the first dependency not met
  RankId producer = -1;                 // rank that produces it
  std::optional<size_t> producer_step;  // where, when found
};

}  // namespace

namespace {
// Durations do not change which actions can run, so unit costs will do.
struct UnitHooks {
  double Duration(RankId, const Action&) { return 1.0; }
  double CommDelay(const Action&, StageId) { return 0.0; }
  void OnAction(RankId, size_t, double, double) {}
};
}  // namespace

// Whether the event `d` happened within the prefixes that ran. Only for
// explaining a deadlock: it scans the producer's program.
bool HappenedWithin(const Schedule& s, const std::vector<size_t>& ran, const Dependency& d) {
  const RankId producer = s.placement.RankOf(d.stage);
  const Program& prog = s.programs[producer];
  int count = 0;
  for (size_t i = 0; i < ran[producer]; ++i) {
    if (ProducesEvent(prog[i], d)) ++count;
  }
  return d.event == EventType::kStageGradsDone ? count >= s.num_microbatches : count > 0;
}

std::vector<size_t> DryRun(const Schedule& s) {
  UnitHooks hooks;
  std::vector<size_t> ran;
  Status st = ListSchedule(s, hooks, &ran);
  PW_CHECK(st.ok() || st.code() == StatusCode::kDeadlock, "DryRun: malformed schedule; validate it first: " + st.ToString());
  return ran;
}

DeadlockDiagnosis DiagnoseDeadlock(const Schedule& s, const std::vector<size_t>& ran) {
  const RankId p = static_cast<RankId>(s.programs.size());
  PW_CHECK(ran.size() == s.programs.size(), "DiagnoseDeadlock: one prefix length per rank");
  size_t done_actions = 0;
  for (RankId r = 0; r < p; ++r) done_actions += ran[r];

  const DependencyRule rule(s);
  std::vector<Dependency> deps;
  std::vector<Wait> waits(p);
  for (RankId r = 0; r < p; ++r) {
    const Program& prog = s.programs[r];
    if (ran[r] >= prog.size()) continue;
    Wait& w = waits[r];
    w.stuck = true;
    w.step = ran[r];
    rule.Collect(prog[w.step], deps);
    for (const Dependency& d : deps) {
      if (HappenedWithin(s, ran, d)) continue;
      w.dep = d;
      w.producer = s.placement.RankOf(d.stage);
      // Everything before ran[producer] has run, so the producer is later.
      const Program& other = s.programs[w.producer];
      for (size_t j = ran[w.producer]; j < other.size(); ++j) {
        if (ProducesEvent(other[j], d)) {
          w.producer_step = j;
          break;
        }
      }
      break;
    }
  }

  auto name_at = [&](RankId r, size_t step) { return ActionLabel(s, s.programs[r][step]); };
  auto awaited = [&](const Wait& w) {
    if (!w.dep) return std::string("nothing it needs (please report)");
    const Dependency& d = *w.dep;
    const std::string rank = "rank " + std::to_string(w.producer);
    if (d.event == EventType::kStageGradsDone) {
      std::string t = "the weight gradients of every microbatch of stage " + std::to_string(d.stage);
      if (w.producer_step) t += " (next: " + name_at(w.producer, *w.producer_step) + " at " + rank + ", step " +
                                std::to_string(*w.producer_step) + ")";
      return t;
    }
    if (!w.producer_step) {
      const std::string_view uname = d.event == EventType::kUserKindDone ? s.kinds.Name(d.user_kind) : "";
      return DescribeDependency(d, uname) + ", which no action of " + rank + " produces";
    }
    return name_at(w.producer, *w.producer_step) + ", which " + rank + " runs at step " +
           std::to_string(*w.producer_step);
  };

  DeadlockDiagnosis out;
  std::string& msg = out.message;
  msg = "the schedule deadlocks: the dry run stops after " + std::to_string(done_actions) + " of " +
        std::to_string(s.NumActions()) + " actions; no rank can make progress:";
  size_t listed = 0, stuck = 0;
  for (RankId r = 0; r < p; ++r) {
    if (!waits[r].stuck) continue;
    ++stuck;
    if (listed == kMaxStuckLines) continue;
    ++listed;
    msg += "\n  rank " + std::to_string(r) + " is stuck at step " + std::to_string(waits[r].step) + " (" +
           name_at(r, waits[r].step) + "), waiting for " + awaited(waits[r]);
  }
  if (stuck > listed) msg += "\n  ... and " + std::to_string(stuck - listed) + " more stuck ranks";

  // Follow "waits for a rank that is stuck" from the lowest stuck rank until
  // a rank repeats: every stuck rank waits on a stuck rank, so one must.
  std::vector<RankId> cycle;
  {
    std::vector<int> pos(p, -1);
    std::vector<RankId> path;
    RankId r = -1;
    for (RankId q = 0; q < p && r < 0; ++q) {
      if (waits[q].stuck && waits[q].dep) r = q;
    }
    while (r >= 0 && pos[r] < 0 && waits[r].stuck && waits[r].dep && waits[r].producer_step) {
      pos[r] = static_cast<int>(path.size());
      path.push_back(r);
      r = waits[r].producer;
    }
    if (r >= 0 && pos[r] >= 0) {
      cycle.assign(path.begin() + pos[r], path.end());
      std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
    }
  }

  if (cycle.empty()) {
    for (RankId r = 0; r < p && !out.cell; ++r) {
      if (!waits[r].stuck) continue;
      out.cell = GridCell{r, waits[r].step};
      if (waits[r].producer_step) out.related.push_back({waits[r].producer, *waits[r].producer_step});
    }
    msg += "\nFix the order so that every action comes after what it needs.";
    return out;
  }

  out.cell = GridCell{cycle[0], waits[cycle[0]].step};
  std::string chain = "cycle: rank " + std::to_string(cycle[0]) + "'s ";
  std::vector<std::string> suggestions;
  const size_t n = cycle.size();
  for (size_t k = 0; k < n; ++k) {
    const RankId a = cycle[k], b = cycle[(k + 1) % n];
    const size_t y = *waits[a].producer_step;
    const size_t sb = waits[b].step;
    // A long cycle keeps its first edges and the one that closes it.
    if (n > kMaxCycleEdges + 1 && k >= kMaxCycleEdges && k + 1 < n) {
      if (k == kMaxCycleEdges) chain += "; ... (" + std::to_string(n - 1 - k) + " more ranks)";
      continue;
    }
    if (k > 0) chain += "; ";
    chain += name_at(a, waits[a].step) + " (step " + std::to_string(waits[a].step) + ") waits for rank " +
             std::to_string(b) + "'s " + name_at(b, y) + " (step " + std::to_string(y) + ")";
    if (y == sb) {
      chain += ", where rank " + std::to_string(b) + " is stuck";
    } else {
      chain += ", which comes after " + name_at(b, sb) + " (step " + std::to_string(sb) + ")";
      if (suggestions.size() < kMaxSuggestions) {
        suggestions.push_back("on rank " + std::to_string(b) + " put " + name_at(b, y) + " before " + name_at(b, sb));
      }
    }
    // Mark the actions of every edge spelled out (the skipped ones are not).
    if (k > 0) out.related.push_back({a, waits[a].step});
    out.related.push_back({b, y});
  }
  msg += "\n" + chain + ", closing the cycle";
  if (!suggestions.empty()) {
    msg += "\nBreak the cycle by moving an awaited action (with what it needs) earlier on its rank, e.g. " +
           suggestions[0];
    if (suggestions.size() > 1) msg += ", or " + suggestions[1];
  } else {
    msg += "\nFix the order so that every action comes after what it needs.";
  }
  return out;
}

}  // namespace pw

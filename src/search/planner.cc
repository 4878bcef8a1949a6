#include "search/planner.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <limits>
#include <map>
#include <random>
#include <utility>

#include "core/units.h"
#include "dsl/compiler.h"
#include "schedule/generators.h"
#include "search/builtin_seeds.h"
#include "search/pareto.h"
#include "search/policy_space.h"
#include "search/step_prediction.h"

namespace pw::search {
namespace {

constexpr double kRelTol = 1e-9;
// Families whose tighter memory levels phase 3 explores.
constexpr size_t kLeanFamilies = 3;
// Sweeps over the ranks in the per-rank warm-up refinement.
constexpr int kRefineRounds = 3;
// Gap to the family bound below which the refinement is not worth its 2p
// compiles per round (measured: it found nothing within 1%).
constexpr double kRefineGap = 0.01;

// a < b beyond floating-point noise (b may be infinite: nothing found yet).
bool Faster(double a, double b) { return std::isinf(b) ? a < b : a < b - kRelTol * std::max(1.0, std::abs(b)); }

// Appends the candidates `order` names to `list` until it holds `limit`,
// each result once: candidates the same under `same` (e.g. policies that
// compile to the same timing) would fill the list.
template <class Same>
void AppendDistinct(const std::vector<CandidateSummary>& evaluated, const std::vector<size_t>& order, size_t limit,
                    Same same, std::vector<CandidateSummary>& list) {
  for (size_t i : order) {
    if (list.size() >= limit) break;
    const CandidateSummary& c = evaluated[i];
    if (std::none_of(list.begin(), list.end(), [&](const CandidateSummary& t) { return same(t, c); })) {
      list.push_back(c);
    }
  }
}

// How to rebuild an evaluated candidate.
struct Origin {
  enum class Kind { kPolicy, kBuiltin, kBuiltinOrder };
  Kind kind = Kind::kPolicy;
  int family = -1;     // index into Search::families_ (policies), or -1
  PolicyPoint point;   // policies
  int seed = -1;       // index into Search::seeds_ (built-ins)
};

struct Measured {
  double makespan = 0, peak = 0, bubble = 0;
  bool fits = true;
  BubbleWork side;  // with a side-task profile
};

class Search {
 public:
  Search(const PlanRequest& request, ModelProfile profile, CostModel base, std::optional<double> cap)
      : request_(request),
        profile_(std::move(profile)),
        base_(std::move(base)),
        cap_(cap),
        rng_(request.seed),
        start_(std::chrono::steady_clock::now()),
        cpu_start_(std::clock()) {
    limits_.cap = cap_;
    // With layers, stages of one rank may hold different shares, which the
    // compiler's microbatch count cannot see: caps stay in bytes there.
    limits_.in_shares = profile_.memory_in_microbatches && !profile_.layers;
    for (RankId r = 0; r < request.ranks; ++r) limits_.static_bytes.push_back(base_.StaticBytes(r));
  }

  Status Run(PlanResult& out);

 private:
  bool OutOfBudget() {
    if (stopped_) return true;
    const bool over_count = request_.max_candidates > 0 && stats_.evaluated >= request_.max_candidates;
    stopped_ = over_count || Elapsed() >= request_.time_limit_s;
    return stopped_;
  }
  double Elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

  // Simulates `schedule` under `costs` with the cap.
  Result<Measured> Measure(const Schedule& schedule, const CostModel& stage_costs) {
    CostModel costs = stage_costs;
    costs.memory_cap = cap_;
    PW_RETURN_IF_ERROR(costs.Resolve(schedule));
    SimOptions options;
    options.record_spans = false;
    options.record_bubbles = request_.side_task.has_value();
    PW_ASSIGN_OR_RETURN(SimResult sim, Simulate(schedule, costs, options));
    Measured m{sim.makespan, 0, sim.bubble_ratio, !sim.memory_cap_violated, {}};
    for (const RankSimResult& r : sim.ranks) m.peak = std::max(m.peak, r.peak_memory);
    if (request_.side_task) m.side = SideWork(sim, *request_.side_task);
    return m;
  }

  size_t Record(CandidateSummary summary, const Measured& m, Origin origin) {
    summary.id = evaluated_.size();
    summary.makespan = m.makespan;
    summary.peak_memory = m.peak;
    summary.bubble_ratio = m.bubble;
    summary.fits = m.fits;
    summary.side_work = m.side.total;
    summary.side_work_best_rank = m.side.best_rank;
    ++stats_.evaluated;
    if (!m.fits) ++stats_.over_cap;
    if (m.fits && Faster(m.makespan, incumbent_)) incumbent_ = m.makespan;
    evaluated_.push_back(std::move(summary));
    origins_.push_back(origin);
    return evaluated_.size() - 1;
  }

  // Evaluates one policy point of a family (once); returns its index.
  std::optional<size_t> EvaluatePolicy(int f, const PolicyPoint& point) {
    auto key = std::make_pair(f, point);
    if (auto it = visited_.find(key); it != visited_.end()) return it->second;
    if (!IsValid(axes_[f], point) || OutOfBudget()) return std::nullopt;
    const Family& family = families_[f];
    const PolicyAxes& axes = axes_[f];
    std::optional<size_t> index;
    Result<dsl::PipeProgram> program = ProgramFor(family, axes, point, request_.microbatches, "plan");
    Result<Schedule> schedule = program.ok() ? dsl::CompilePipeProgram(*program, CompileOptions(family))
                                             : Result<Schedule>(program.status());
    Result<Measured> m = schedule.ok() ? Measure(*schedule, family.costs) : Result<Measured>(schedule.status());
    if (m.ok()) {
      CandidateSummary s;
      s.origin = "policy";
      s.name = "policy";
      s.family = family.Describe();
      s.policy = DescribePolicy(axes, point);
      s.num_stages = family.num_stages();
      s.layers_per_stage = family.layers_per_stage;
      s.lower_bound = family.lower.time;
      index = Record(std::move(s), *m, Origin{Origin::Kind::kPolicy, f, point, -1});
    } else {
      ++stats_.failed;
      ++stats_.evaluated;
    }
    visited_.emplace(key, index);
    return index;
  }

  dsl::CompileOptions CompileOptions(const Family& family) const {
    dsl::CompileOptions o;
    o.ranks = request_.ranks;
    o.microbatches = request_.microbatches;
    o.costs = family.costs;
    return o;
  }

  // Better for the search: fits, then faster, then leaner.
  bool Better(size_t a, size_t b) const {
    const CandidateSummary& x = evaluated_[a];
    const CandidateSummary& y = evaluated_[b];
    if (x.fits != y.fits) return x.fits;
    if (Faster(x.makespan, y.makespan)) return true;
    if (Faster(y.makespan, x.makespan)) return false;
    return Faster(x.peak_memory, y.peak_memory);
  }

  // Bytes, or microbatch shares when no activation bytes were given.
  std::string MemoryText(double v) const {
    if (!profile_.memory_in_microbatches) return FormatBytes(v);
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.3g microbatch shares", v);
    return buf;
  }

  void EvaluateBuiltins();
  void SearchFamilies();
  // Coordinate descent from `start`: sweeps one axis at a time (in a
  // seeded order), moves to the best point, repeats until no axis helps.
  // The memory axis is held fixed unless `vary_memory`. Stops early when
  // the budget runs out or (with `prune`) the family's bound cannot beat
  // the incumbent. Returns the best point it saw.
  std::optional<size_t> Descend(int f, PolicyPoint start, bool vary_memory, bool prune);
  // Moves the warm-up of one rank at a time by one forward (per-rank
  // integers, written as an expression), from the point of `from`.
  void RefineWarmups(int f, size_t from);
  bool Pruned(int f) const { return !Faster(families_[f].lower.time, incumbent_); }
  Status Materialize(size_t index, PlannedSchedule& out);
  // Net gains against the fastest fitting candidate, the harvest pick and
  // the best keep_top by net gain. `fitting`: sorted, fastest first.
  Status PickForHarvest(const std::vector<size_t>& fitting, PlanResult& out);

  const PlanRequest& request_;
  const ModelProfile profile_;
  const CostModel base_;
  const std::optional<double> cap_;
  MemoryLimits limits_;
  std::mt19937_64 rng_;
  std::chrono::steady_clock::time_point start_;
  std::clock_t cpu_start_;
  bool stopped_ = false;

  std::vector<Family> families_;
  std::vector<PolicyAxes> axes_;
  std::vector<std::optional<size_t>> family_best_;
  std::vector<BuiltinSeed> seeds_;
  std::map<std::pair<int, PolicyPoint>, std::optional<size_t>> visited_;
  std::vector<CandidateSummary> evaluated_;
  std::vector<Origin> origins_;
  std::vector<size_t> builtin_ids_;
  double incumbent_ = std::numeric_limits<double>::infinity();
  double lower_bound_ = std::numeric_limits<double>::infinity();
  SearchStats stats_;
};

void Search::EvaluateBuiltins() {
  if (!request_.space.builtins) return;
  seeds_ = BuiltinSeeds(request_.space.max_chunks);
  for (size_t i = 0; i < seeds_.size(); ++i) {
    const BuiltinSeed& seed = seeds_[i];
    CandidateSummary s;
    s.origin = "built-in";
    s.name = seed.Label();
    s.policy = seed.Label();
    Result<Schedule> schedule =
        GenerateSchedule(seed.family, GeneratorOptions{request_.ranks, request_.microbatches, seed.chunks});
    if (!schedule.ok()) continue;  // e.g. m % p != 0 for interleaved-1f1b: the family does not apply
    const dsl::PlacementSpec spec = PlacementSpecOf(*schedule);
    const bool split = schedule->UsesSplitBackward();
    // Built-ins run on the uniform split (what one gets without a planner);
    // with layers the planner also tries their order on balanced layers.
    for (bool balanced : {false, true}) {
      if (balanced && !profile_.layers) break;
      Result<Family> family = MakeFamily(profile_, base_, spec, split, balanced, request_.microbatches);
      if (!family.ok()) break;  // more stages than layers
      if (balanced && family->bounds == UniformBounds(profile_, family->num_stages()).value()) break;
      Result<Measured> m = Measure(*schedule, family->costs);
      if (!m.ok()) break;
      lower_bound_ = std::min(lower_bound_, family->lower.time);
      CandidateSummary c = s;
      c.family = family->Describe();
      c.num_stages = family->num_stages();
      c.layers_per_stage = family->layers_per_stage;
      c.lower_bound = family->lower.time;
      if (balanced) {
        c.origin = "built-in order";
        c.name = seed.Label() + " (balanced layers)";
      }
      const size_t id = Record(std::move(c), *m,
                               Origin{balanced ? Origin::Kind::kBuiltinOrder : Origin::Kind::kBuiltin, -1, {},
                                      static_cast<int>(i)});
      if (!balanced) builtin_ids_.push_back(id);
    }
  }
}

std::optional<size_t> Search::Descend(int f, PolicyPoint start, bool vary_memory, bool prune) {
  const PolicyAxes& axes = axes_[f];
  // The sizes at the start: the per-rank refinement may add warm-ups later.
  std::array<int, kNumPolicyAxes> sizes{};
  std::vector<PolicyAxis> order;
  for (int a = 0; a < kNumPolicyAxes; ++a) {
    const auto axis = static_cast<PolicyAxis>(a);
    sizes[a] = AxisSize(axes, axis);
    if (axis != PolicyAxis::kMemory || vary_memory) order.push_back(axis);
  }
  // Fisher-Yates on the raw generator (std::shuffle's steps differ between
  // standard libraries; this keeps a seed's order the same everywhere).
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng_() % i]);
  std::optional<size_t> best = EvaluatePolicy(f, start);
  PolicyPoint current = start;
  for (bool improved = true; improved;) {
    improved = false;
    for (PolicyAxis axis : order) {
      if ((prune && Pruned(f)) || OutOfBudget()) return best;
      for (int value = 0; value < sizes[static_cast<int>(axis)]; ++value) {
        PolicyPoint trial = current;
        AxisIndex(trial, axis) = value;
        std::optional<size_t> id = EvaluatePolicy(f, trial);
        if (!id) continue;
        if (!best || Better(*id, *best)) {
          best = id;
          improved = true;
        }
        if (!family_best_[f] || Better(*id, *family_best_[f])) family_best_[f] = id;
      }
      if (best) current = origins_[*best].point;
    }
  }
  return best;
}

void Search::RefineWarmups(int f, size_t from) {
  PolicyAxes& axes = axes_[f];
  PolicyPoint point = origins_[from].point;
  std::optional<std::vector<int64_t>> values = WarmupValues(families_[f], axes, point, request_.microbatches);
  if (!values) return;
  // Written as the original expression plus per-rank corrections, which
  // reads better than a list of every rank's value.
  const std::string& text = axes.warmups[point.warmup];
  const std::string base = text == kPrefixWarmup ? PerRankExpression(*values) : text;
  const std::vector<int64_t> start = *values;
  size_t best = from;
  for (int round = 0; round < kRefineRounds; ++round) {
    bool improved = false;
    for (size_t r = 0; r < values->size(); ++r) {
      for (int step : {-1, 1}) {
        if (OutOfBudget()) return;
        std::vector<int64_t> trial_values = *values;
        trial_values[r] += step;
        if (trial_values[r] < 0) continue;
        std::vector<int64_t> delta(trial_values.size());
        for (size_t k = 0; k < delta.size(); ++k) delta[k] = trial_values[k] - start[k];
        PolicyPoint trial = point;
        // "base + d" parses as (base) + d: + and - bind loosest, left to right.
        const std::string d = PerRankExpression(delta);
        trial.warmup = WarmupIndex(axes, d[0] == '-' ? base + " - " + d.substr(1) : base + " + " + d);
        std::optional<size_t> id = EvaluatePolicy(f, trial);
        if (id && Better(*id, best)) {
          best = *id;
          point = trial;
          *values = std::move(trial_values);
          improved = true;
        }
      }
    }
    if (!improved) break;
  }
  if (Better(best, *family_best_[f])) family_best_[f] = best;
}

void Search::SearchFamilies() {
  if (!request_.space.policies) return;
  SpaceOptions space = request_.space;
  space.recompute = space.recompute && cap_.has_value();
  space.offload = space.offload && cap_.has_value() && std::isfinite(base_.host_bandwidth) &&
                  !profile_.memory_in_microbatches;
  families_ = EnumerateFamilies(profile_, base_, request_.microbatches, space);
  stats_.families = static_cast<int64_t>(families_.size());
  std::vector<int> order(families_.size());
  for (size_t f = 0; f < families_.size(); ++f) {
    order[f] = static_cast<int>(f);
    axes_.push_back(AxesFor(families_[f], request_.microbatches, limits_));
    lower_bound_ = std::min(lower_bound_, families_[f].lower.time);
  }
  family_best_.assign(families_.size(), std::nullopt);
  // Most promising first: the lowest bound.
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return Faster(families_[a].lower.time, families_[b].lower.time); });
  std::vector<char> pruned(families_.size(), 0);
  auto prune = [&](int f) {
    if (pruned[f]) return;
    pruned[f] = 1;
    ++stats_.families_pruned;
    int64_t done = 0;
    for (const auto& [key, id] : visited_) done += key.first == f ? 1 : 0;
    stats_.candidates_pruned += static_cast<int64_t>(axes_[f].Size()) - done;
  };
  // Phase 1: every family's start points, so that each has a foothold.
  for (int f : order) {
    if (Pruned(f)) {
      prune(f);
      continue;
    }
    for (const PolicyPoint& pt : StartPoints(families_[f], axes_[f], request_.microbatches)) {
      std::optional<size_t> id = EvaluatePolicy(f, pt);
      if (id && (!family_best_[f] || Better(*id, *family_best_[f]))) family_best_[f] = id;
    }
  }
  // Phase 2: local search in each family, best footholds first.
  std::vector<int> by_result;
  for (int f : order) {
    if (family_best_[f]) by_result.push_back(f);
  }
  std::stable_sort(by_result.begin(), by_result.end(),
                   [&](int a, int b) { return Better(*family_best_[a], *family_best_[b]); });
  for (int f : by_result) {
    if (OutOfBudget()) break;
    if (Pruned(f)) {
      prune(f);
      continue;
    }
    Descend(f, origins_[*family_best_[f]].point, /*vary_memory=*/true, /*prune=*/true);
    if (Pruned(f)) prune(f);
  }
  // Phase 2b: per-rank warm-ups for the best policy, when it is well above
  // its family's bound: one rank at a time, one forward more or less.
  std::optional<size_t> leader;
  for (int f : order) {
    if (family_best_[f] && (!leader || Better(*family_best_[f], *leader))) leader = family_best_[f];
  }
  if (leader && evaluated_[*leader].makespan > (1 + kRefineGap) * families_[origins_[*leader].family].lower.time) {
    RefineWarmups(origins_[*leader].family, *leader);
  }
  // Phase 3: the lean end of the front. The time search holds memory at the
  // cap; for each tighter level, descend again in the families that did
  // best (time pruning does not apply: they are after leaner points).
  std::vector<int> ranked;
  for (int f : order) {
    if (family_best_[f]) ranked.push_back(f);
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [&](int a, int b) { return Better(*family_best_[a], *family_best_[b]); });
  if (ranked.size() > kLeanFamilies) ranked.resize(kLeanFamilies);
  for (int f : ranked) {
    const PolicyPoint best = origins_[*family_best_[f]].point;
    for (int level = 0; level < static_cast<int>(axes_[f].memories.size()); ++level) {
      if (level == best.memory || OutOfBudget()) continue;
      PolicyPoint start = best;
      start.memory = level;
      Descend(f, start, /*vary_memory=*/false, /*prune=*/false);
    }
  }
}

Status Search::Materialize(size_t index, PlannedSchedule& out) {
  const Origin& origin = origins_[index];
  out.summary = evaluated_[index];
  CostModel stage_costs;
  if (origin.kind == Origin::Kind::kPolicy) {
    const Family& family = families_[origin.family];
    PW_ASSIGN_OR_RETURN(out.program,
                        ProgramFor(family, axes_[origin.family], origin.point, request_.microbatches, "plan"));
    PW_ASSIGN_OR_RETURN(out.schedule, dsl::CompilePipeProgram(out.program, CompileOptions(family)));
    stage_costs = family.costs;
  } else {
    const BuiltinSeed& seed = seeds_[origin.seed];
    PW_ASSIGN_OR_RETURN(out.schedule, GenerateSchedule(seed.family, GeneratorOptions{request_.ranks,
                                                                                      request_.microbatches,
                                                                                      seed.chunks}));
    const bool balanced = origin.kind == Origin::Kind::kBuiltinOrder;
    PW_ASSIGN_OR_RETURN(Family family, MakeFamily(profile_, base_, PlacementSpecOf(out.schedule),
                                                  out.schedule.UsesSplitBackward(), balanced,
                                                  request_.microbatches));
    stage_costs = family.costs;
    const PolicyAxes axes = AxesFor(family, request_.microbatches, limits_);
    if (std::optional<dsl::PipeProgram> policy =
            FindEquivalentPolicy(out.schedule, family, axes, request_.microbatches, "plan-" + seed.family)) {
      out.program = std::move(*policy);
    } else {
      out.program = PinnedProgram(out.schedule, "plan-" + seed.family);
      out.pinned = true;
    }
  }
  // The split the plan was made for travels with the program (`layers`),
  // so that training it uses the same boundaries.
  out.program.layers_per_stage = out.summary.layers_per_stage;
  out.costs = stage_costs;
  out.costs.memory_cap = cap_;
  PW_RETURN_IF_ERROR(out.costs.Resolve(out.schedule));
  PW_ASSIGN_OR_RETURN(out.sim, Simulate(out.schedule, out.costs));
  // A forward-only schedule has no training step: leave it 0.
  if (Result<double> step = PredictTrainingStep(out.schedule, out.costs); step.ok()) {
    out.training_step = *step;
  }
  return Status::Ok();
}

Status Search::PickForHarvest(const std::vector<size_t>& fitting, PlanResult& out) {
  const double fastest = evaluated_[fitting.front()].makespan;
  for (CandidateSummary& c : evaluated_) c.net_gain = c.side_work - request_.ranks * (c.makespan - fastest);
  std::vector<size_t> by_gain = fitting;
  std::stable_sort(by_gain.begin(), by_gain.end(), [&](size_t a, size_t b) {
    const double ga = evaluated_[a].net_gain, gb = evaluated_[b].net_gain;
    return ga > gb + kRelTol * std::max(1.0, std::abs(gb));
  });
  AppendDistinct(evaluated_, by_gain, request_.keep_top, [](const CandidateSummary& a, const CandidateSummary& b) {
    return a.family == b.family && a.makespan == b.makespan && a.side_work == b.side_work;
  }, out.harvest_top);
  out.harvest_pick.emplace();
  return Materialize(by_gain.front(), *out.harvest_pick);
}

Status Search::Run(PlanResult& out) {
  EvaluateBuiltins();
  SearchFamilies();
  stats_.timed_out = stopped_;
  stats_.seconds = Elapsed();
  stats_.cpu_seconds = static_cast<double>(std::clock() - cpu_start_) / CLOCKS_PER_SEC;

  std::vector<size_t> fitting;
  for (size_t i = 0; i < evaluated_.size(); ++i) {
    if (evaluated_[i].fits) fitting.push_back(i);
  }
  if (fitting.empty()) {
    if (evaluated_.empty()) {
      return Status::FailedPrecondition("no candidate schedule could be built for " + std::to_string(request_.ranks) +
                                        " ranks and " + std::to_string(request_.microbatches) +
                                        " microbatches; check the cost table and --layers");
    }
    size_t lean = 0;
    for (size_t i = 1; i < evaluated_.size(); ++i) {
      if (evaluated_[i].peak_memory < evaluated_[lean].peak_memory) lean = i;
    }
    const CandidateSummary& l = evaluated_[lean];
    return Status::FailedPrecondition(
        "no schedule fits the memory cap of " + MemoryText(*cap_) + " per rank: the leanest of " +
        std::to_string(evaluated_.size()) + " candidates (" + l.name + ", " + l.family + ", " + l.policy +
        ") peaks at " + MemoryText(l.peak_memory) + "; raise --memory-cap or use more ranks");
  }
  std::stable_sort(fitting.begin(), fitting.end(), [&](size_t a, size_t b) { return Better(a, b); });
  // First, so that every summary copied below carries its net gain.
  if (request_.side_task) PW_RETURN_IF_ERROR(PickForHarvest(fitting, out));
  PW_RETURN_IF_ERROR(Materialize(fitting.front(), out.best));
  // The best few, each result once.
  AppendDistinct(evaluated_, fitting, request_.keep_top, [](const CandidateSummary& a, const CandidateSummary& b) {
    return a.family == b.family && a.makespan == b.makespan && a.peak_memory == b.peak_memory;
  }, out.top);

  std::vector<TimeMemoryPoint> points;
  for (size_t i : fitting) points.push_back({evaluated_[i].makespan, evaluated_[i].peak_memory});
  for (size_t k : ParetoFront(points)) out.pareto.push_back(evaluated_[fitting[k]]);

  for (size_t id : builtin_ids_) {
    out.builtins.push_back(evaluated_[id]);
    const CandidateSummary& b = evaluated_[id];
    if (b.fits && (!out.best_builtin || Faster(b.makespan, out.best_builtin->makespan))) out.best_builtin = b;
  }
  out.lower_bound = lower_bound_;
  out.memory_cap = cap_;
  out.memory_in_microbatches = profile_.memory_in_microbatches;
  out.evaluated = std::move(evaluated_);
  out.stats = stats_;
  return Status::Ok();
}

}  // namespace

Result<PlanResult> Plan(const PlanRequest& request) {
  if (request.ranks < 1 || request.microbatches < 1) {
    return Status::InvalidArgument("the planner needs at least 1 rank and 1 microbatch, got " +
                                   std::to_string(request.ranks) + " ranks and " +
                                   std::to_string(request.microbatches) + " microbatches");
  }
  if (request.num_layers < 0) return Status::InvalidArgument("--layers must be positive");
  if (request.num_layers > 0 && request.num_layers < request.ranks) {
    return Status::InvalidArgument("--layers " + std::to_string(request.num_layers) + " is fewer than the " +
                                   std::to_string(request.ranks) + " ranks; every rank needs at least one layer");
  }
  if (!(request.time_limit_s > 0)) return Status::InvalidArgument("--time-limit must be positive");
  if (Status st = request.costs.cluster.Check(request.ranks); !st.ok()) return st.WithContext("cluster");
  PW_ASSIGN_OR_RETURN(ModelProfile profile, MakeModelProfile(request.costs, request.ranks, request.num_layers));
  CostModel base = request.costs;
  base.stages = {StageCost{}};
  if (base.static_bytes.empty()) base.static_bytes = {0};
  if (base.static_bytes.size() != 1 && base.static_bytes.size() != static_cast<size_t>(request.ranks)) {
    return Status::InvalidArgument("static memory has " + std::to_string(base.static_bytes.size()) +
                                   " entries but there are " + std::to_string(request.ranks) +
                                   " ranks; give one for all ranks or one per rank");
  }
  const std::optional<double> cap = request.memory_cap ? request.memory_cap : request.costs.memory_cap;
  base.memory_cap.reset();
  PlanResult result;
  Search search(request, std::move(profile), std::move(base), cap);
  PW_RETURN_IF_ERROR(search.Run(result));
  return result;
}

}  // namespace pw::search

#include "schedule/validator.h"

#include <algorithm>
#include <array>

#include "schedule/dry_run.h"
#include "schedule/dependencies.h"

namespace pw {

namespace {

// Per (stage, microbatch) cell the checker keeps one byte of four 2-bit
// saturating counters (0, 1, 2, "3 or more"): enough to tell missing from
// present from duplicated, and 16.7 M actions fit in a few tens of MB.
// Communication cells count SEND_F, RECV_F, SEND_B, RECV_B in the order of
// ActionKind, so their slot is kind - kSendForward.
enum ComputeSlot { kSlotF = 0, kSlotB = 1, kSlotI = 2, kSlotW = 3 };
enum StageSlot { kSlotReduce = 0, kSlotOpt = 1 };

int Count(uint8_t packed, int slot) { return (packed >> (2 * slot)) & 3; }
// Adds one to a counter; returns its previous value.
int Bump(uint8_t& packed, int slot) {
  const int c = Count(packed, slot);
  if (c < 3) packed = static_cast<uint8_t>(packed + (1 << (2 * slot)));
  return c;
}

// Events that have happened so far in the second pass, per cell.
constexpr uint8_t kForwardDoneBit = 1, kInputGradDoneBit = 2, kWeightGradDoneBit = 4;
// User-kind cells hold a count in bits 0-1 and this done bit.
constexpr uint8_t kUserDoneBit = 4;

std::string Where(RankId r, size_t step) {
  return "rank " + std::to_string(r) + ", step " + std::to_string(step) + ": ";
}
// "1 program", "3 programs".
std::string Counted(size_t n, const std::string& noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}
std::string At(GridCell c) { return "rank " + std::to_string(c.rank) + ", step " + std::to_string(c.step); }

class Checker {
 public:
  Checker(const Schedule& schedule, const ValidateOptions& options)
      : s_(schedule),
        options_(options),
        max_kept_(std::max<size_t>(1, options.max_problems)),
        num_stages_(schedule.num_stages()),
        m_(schedule.num_microbatches) {}

  ValidationReport Run();

 private:
  // --- problem bookkeeping -------------------------------------------------
  // Whether a problem of this kind would still be kept; when not, callers
  // only CountOnly() it and skip building the message (and any search for it).
  bool Keeping(ProblemKind k) const { return found_[static_cast<int>(k)].size() < max_kept_; }
  void CountOnly() { ++num_found_; }
  void Add(ProblemKind k, StatusCode code, std::optional<GridCell> cell, std::string message,
           std::vector<GridCell> related = {}, std::optional<RankId> rank = std::nullopt) {
    ++num_found_;
    auto& list = found_[static_cast<int>(k)];
    if (list.size() >= max_kept_) return;
    ValidationProblem p;
    p.kind = k;
    p.code = code;
    p.cell = cell;
    p.rank = rank ? rank : cell ? std::optional<RankId>(cell->rank) : std::nullopt;
    p.related = std::move(related);
    p.message = std::move(message);
    list.push_back(std::move(p));
  }
  void AddRule(ProblemKind k, GridCell cell, std::string message, std::vector<GridCell> related = {}) {
    Add(k, StatusCode::kFailedPrecondition, cell, std::move(message), std::move(related));
  }

  // --- checks ---------------------------------------------------------------
  bool CheckStructure();
  // True if the action's kind, stage and microbatch exist; else reports it
  // (when `report`) and returns false. Inline: it runs for every action.
  bool InRange(RankId r, size_t i, const Action& a, bool report) {
    const int k = static_cast<int>(a.kind);
    const bool ok = known_[k] && a.stage >= 0 && a.stage < num_stages_ &&
                    (has_mb_[k] ? a.microbatch >= 0 && a.microbatch < m_ : a.microbatch == kNoMicrobatch);
    return ok || ReportRange(r, i, a, report);
  }
  bool ReportRange(RankId r, size_t i, const Action& a, bool report);
  void CountActions();
  void CountCompute(RankId r, size_t i, const Action& a, int slot);
  void CountOther(RankId r, size_t i, const Action& a);
  void ReportDuplicate(ProblemKind k, RankId r, size_t i, const Action& a, const std::string& rule);
  void ReportMissing();
  void ReportMissingCell(StageId s, MicrobatchId mb, ActionKind missing);
  void CheckProgramOrder();
  void CheckComm(RankId r, size_t i, const Action& a);
  void CheckStageAction(RankId r, size_t i, const Action& a);
  void CheckUserKind(RankId r, size_t i, const Action& a);
  void RunDry();

  // --- helpers --------------------------------------------------------------
  size_t Cell(StageId s, MicrobatchId mb) const { return static_cast<size_t>(s) * m_ + mb; }
  std::string Label(const Action& a) const { return ActionLabel(s_, a); }
  std::string Label(StageId s, ActionKind k, MicrobatchId mb) const { return ActionLabel(s_, Action{s, mb, k}); }
  RankId Owner(StageId s) const { return s_.placement.RankOf(s); }
  int UserIndex(ActionKind k) const { return static_cast<int>(k) - static_cast<int>(ActionKind::kFirstUser); }
  bool Exists(const Dependency& d) const;
  bool Done(const Dependency& d) const;
  void MarkDone(const Action& a);
  // First step in [from, to) of rank r whose action satisfies `pred`.
  template <class Pred>
  std::optional<size_t> FindForward(RankId r, size_t from, size_t to, Pred pred) const {
    const Program& prog = s_.programs[r];
    for (size_t i = from; i < std::min(to, prog.size()); ++i) {
      if (pred(prog[i])) return i;
    }
    return std::nullopt;
  }
  // Last step before `before` of rank r whose action satisfies `pred`.
  template <class Pred>
  std::optional<size_t> FindBackward(RankId r, size_t before, Pred pred) const {
    const Program& prog = s_.programs[r];
    for (size_t i = std::min(before, prog.size()); i-- > 0;) {
      if (pred(prog[i])) return i;
    }
    return std::nullopt;
  }

  const Schedule& s_;
  const ValidateOptions& options_;
  const size_t max_kept_;
  const int num_stages_;
  const int m_;
  std::array<std::vector<ValidationProblem>, kNumProblemKinds> found_;
  size_t num_found_ = 0;

  std::array<bool, kMaxKinds> known_{};   // kind id -> registered
  std::array<bool, kMaxKinds> has_mb_{};  // kind id -> takes a microbatch
  std::vector<uint8_t> compute_;          // per cell: counts of F, B, I, W
  std::vector<uint8_t> comm_;             // per cell: SEND_F, RECV_F, SEND_B, RECV_B (if any)
  std::vector<std::vector<uint8_t>> user_;  // per user kind, per cell (if any)
  std::vector<uint8_t> stage_ops_;        // per stage: REDUCE_GRAD, OPT counts
  std::vector<int32_t> wgrads_owned_;     // per stage: B/W actions on the owner rank
  std::vector<uint8_t> done_;             // per cell: k*DoneBit
  std::vector<int32_t> wgrads_done_;      // per stage: B/W done so far
  std::vector<uint8_t> reduce_done_;      // per stage
};

bool Checker::CheckStructure() {
  const auto structure = [&](std::string m) { Add(ProblemKind::kStructure, StatusCode::kInvalidArgument, {}, m); };
  if (s_.num_ranks() == 0) {
    structure("the schedule has no placement (0 ranks); build it with one, e.g. Placement::Sequential(p)");
  } else if (s_.programs.size() != static_cast<size_t>(s_.num_ranks())) {
    structure("the schedule has " + Counted(s_.programs.size(), "program") + " but its placement has " +
              Counted(s_.num_ranks(), "rank") + "; give exactly one program per rank");
  }
  if (m_ < 1) {
    structure("the schedule's num_microbatches is " + std::to_string(m_) + "; it needs at least 1");
  }
  return num_found_ == 0;
}

bool Checker::ReportRange(RankId r, size_t i, const Action& a, bool report) {
  const int k = static_cast<int>(a.kind);
  std::string what;
  if (!known_[k]) {
    what = "action kind id " + std::to_string(k) +
           " is not registered in the schedule's kinds; register it (KindRegistry::Register) or remove the action";
  } else if (a.stage < 0 || a.stage >= num_stages_) {
    what = Label(a) + " names stage " + std::to_string(a.stage) + ", but the schedule has stages 0.." +
           std::to_string(num_stages_ - 1) + "; use one of those or widen the placement";
  } else if (has_mb_[k] && a.microbatch == kNoMicrobatch) {
    what = Label(a) + " has no microbatch; write one, e.g. " + Label(a.stage, a.kind, 0);
  } else if (has_mb_[k] && (a.microbatch < 0 || a.microbatch >= m_)) {
    what = Label(a) + " names microbatch " + std::to_string(a.microbatch) + ", but the schedule has microbatches 0.." +
           std::to_string(m_ - 1) + "; use one of those or raise the microbatch count";
  } else if (!has_mb_[k] && a.microbatch != kNoMicrobatch) {
    what = Label(a) + " takes no microbatch; write it as " + Label(a.stage, a.kind, kNoMicrobatch);
  } else {
    return true;
  }
  if (report) Add(ProblemKind::kRange, StatusCode::kInvalidArgument, GridCell{r, i}, Where(r, i) + what);
  return false;
}

void Checker::ReportDuplicate(ProblemKind k, RankId r, size_t i, const Action& a, const std::string& rule) {
  if (!Keeping(k)) return CountOnly();
  // The earlier copy is on this rank or, if this copy is misplaced, on the owner.
  auto same = [&](const Action& b) { return b == a; };
  std::optional<GridCell> first;
  if (auto j = FindBackward(r, i, same)) {
    first = GridCell{r, *j};
  } else if (Owner(a.stage) != r) {
    if (auto j = FindForward(Owner(a.stage), 0, SIZE_MAX, same)) first = GridCell{Owner(a.stage), *j};
  }
  std::string msg = Where(r, i) + Label(a) + " appears a second time";
  if (first) msg += " (first at " + At(*first) + ")";
  msg += "; " + rule + ", so remove one of them";
  std::vector<GridCell> related;
  if (first) related.push_back(*first);
  AddRule(k, GridCell{r, i}, std::move(msg), std::move(related));
}

void Checker::CountCompute(RankId r, size_t i, const Action& a, int slot) {
  uint8_t& c = compute_[Cell(a.stage, a.microbatch)];
  auto mixed = [](uint8_t v) { return Count(v, kSlotB) > 0 && (Count(v, kSlotI) > 0 || Count(v, kSlotW) > 0); };
  const bool was_mixed = mixed(c);
  if (Bump(c, slot) > 0) {
    return ReportDuplicate(ProblemKind::kCoverage, r, i, a,
                           slot == kSlotF ? "each (stage, microbatch) runs its forward exactly once"
                                          : "each (stage, microbatch) runs its backward exactly once");
  }
  if (was_mixed || !mixed(c)) return;
  // Report a mixture once, at the action that creates it.
  if (!Keeping(ProblemKind::kCoverage)) return CountOnly();
  const bool is_full = slot == kSlotB;
  auto other = [&](const Action& b) {
    return b.stage == a.stage && b.microbatch == a.microbatch &&
           (is_full ? (b.kind == ActionKind::kBackwardInput || b.kind == ActionKind::kBackwardWeight)
                    : b.kind == ActionKind::kBackward);
  };
  std::optional<GridCell> prev;
  if (auto j = FindBackward(r, i, other)) prev = GridCell{r, *j};
  else if (auto k = FindForward(Owner(a.stage), 0, SIZE_MAX, other)) prev = GridCell{Owner(a.stage), *k};
  const std::string prev_name = prev ? Label(s_.programs[prev->rank][prev->step]) : "another action";
  const std::string prev_at = prev ? " (" + At(*prev) + ")" : "";
  const std::string cell = "stage " + std::to_string(a.stage) + ", microbatch " + std::to_string(a.microbatch);
  std::string msg = Where(r, i) + Label(a) +
                    (is_full ? " runs the full backward of " + cell + ", which " + prev_name + prev_at +
                                   " already splits into I and W"
                             : " splits the backward of " + cell + ", which " + prev_name + prev_at +
                                   " already runs in full") +
                    "; use either B, or I and W, not both";
  std::vector<GridCell> related;
  if (prev) related.push_back(*prev);
  AddRule(ProblemKind::kCoverage, GridCell{r, i}, std::move(msg), std::move(related));
}

void Checker::CountOther(RankId r, size_t i, const Action& a) {
  const size_t cells = static_cast<size_t>(num_stages_) * m_;
  switch (a.kind) {
    case ActionKind::kSendForward:
    case ActionKind::kRecvForward:
    case ActionKind::kSendBackward:
    case ActionKind::kRecvBackward: {
      if (comm_.empty()) comm_.assign(cells, 0);
      const int slot = static_cast<int>(a.kind) - static_cast<int>(ActionKind::kSendForward);
      if (Bump(comm_[Cell(a.stage, a.microbatch)], slot) > 0) {
        ReportDuplicate(ProblemKind::kCommunication, r, i, a, "each transfer happens exactly once");
      }
      return;
    }
    case ActionKind::kReduceGrad:
      if (Bump(stage_ops_[a.stage], kSlotReduce) > 0) {
        ReportDuplicate(ProblemKind::kStageAction, r, i, a, "a stage reduces its gradients once per iteration");
      }
      return;
    case ActionKind::kOptimizer:
      if (Bump(stage_ops_[a.stage], kSlotOpt) > 0) {
        ReportDuplicate(ProblemKind::kStageAction, r, i, a, "a stage steps its optimizer once per iteration");
      }
      return;
    default:
      if (IsUserKind(a.kind) && has_mb_[static_cast<int>(a.kind)]) {
        auto& cells_of_kind = user_[UserIndex(a.kind)];
        if (cells_of_kind.empty()) cells_of_kind.assign(cells, 0);
        Bump(cells_of_kind[Cell(a.stage, a.microbatch)], 0);
      }
      return;
  }
}

// Pass 1: ranges, placement, and counts of every action per cell.
void Checker::CountActions() {
  compute_.assign(static_cast<size_t>(num_stages_) * m_, 0);
  stage_ops_.assign(num_stages_, 0);
  wgrads_owned_.assign(num_stages_, 0);
  user_.assign(s_.kinds.UserKinds().size(), {});
  for (RankId r = 0; r < s_.num_ranks(); ++r) {
    const Program& prog = s_.programs[r];
    for (size_t i = 0; i < prog.size(); ++i) {
      const Action& a = prog[i];
      if (a.kind == ActionKind::kIdle) continue;
      if (!InRange(r, i, a, /*report=*/true)) continue;
      const RankId owner = Owner(a.stage);
      if (owner != r) {
        AddRule(ProblemKind::kPlacement, GridCell{r, i},
                Where(r, i) + Label(a) + " belongs to stage " + std::to_string(a.stage) +
                    ", which the placement puts on rank " + std::to_string(owner) + "; move it to rank " +
                    std::to_string(owner) + "'s program");
      }
      switch (a.kind) {
        case ActionKind::kForward: CountCompute(r, i, a, kSlotF); break;
        case ActionKind::kBackward: CountCompute(r, i, a, kSlotB); break;
        case ActionKind::kBackwardInput: CountCompute(r, i, a, kSlotI); break;
        case ActionKind::kBackwardWeight: CountCompute(r, i, a, kSlotW); break;
        default: CountOther(r, i, a); break;
      }
      if (owner == r && ProducesWeightGrad(a.kind)) ++wgrads_owned_[a.stage];
    }
  }
}

void Checker::ReportMissing() {
  for (StageId s = 0; s < num_stages_; ++s) {
    for (MicrobatchId mb = 0; mb < m_; ++mb) {
      // Hot loop over every cell: strings are built only for problems kept.
      const uint8_t c = compute_[Cell(s, mb)];
      if (Count(c, kSlotF) == 0) ReportMissingCell(s, mb, ActionKind::kForward);
      if (Count(c, kSlotB) > 0) continue;
      const bool has_i = Count(c, kSlotI) > 0, has_w = Count(c, kSlotW) > 0;
      if (has_i && !has_w) ReportMissingCell(s, mb, ActionKind::kBackwardWeight);
      if (!has_i && has_w) ReportMissingCell(s, mb, ActionKind::kBackwardInput);
      if (!has_i && !has_w && options_.require_backward) ReportMissingCell(s, mb, ActionKind::kBackward);
    }
  }
}

void Checker::ReportMissingCell(StageId s, MicrobatchId mb, ActionKind missing) {
  if (!Keeping(ProblemKind::kCoverage)) return CountOnly();
  const RankId owner = Owner(s);
  const std::string whose =
      " to the program of rank " + std::to_string(owner) + ", which owns stage " + std::to_string(s);
  const std::string cell = "stage " + std::to_string(s) + ", microbatch " + std::to_string(mb);
  const std::string f = Label(s, ActionKind::kForward, mb);
  const std::string b = Label(s, ActionKind::kBackward, mb);
  const std::string in = Label(s, ActionKind::kBackwardInput, mb);
  const std::string w = Label(s, ActionKind::kBackwardWeight, mb);
  // For half a split backward, show the half that is there.
  auto find = [&](ActionKind k) -> std::vector<GridCell> {
    auto j = FindForward(owner, 0, SIZE_MAX, [&](const Action& a) { return a == Action{s, mb, k}; });
    return j ? std::vector<GridCell>{GridCell{owner, *j}} : std::vector<GridCell>{};
  };
  std::string msg;
  std::vector<GridCell> related;
  switch (missing) {
    case ActionKind::kForward:
      msg = "missing " + f + ": " + cell + " has no forward; add " + f + whose;
      break;
    case ActionKind::kBackward:
      msg = "missing " + b + ": " + cell + " has no backward; add " + b + " (or " + in + " and " + w + ")" + whose +
            ", after " + f;
      break;
    case ActionKind::kBackwardWeight:
      msg = "missing " + w + ": " + in + " computes only the input gradient of " + cell + "; add " + w +
            " after it" + whose + " (or replace " + in + " by " + b + ")";
      related = find(ActionKind::kBackwardInput);
      break;
    default:
      msg = "missing " + in + ": " + w + " needs the input-gradient pass " + in + " first; add " + in +
            " before it" + whose + " (or replace " + w + " by " + b + ")";
      related = find(ActionKind::kBackwardWeight);
      break;
  }
  Add(ProblemKind::kCoverage, StatusCode::kFailedPrecondition, std::nullopt, std::move(msg), std::move(related),
      owner);
}

bool Checker::Exists(const Dependency& d) const {
  const size_t c = Cell(d.stage, d.microbatch);
  switch (d.event) {
    case EventType::kForwardDone: return Count(compute_[c], kSlotF) > 0;
    case EventType::kInputGradDone: return Count(compute_[c], kSlotB) + Count(compute_[c], kSlotI) > 0;
    case EventType::kWeightGradDone: return Count(compute_[c], kSlotB) + Count(compute_[c], kSlotW) > 0;
    case EventType::kStageGradsDone: return true;
    case EventType::kUserKindDone: {
      const auto& u = user_[UserIndex(d.user_kind)];
      return !u.empty() && Count(u[c], 0) > 0;
    }
  }
  return false;
}

bool Checker::Done(const Dependency& d) const {
  if (d.event == EventType::kStageGradsDone) return wgrads_done_[d.stage] >= m_;
  const size_t c = Cell(d.stage, d.microbatch);
  switch (d.event) {
    case EventType::kForwardDone: return done_[c] & kForwardDoneBit;
    case EventType::kInputGradDone: return done_[c] & kInputGradDoneBit;
    case EventType::kWeightGradDone: return done_[c] & kWeightGradDoneBit;
    case EventType::kUserKindDone: return user_[UserIndex(d.user_kind)][c] & kUserDoneBit;
    default: return false;
  }
}

void Checker::MarkDone(const Action& a) {
  switch (a.kind) {
    case ActionKind::kForward: done_[Cell(a.stage, a.microbatch)] |= kForwardDoneBit; return;
    case ActionKind::kBackward:
      done_[Cell(a.stage, a.microbatch)] |= kInputGradDoneBit | kWeightGradDoneBit;
      ++wgrads_done_[a.stage];
      return;
    case ActionKind::kBackwardInput: done_[Cell(a.stage, a.microbatch)] |= kInputGradDoneBit; return;
    case ActionKind::kBackwardWeight:
      done_[Cell(a.stage, a.microbatch)] |= kWeightGradDoneBit;
      ++wgrads_done_[a.stage];
      return;
    case ActionKind::kReduceGrad: reduce_done_[a.stage] = 1; return;
    default:
      if (IsUserKind(a.kind) && has_mb_[static_cast<int>(a.kind)]) {
        user_[UserIndex(a.kind)][Cell(a.stage, a.microbatch)] |= kUserDoneBit;
      }
      return;
  }
}

// Pass 2: each rank's program in order, knowing from pass 1 what exists.
void Checker::CheckProgramOrder() {
  const DependencyRule rule(s_);
  done_.assign(compute_.size(), 0);
  wgrads_done_.assign(num_stages_, 0);
  reduce_done_.assign(num_stages_, 0);
  std::vector<Dependency> deps;
  for (RankId r = 0; r < s_.num_ranks(); ++r) {
    const Program& prog = s_.programs[r];
    for (size_t i = 0; i < prog.size(); ++i) {
      const Action& a = prog[i];
      // Misplaced and out-of-range actions are reported already; their
      // order on a rank that should not run them says nothing.
      if (a.kind == ActionKind::kIdle || !InRange(r, i, a, /*report=*/false) || Owner(a.stage) != r) continue;
      rule.Collect(a, deps);
      for (const Dependency& d : deps) {
        // Stage-wide events are the stage-action check's; other ranks' events
        // are the dry run's; stage-level user kinds' rules are reported below.
        if (d.event == EventType::kStageGradsDone || d.microbatch < 0 || Owner(d.stage) != r) continue;
        if (!Exists(d) || Done(d)) continue;
        if (!Keeping(ProblemKind::kOrder)) { CountOnly(); continue; }
        auto later = FindForward(r, i + 1, SIZE_MAX, [&](const Action& b) { return ProducesEvent(b, d); });
        if (!later) continue;  // the producer is misplaced: reported as such
        const std::string need = Label(prog[*later]);
        AddRule(ProblemKind::kOrder, GridCell{r, i},
                Where(r, i) + "impossible order: " + Label(a) + " needs " + need +
                    ", which comes later on the same rank (step " + std::to_string(*later) +
                    "); a rank runs its program in order, so move " + need + " before " + Label(a),
                {GridCell{r, *later}});
      }
      if (IsCommunication(a.kind)) {
        CheckComm(r, i, a);
      } else if (a.kind == ActionKind::kReduceGrad || a.kind == ActionKind::kOptimizer) {
        CheckStageAction(r, i, a);
      } else if (IsUserKind(a.kind)) {
        CheckUserKind(r, i, a);
      }
      MarkDone(a);
    }
  }
}

void Checker::CheckComm(RankId r, size_t i, const Action& a) {
  const StageId s = a.stage;
  const MicrobatchId mb = a.microbatch;
  const bool forward = a.kind == ActionKind::kSendForward || a.kind == ActionKind::kRecvForward;
  const bool send = a.kind == ActionKind::kSendForward || a.kind == ActionKind::kSendBackward;
  // The peer stage, and the kind and slot of the matching action there.
  const StageId peer = (forward == send) ? s + 1 : s - 1;
  const ActionKind match = send ? (forward ? ActionKind::kRecvForward : ActionKind::kRecvBackward)
                                : (forward ? ActionKind::kSendForward : ActionKind::kSendBackward);
  const int match_slot = static_cast<int>(match) - static_cast<int>(ActionKind::kSendForward);
  const std::string what = forward ? "activations" : "gradients";
  if (peer < 0 || peer >= num_stages_) {
    if (!Keeping(ProblemKind::kCommunication)) return CountOnly();
    AddRule(ProblemKind::kCommunication, GridCell{r, i},
            Where(r, i) + Label(a) + (send ? " sends " : " receives ") + what + (send ? " to" : " from") + " stage " +
                std::to_string(peer) + ", which does not exist (stage " + std::to_string(s) + " is the " +
                (peer < 0 ? "first" : "last") + " stage); remove it");
    return;
  }
  const RankId peer_rank = Owner(peer);
  if (peer_rank == r) {
    if (!Keeping(ProblemKind::kCommunication)) return CountOnly();
    AddRule(ProblemKind::kCommunication, GridCell{r, i},
            Where(r, i) + Label(a) + (send ? " sends " : " receives ") + what + (send ? " to" : " from") + " stage " +
                std::to_string(peer) + ", which is on the same rank; stages on one rank pass data in memory, so "
                "remove it");
    return;
  }
  if (Count(comm_[Cell(peer, mb)], match_slot) == 0) {
    if (!Keeping(ProblemKind::kCommunication)) return CountOnly();
    const std::string m = Label(peer, match, mb);
    // Where the missing half goes: a receive before the compute that
    // consumes it, a send after the compute that produces it.
    const std::string anchor =
        forward ? Label(peer, ActionKind::kForward, mb)
                : Label(peer, ActionKind::kBackward, mb) + " (or " + Label(peer, ActionKind::kBackwardInput, mb) + ")";
    AddRule(ProblemKind::kCommunication, GridCell{r, i},
            Where(r, i) + Label(a) + " has no matching " + m + " on rank " + std::to_string(peer_rank) +
                ", which owns stage " + std::to_string(peer) + "; add " + m + " to rank " +
                std::to_string(peer_rank) + "'s program " + (send ? "before " : "after ") + anchor);
    return;
  }
  // A receive must come before the compute on this rank that consumes it.
  if (!send) {
    const size_t c = Cell(s, mb);
    const bool consumed = forward ? (done_[c] & kForwardDoneBit) : (done_[c] & kInputGradDoneBit);
    if (!consumed) return;
    if (!Keeping(ProblemKind::kCommunication)) return CountOnly();
    auto consumer = FindBackward(r, i, [&](const Action& b) {
      return b.stage == s && b.microbatch == mb &&
             (forward ? b.kind == ActionKind::kForward : ProducesInputGrad(b.kind));
    });
    if (!consumer) return;
    const std::string name = Label(s_.programs[r][*consumer]);
    AddRule(ProblemKind::kCommunication, GridCell{r, i},
            Where(r, i) + Label(a) + " comes after " + name + " (step " + std::to_string(*consumer) +
                "), which needs the " + what + " it receives; move it before " + name,
            {GridCell{r, *consumer}});
  }
}

void Checker::CheckStageAction(RankId r, size_t i, const Action& a) {
  const StageId s = a.stage;
  if (wgrads_done_[s] < wgrads_owned_[s]) {
    if (!Keeping(ProblemKind::kStageAction)) return CountOnly();
    auto next = FindForward(r, i + 1, SIZE_MAX,
                            [&](const Action& b) { return b.stage == s && ProducesWeightGrad(b.kind); });
    if (!next) return;
    const std::string w = Label(s_.programs[r][*next]);
    AddRule(ProblemKind::kStageAction, GridCell{r, i},
            Where(r, i) + Label(a) + " comes before " + w + " (step " + std::to_string(*next) +
                "), but it needs the weight gradients of every microbatch of stage " + std::to_string(s) +
                "; move it after the last weight-gradient action (B or W) of the stage",
            {GridCell{r, *next}});
    return;
  }
  if (a.kind == ActionKind::kOptimizer && Count(stage_ops_[s], kSlotReduce) > 0 && !reduce_done_[s]) {
    if (!Keeping(ProblemKind::kStageAction)) return CountOnly();
    auto reduce = FindForward(r, i + 1, SIZE_MAX,
                              [&](const Action& b) { return b.stage == s && b.kind == ActionKind::kReduceGrad; });
    if (!reduce) return;  // misplaced: reported as such
    const std::string name = Label(s_.programs[r][*reduce]);
    AddRule(ProblemKind::kStageAction, GridCell{r, i},
            Where(r, i) + Label(a) + " comes before " + name + " (step " + std::to_string(*reduce) +
                "); the optimizer step needs the reduced gradients, so move it after " + name,
            {GridCell{r, *reduce}});
  }
}

void Checker::CheckUserKind(RankId r, size_t i, const Action& a) {
  const KindInfo& info = s_.kinds.Info(a.kind);
  if (info.after.empty()) return;
  std::string rule = "kind " + info.name + "'s rule 'after";
  for (ActionKind k : info.after) rule += " " + std::string(s_.kinds.Name(k));
  rule += "'";
  if (!info.has_microbatch) {
    if (!Keeping(ProblemKind::kUserKind)) return CountOnly();
    AddRule(ProblemKind::kUserKind, GridCell{r, i},
            Where(r, i) + Label(a) + " takes no microbatch, but " + rule +
                " waits for actions of one microbatch; register " + info.name +
                " with has_microbatch = true, or without that rule");
    return;
  }
  const StageId s = a.stage;
  const MicrobatchId mb = a.microbatch;
  const uint8_t c = compute_[Cell(s, mb)];
  for (ActionKind k : info.after) {
    bool present = false;
    std::string need;
    switch (k) {
      case ActionKind::kForward:
        present = Count(c, kSlotF) > 0;
        need = Label(s, k, mb);
        break;
      case ActionKind::kBackward:
      case ActionKind::kBackwardInput:
        present = Count(c, kSlotB) + Count(c, kSlotI) > 0;
        need = Label(s, ActionKind::kBackward, mb) + " or " + Label(s, ActionKind::kBackwardInput, mb);
        break;
      case ActionKind::kBackwardWeight:
        present = Count(c, kSlotB) + Count(c, kSlotW) > 0;
        need = Label(s, ActionKind::kBackward, mb) + " or " + Label(s, ActionKind::kBackwardWeight, mb);
        break;
      default:
        if (!IsUserKind(k)) continue;  // the dependency rule ignores other kinds
        present = !user_[UserIndex(k)].empty() && Count(user_[UserIndex(k)][Cell(s, mb)], 0) > 0;
        need = Label(s, k, mb);
        break;
    }
    if (present) continue;
    if (!Keeping(ProblemKind::kUserKind)) { CountOnly(); continue; }
    AddRule(ProblemKind::kUserKind, GridCell{r, i},
            Where(r, i) + Label(a) + " must run after " + need + " (" + rule + "), but the schedule has no " + need +
                "; add it to rank " + std::to_string(r) + "'s program before " + Label(a) + ", or remove " +
                Label(a));
  }
}

void Checker::RunDry() {
  const std::vector<size_t> ran = DryRun(s_);
  for (RankId r = 0; r < s_.num_ranks(); ++r) {
    if (ran[r] == s_.programs[r].size()) continue;
    DeadlockDiagnosis diagnosis = DiagnoseDeadlock(s_, ran);
    Add(ProblemKind::kDeadlock, StatusCode::kDeadlock, diagnosis.cell, std::move(diagnosis.message),
        std::move(diagnosis.related));
    return;
  }
}

ValidationReport Checker::Run() {
  ValidationReport report;
  for (int k = 0; k < kMaxKinds; ++k) {
    known_[k] = s_.kinds.Contains(static_cast<ActionKind>(k));
    has_mb_[k] = known_[k] && s_.kinds.Info(static_cast<ActionKind>(k)).has_microbatch;
  }
  if (CheckStructure()) {
    CountActions();
    ReportMissing();
    CheckProgramOrder();
    if (num_found_ == 0 && options_.dry_run) {
      report.dry_run_done = true;
      RunDry();
    }
  }
  for (auto& list : found_) {
    for (auto& p : list) {
      if (report.problems.size() < max_kept_) report.problems.push_back(std::move(p));
    }
  }
  report.num_problems = num_found_;
  return report;
}

}  // namespace

ValidationReport CheckSchedule(const Schedule& schedule, const ValidateOptions& options) {
  return Checker(schedule, options).Run();
}

Status ProblemStatus(const Schedule& schedule, const ValidationProblem& problem, const StepGridOptions& grid) {
  std::string msg = problem.message;
  if (problem.cell || problem.rank) {
    StepGridOptions g = grid;
    g.mark = problem.cell;
    g.related = problem.related;
    g.focus_rank = problem.rank;
    std::string text = RenderStepGrid(schedule, g);
    if (!text.empty() && text.back() == '\n') text.pop_back();
    msg += "\n" + text;
  }
  return Status(problem.code, std::move(msg));
}

Status ValidateSchedule(const Schedule& schedule, const ValidateOptions& options) {
  const ValidationReport report = CheckSchedule(schedule, options);
  if (report.ok()) return Status::Ok();
  Status st = ProblemStatus(schedule, report.problems.front(), options.grid);
  if (report.num_problems == 1) return st;
  const size_t more = report.num_problems - 1;
  return Status(st.code(), st.message() + "\n(" + Counted(more, "more problem") +
                               " found; fix this one first, as it may cause the others)");
}

}  // namespace pw

#include "dsl/list_compiler.h"

#include <algorithm>
#include <cstdio>

namespace pw::dsl::internal {
namespace {

// A dependency seen from its producer: when a task of `slot` at stage s
// starts, the task (s + stage_offset, consumer_slot) of the same microbatch
// learns when its input arrives.
struct Edge {
  int32_t stage_offset;
  int32_t consumer_slot;
  bool before_rule;  // the consumer waits through a user kind's `before` rule
  double delay;      // communication time when the data crosses ranks
};

struct Event {
  double time;
  int32_t rank;
  int32_t task;  // -1: the rank's own action ended; else: `task` became ready
};

// Min-heap by time. Ties need no order: every event of an instant is taken
// before any rank decides, and marking tasks ready commutes.
struct Later {
  bool operator()(const Event& a, const Event& b) const { return a.time > b.time; }
};

std::string Num(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", x);
  return buf;
}

constexpr uint8_t kReady = 1, kStarted = 2, kGateOpen = 4;

// Runs the list scheduler over one CompilePlan. Tasks are numbered
// mb * stride_ + cell, where a cell is (stage, slot) = stage * ns_ + slot.
class Engine {
 public:
  Engine(const CompilePlan& plan, const CostModel& costs, Schedule& schedule)
      : plan_(plan), costs_(costs), schedule_(schedule) {}

  Status Run() {
    BuildTables();
    InitTasks();
    std::vector<int32_t> woken;
    woken.reserve(p_);
    while (!heap_.empty()) {
      // Take every event of this instant first, so that a rank deciding now
      // sees every input that arrives now, whatever order the events came in.
      const double now = heap_.front().time;
      woken.clear();
      while (!heap_.empty() && heap_.front().time == now) {
        std::pop_heap(heap_.begin(), heap_.end(), Later());
        const Event ev = heap_.back();
        heap_.pop_back();
        if (ev.task >= 0) MarkReady(ev.task);
        if (free_at_[ev.rank] <= now && !woken_[ev.rank]) {
          woken_[ev.rank] = 1;
          woken.push_back(ev.rank);
        }
      }
      std::sort(woken.begin(), woken.end());
      for (int32_t r : woken) {
        woken_[r] = 0;
        TryStart(r, now);
      }
    }
    if (emitted_ != total_) return Diagnose();
    return Status::Ok();
  }

 private:
  int Cell(int stage, int slot) const { return stage * ns_ + slot; }
  int32_t Task(int mb, int cell) const { return mb * stride_ + cell; }
  bool ForwardLike(int slot) const { return slot == kSlotF || slot >= kFirstUserSlot; }

  // --- static tables, per cell ---------------------------------------------

  void BuildTables() {
    p_ = schedule_.num_ranks();
    S_ = schedule_.num_stages();
    m_ = plan_.num_microbatches;
    ns_ = kFirstUserSlot + static_cast<int>(plan_.user_slots.size());
    stride_ = S_ * ns_;
    words_ = (m_ + 63) / 64;
    const Placement& placement = schedule_.placement;

    slot_kind_.assign(ns_, ActionKind::kIdle);
    slot_kind_[kSlotF] = ActionKind::kForward;
    slot_kind_[kSlotBackward] = plan_.split_backward ? ActionKind::kBackwardInput : ActionKind::kBackward;
    slot_kind_[kSlotW] = ActionKind::kBackwardWeight;
    for (size_t u = 0; u < plan_.user_slots.size(); ++u) slot_kind_[kFirstUserSlot + u] = plan_.user_slots[u].kind;

    const int cells = stride_;
    present_.assign(cells, 0);
    cell_stage_.assign(cells, 0);
    cell_slot_.assign(cells, 0);
    cell_rank_.assign(cells, 0);
    for (int s = 0; s < S_; ++s) {
      for (int slot = 0; slot < ns_; ++slot) {
        const int c = Cell(s, slot);
        cell_stage_[c] = s;
        cell_slot_[c] = slot;
        cell_rank_[c] = placement.RankOf(s);
        present_[c] = slot == kSlotW                ? plan_.split_backward
                      : slot < kFirstUserSlot       ? 1
                                                    : plan_.user_slots[slot - kFirstUserSlot].on_stage[s];
      }
    }

    // Dependencies by consumer (schedule/dependencies.h), then grouped by
    // producer so that starting a task walks only its own consumers.
    struct Raw {
      int producer;
      Edge edge;
    };
    std::vector<Raw> raw;
    deps_.assign(cells, 0);
    base_deps_.assign(cells, 0);
    gated_.assign(cells, 0);
    std::vector<std::vector<int>> gates(cells);
    for (int s = 0; s < S_; ++s) {
      for (int slot = 0; slot < ns_; ++slot) {
        const int c = Cell(s, slot);
        if (!present_[c]) continue;
        auto add = [&](int ps, int pslot, bool before) {
          if (!present_[Cell(ps, pslot)]) return;
          double delay = 0;
          if (ps != s && placement.RankOf(ps) != placement.RankOf(s)) delay = costs_.CommTime(ps, s, placement.RankOf(ps), placement.RankOf(s));
          raw.push_back({Cell(ps, pslot), Edge{s - ps, slot, before, delay}});
          ++deps_[c];
          if (!before) ++base_deps_[c];
        };
        if (slot == kSlotF) {
          if (s > 0) add(s - 1, kSlotF, false);
        } else if (slot == kSlotBackward) {
          add(s, kSlotF, false);
          if (s + 1 < S_) add(s + 1, kSlotBackward, false);
        } else if (slot == kSlotW) {
          add(s, kSlotBackward, false);
        } else {
          for (int a : plan_.user_slots[slot - kFirstUserSlot].after_slots) add(s, a, false);
        }
        for (size_t u = 0; u < plan_.user_slots.size(); ++u) {
          const auto& targets = plan_.user_slots[u].before_slots;
          if (std::find(targets.begin(), targets.end(), slot) != targets.end()) {
            add(s, kFirstUserSlot + static_cast<int>(u), true);
          }
        }
        if (slot >= kFirstUserSlot) {
          for (int t : plan_.user_slots[slot - kFirstUserSlot].before_slots) {
            if (!present_[Cell(s, t)]) continue;
            gates[Cell(s, t)].push_back(slot);
            gated_[c] = 1;
          }
        }
      }
    }
    edge_begin_.assign(cells + 1, 0);
    for (const Raw& e : raw) ++edge_begin_[e.producer + 1];
    for (int c = 0; c < cells; ++c) edge_begin_[c + 1] += edge_begin_[c];
    edges_.resize(raw.size());
    std::vector<int> fill(edge_begin_.begin(), edge_begin_.end() - 1);
    for (const Raw& e : raw) edges_[fill[e.producer]++] = e.edge;
    gate_begin_.assign(cells + 1, 0);
    gate_slots_.clear();
    for (int c = 0; c < cells; ++c) {
      gate_slots_.insert(gate_slots_.end(), gates[c].begin(), gates[c].end());
      gate_begin_[c + 1] = static_cast<int>(gate_slots_.size());
    }

    // The cells each rank chooses among, in stage order.
    rank_cells_begin_.assign(p_ + 1, 0);
    rank_cells_.clear();
    for (RankId r = 0; r < p_; ++r) {
      for (StageId s : placement.StagesOf(r)) {
        for (int slot = 0; slot < ns_; ++slot) {
          if (present_[Cell(s, slot)]) rank_cells_.push_back(Cell(s, slot));
        }
      }
      rank_cells_begin_[r + 1] = static_cast<int>(rank_cells_.size());
    }

    // Durations and memory effects, in the unit of the cap.
    duration_.assign(cells, 0.0);
    delta_.assign(cells, 0.0);
    for (int s = 0; s < S_; ++s) {
      const StageCost& cost = costs_.Stage(s);
      const double share = 1.0 / static_cast<double>(placement.StagesOf(placement.RankOf(s)).size());
      const double unit = plan_.cap_in_bytes ? cost.activation_bytes : share;
      const double freed_by_i = plan_.cap_in_bytes ? cost.freed_by_input : 0.0;
      for (int slot = 0; slot < ns_; ++slot) {
        const int c = Cell(s, slot);
        if (!present_[c]) continue;
        duration_[c] = costs_.Duration(placement.RankOf(s), Action{s, 0, slot_kind_[slot]}, schedule_.kinds);
        double d = 0;
        if (slot == kSlotF) d = 1;
        else if (slot == kSlotBackward) d = plan_.split_backward ? -freed_by_i : -1;
        else if (slot == kSlotW) d = -(1 - freed_by_i);
        else d = schedule_.kinds.Info(slot_kind_[slot]).memory_delta_fraction;
        delta_[c] = d * unit;
      }
    }
    share_.assign(p_, 0.0);
    for (int s = 0; s < S_; ++s) share_[placement.RankOf(s)] += delta_[Cell(s, kSlotF)];
  }

  void InitTasks() {
    const size_t n = static_cast<size_t>(m_) * stride_;
    remaining_.assign(n, 0);
    base_remaining_.assign(n, 0);
    ready_time_.assign(n, 0.0);
    base_time_.assign(n, 0.0);
    flags_.assign(n, 0);
    bits_.assign(static_cast<size_t>(stride_) * words_, 0);
    first_word_.assign(stride_, 0);
    ready_count_.assign(stride_, 0);
    free_at_.assign(p_, 0.0);
    reserved_.assign(p_, 0.0);
    admitted_.assign(static_cast<size_t>(p_) * m_, 0);
    forwards_waiting_.assign(p_, 0);
    pending_w_.assign(p_, 0);
    forwards_left_.assign(p_, 0);
    woken_.assign(p_, 0);
    owned_.assign(p_, 0);
    emitted_by_.assign(p_, 0);
    pin_pos_.assign(p_, 0);
    pinned_tasks_.assign(p_, {});
    pinned_full_.assign(p_, 0);
    heap_.clear();
    heap_.reserve(2 * n + p_);
    total_ = 0;
    emitted_ = 0;

    for (int c = 0; c < stride_; ++c) {
      if (present_[c]) owned_[cell_rank_[c]] += static_cast<size_t>(m_);
    }
    for (RankId r = 0; r < p_; ++r) {
      total_ += owned_[r];
      forwards_left_[r] = static_cast<int64_t>(schedule_.placement.StagesOf(r).size()) * m_;
      schedule_.programs[r].reserve(owned_[r]);
      if (const PinnedSequence* pin = plan_.pinned[r]) {
        pinned_full_[r] = pin->prefix_only ? 0 : 1;
        for (const Action& a : pin->actions) {
          pinned_tasks_[r].push_back(Task(a.microbatch, Cell(a.stage, SlotOfKind(a.kind))));
        }
      }
    }

    for (int mb = 0; mb < m_; ++mb) {
      for (int c = 0; c < stride_; ++c) {
        if (!present_[c]) continue;
        remaining_[Task(mb, c)] = deps_[c] + gated_[c];
        base_remaining_[Task(mb, c)] = base_deps_[c];
      }
    }
    // Gates of actions with no base dependencies open at once (Arrive then
    // pushes the user kinds they complete); then every task that waits for
    // nothing is ready at time 0.
    for (int mb = 0; mb < m_; ++mb) {
      for (int c = 0; c < stride_; ++c) {
        if (present_[c] && base_deps_[c] == 0) OpenGates(mb, c);
      }
    }
    for (int mb = 0; mb < m_; ++mb) {
      for (int c = 0; c < stride_; ++c) {
        if (present_[c] && deps_[c] + gated_[c] == 0) Push(0.0, cell_rank_[c], Task(mb, c));
      }
    }
    for (RankId r = 0; r < p_; ++r) Push(0.0, r, -1);
  }

  int SlotOfKind(ActionKind k) const {
    for (int slot = 0; slot < ns_; ++slot) {
      if (slot_kind_[slot] == k && (slot != kSlotW || plan_.split_backward)) return slot;
    }
    PW_CHECK(false, "pinned action of a kind the compiler front end should have rejected");
    return 0;
  }

  void Push(double time, RankId rank, int32_t task) {
    heap_.push_back({time, rank, task});
    std::push_heap(heap_.begin(), heap_.end(), Later());
  }

  // One input of task (mb, c) arrives at `time`; `base` is false for inputs
  // that come through a user kind's `before` rule and for a gate.
  void Arrive(int mb, int c, double time, bool base) {
    const int32_t task = Task(mb, c);
    if (time > ready_time_[task]) ready_time_[task] = time;
    if (base) {
      if (time > base_time_[task]) base_time_[task] = time;
      if (--base_remaining_[task] == 0) OpenGates(mb, c);
    }
    if (--remaining_[task] == 0) Push(ready_time_[task], cell_rank_[c], task);
  }

  // Task (mb, c) has every input but those of `before` rules: the user kinds
  // that precede it may now run ("just in time").
  void OpenGates(int mb, int c) {
    const int first = c - cell_slot_[c];
    const double time = base_time_[Task(mb, c)];
    for (int g = gate_begin_[c]; g < gate_begin_[c + 1]; ++g) {
      const int u = first + gate_slots_[g];
      if (flags_[Task(mb, u)] & kGateOpen) continue;
      flags_[Task(mb, u)] |= kGateOpen;
      Arrive(mb, u, time, false);
    }
  }

  // --- ready sets: one bit per microbatch and cell --------------------------
  //
  // Among the ready tasks of one cell the lowest microbatch always ranks
  // first: both traversals order a cell's tasks by microbatch, and every
  // limit treats a cell's ready tasks alike (a ready forward's microbatch is
  // new to the rank exactly when the cell's stage is the rank's first, since
  // it has passed every earlier stage). So a rank decides by looking at one
  // task per cell it owns: O(stages x slots) per decision, however many
  // forwards are ready.

  void MarkReady(int32_t task) {
    flags_[task] |= kReady;
    const int c = task % stride_;
    if (pinned_full_[cell_rank_[c]] || (flags_[task] & kStarted)) return;
    const int mb = task / stride_;
    bits_[static_cast<size_t>(c) * words_ + mb / 64] |= uint64_t{1} << (mb % 64);
    first_word_[c] = std::min(first_word_[c], mb / 64);
    ++ready_count_[c];
  }

  void Unmark(int mb, int c) {
    uint64_t& word = bits_[static_cast<size_t>(c) * words_ + mb / 64];
    const uint64_t bit = uint64_t{1} << (mb % 64);
    if (word & bit) {
      word &= ~bit;
      --ready_count_[c];
    }
  }

  // The lowest ready microbatch of cell c, or -1.
  int FirstReady(int c) {
    if (ready_count_[c] == 0) return -1;
    const uint64_t* words = &bits_[static_cast<size_t>(c) * words_];
    int w = first_word_[c];
    while (words[w] == 0) ++w;
    first_word_[c] = w;
    return w * 64 + __builtin_ctzll(words[w]);
  }

  // Policy order: smaller is better. Kind priority, then the traversal,
  // then the microbatch; W jumps ahead when too many are pending.
  struct Key {
    uint64_t hi = ~uint64_t{0}, lo = ~uint64_t{0};
    bool operator<(const Key& o) const { return hi != o.hi ? hi < o.hi : lo < o.lo; }
  };

  Key KeyOf(RankId r, int c, int mb) const {
    const int slot = cell_slot_[c];
    const uint64_t stage = cell_stage_[c];
    // The W limit bounds memory while forwards still allocate; once the
    // rank's last forward has started, W's follow the kind priority and
    // fill the cooldown's gaps behind the I's on the critical path.
    const bool w_due =
        slot == kSlotW && forwards_left_[r] > 0 && pending_w_[r] > plan_.limits[r].max_deferred_w;
    const uint64_t kind_rank = w_due ? 0 : static_cast<uint64_t>(plan_.slot_priority[slot]) + 1;
    // Depth-first prefers the later stage for forwards (the microbatch moves
    // on) and the earlier one for backwards; breadth-first the reverse, and
    // it runs group after group, so the group index comes first.
    const uint64_t later_first = static_cast<uint64_t>(S_ - 1) - stage;
    const uint64_t umb = static_cast<uint64_t>(mb);
    if (plan_.traversal == Traversal::kDepthFirst) {
      return {kind_rank << 32 | umb, ForwardLike(slot) ? later_first : stage};
    }
    const uint64_t group = umb / static_cast<uint64_t>(plan_.limits[r].group);
    return {kind_rank << 32 | group, (ForwardLike(slot) ? stage : later_first) << 32 | umb};
  }

  enum class Hold { kNone, kWarmup, kCap };

  // Whether the policy may start task (mb, c) on rank r now. The cap admits
  // a microbatch to a rank whole: its first forward there reserves the
  // memory of all the rank's stages for it, so a rank never fills its cap
  // with first halves of microbatches whose second halves then cannot start
  // (a V-shape rank with a cap of 1 would deadlock that way).
  Hold HeldBy(RankId r, int c, int mb) const {
    const int slot = cell_slot_[c];
    double need = 0;
    if (slot == kSlotF) {
      if (forwards_waiting_[r] >= plan_.limits[r].max_forwards_waiting) return Hold::kWarmup;
      if (admitted_[static_cast<size_t>(r) * m_ + mb] == 0) need = share_[r];
    } else if (slot >= kFirstUserSlot) {
      need = delta_[c];
    }
    if (need > 0) {
      const double cap = plan_.limits[r].cap;
      if (reserved_[r] + need > cap + 1e-9 * std::max(1.0, cap)) return Hold::kCap;
    }
    return Hold::kNone;
  }

  void TryStart(RankId r, double now) {
    if (pin_pos_[r] < pinned_tasks_[r].size()) {
      const int32_t task = pinned_tasks_[r][pin_pos_[r]];
      if (!(flags_[task] & kReady)) return;
      ++pin_pos_[r];
      Start(r, task / stride_, task % stride_, now);
      return;
    }
    if (pinned_full_[r]) return;
    int best_c = -1, best_mb = -1;
    Key best_key;
    for (int i = rank_cells_begin_[r]; i < rank_cells_begin_[r + 1]; ++i) {
      const int c = rank_cells_[i];
      const int mb = FirstReady(c);
      if (mb < 0 || HeldBy(r, c, mb) != Hold::kNone) continue;
      const Key key = KeyOf(r, c, mb);
      if (key < best_key) {
        best_key = key;
        best_c = c;
        best_mb = mb;
      }
    }
    if (best_c >= 0) Start(r, best_mb, best_c, now);
  }

  void Start(RankId r, int mb, int c, double now) {
    const int32_t task = Task(mb, c);
    flags_[task] |= kStarted;
    Unmark(mb, c);  // a pinned prefix may start a task the policy saw ready
    const int slot = cell_slot_[c];
    const int stage = cell_stage_[c];
    schedule_.programs[r].push_back(Action{stage, mb, slot_kind_[slot]});
    if (slot == kSlotF) {
      --forwards_left_[r];
      ++forwards_waiting_[r];
      if (admitted_[static_cast<size_t>(r) * m_ + mb]++ == 0) reserved_[r] += share_[r];
    } else if (slot == kSlotBackward) {
      --forwards_waiting_[r];
      if (plan_.split_backward) ++pending_w_[r];
    } else if (slot == kSlotW) {
      --pending_w_[r];
    }
    if (slot != kSlotF) reserved_[r] += delta_[c];  // a forward's memory was reserved on admission
    const double end = now + duration_[c];
    free_at_[r] = end;
    Push(end, r, -1);
    for (int e = edge_begin_[c]; e < edge_begin_[c + 1]; ++e) {
      const Edge& edge = edges_[e];
      Arrive(mb, Cell(stage + edge.stage_offset, edge.consumer_slot), end + edge.delay, !edge.before_rule);
    }
    ++emitted_;
    ++emitted_by_[r];
  }

  // --- diagnosis of a program that cannot finish ---------------------------

  std::string Name(int mb, int c) const {
    return schedule_.ActionName(Action{cell_stage_[c], mb, slot_kind_[cell_slot_[c]]});
  }

  // The first input task (mb, c) still lacks, or -1 (its gate, or none).
  int UnmetProducer(int mb, int c) const {
    const int stage = cell_stage_[c];
    for (int ps = std::max(0, stage - 1); ps <= std::min(S_ - 1, stage + 1); ++ps) {
      for (int pslot = 0; pslot < ns_; ++pslot) {
        const int pc = Cell(ps, pslot);
        for (int e = edge_begin_[pc]; e < edge_begin_[pc + 1]; ++e) {
          if (ps + edges_[e].stage_offset != stage || edges_[e].consumer_slot != cell_slot_[c]) continue;
          if (!(flags_[Task(mb, pc)] & kStarted)) return pc;
        }
      }
    }
    return -1;
  }

  // What task (mb, c), not ready, waits for: the chain of inputs that have
  // not run, up to one that is pinned later, held back, or on another rank.
  std::string WaitReason(int mb, int c) const {
    std::string why;
    const RankId r = cell_rank_[c];
    for (int depth = 0; depth < 8; ++depth) {
      const int pc = UnmetProducer(mb, c);
      if (pc < 0) {
        if (gated_[c] && !(flags_[Task(mb, c)] & kGateOpen)) why += "an action it is 'before' to have its other inputs";
        return why;
      }
      const RankId q = cell_rank_[pc];
      why += Name(mb, pc) + " (rank " + std::to_string(q) + ")";
      const int32_t producer = Task(mb, pc);
      const auto& pins = pinned_tasks_[q];
      if (std::find(pins.begin() + static_cast<std::ptrdiff_t>(pin_pos_[q]), pins.end(), producer) != pins.end()) {
        why += ", which comes later in rank " + std::to_string(q) + "'s pinned sequence";
        if (q == r) why += " (move it earlier)";
        return why;
      }
      if (flags_[producer] & kReady) return why + ", ready but held back";
      if (q != r) return why;  // that rank's own line says why
      why += ", which waits for ";
      c = pc;
    }
    return why + "...";
  }

  std::string HoldReason(RankId r, int c, Hold hold) const {
    const RankLimits& lim = plan_.limits[r];
    if (hold == Hold::kWarmup) {
      return "the warm-up lets " + std::to_string(lim.max_forwards_waiting) +
             " forwards wait for their backward and " + std::to_string(forwards_waiting_[r]) +
             " wait (raise the warm-up)";
    }
    const std::string unit = plan_.cap_in_bytes ? " bytes" : " microbatches";
    const double need = cell_slot_[c] == kSlotF ? share_[r] : delta_[c];
    return "the memory cap allows " + Num(lim.cap) + unit + ", the rank holds or has reserved " + Num(reserved_[r]) +
           " and it needs " + Num(need) + " more (raise the cap)";
  }

  Status Diagnose() {
    std::string msg = plan_.source + ": the program cannot finish: " + std::to_string(total_ - emitted_) + " of " +
                      std::to_string(total_) + " actions never became runnable (deadlock)";
    for (RankId r = 0; r < p_; ++r) {
      if (emitted_by_[r] == owned_[r]) continue;
      msg += "\n  rank " + std::to_string(r) + " (" + std::to_string(owned_[r] - emitted_by_[r]) + " left): ";
      if (pin_pos_[r] < pinned_tasks_[r].size()) {
        const int32_t task = pinned_tasks_[r][pin_pos_[r]];
        msg += "pinned action " + std::to_string(pin_pos_[r] + 1) + ", " + Name(task / stride_, task % stride_) +
               ", waits for " + WaitReason(task / stride_, task % stride_);
        continue;
      }
      // The best task the limits hold back, else the best one not ready.
      int held_c = -1, held_mb = -1, wait_c = -1, wait_mb = -1;
      Key held_key, wait_key;
      for (int i = rank_cells_begin_[r]; i < rank_cells_begin_[r + 1]; ++i) {
        const int c = rank_cells_[i];
        const int mb = FirstReady(c);
        if (mb >= 0 && KeyOf(r, c, mb) < held_key) {
          held_key = KeyOf(r, c, mb);
          held_c = c;
          held_mb = mb;
        }
        for (int k = 0; k < m_; ++k) {
          if (!(flags_[Task(k, c)] & (kStarted | kReady)) && KeyOf(r, c, k) < wait_key) {
            wait_key = KeyOf(r, c, k);
            wait_c = c;
            wait_mb = k;
          }
        }
      }
      if (held_c >= 0) {
        msg += Name(held_mb, held_c) + " is ready but " + HoldReason(r, held_c, HeldBy(r, held_c, held_mb));
      } else if (wait_c >= 0) {
        msg += Name(wait_mb, wait_c) + " waits for " + WaitReason(wait_mb, wait_c);
      }
    }
    return Status::Deadlock(msg);
  }

  const CompilePlan& plan_;
  const CostModel& costs_;
  Schedule& schedule_;

  int p_ = 0, S_ = 0, m_ = 0;
  int ns_ = 0;      // slots per cell
  int stride_ = 0;  // cells: S_ * ns_
  int words_ = 0;   // 64-bit words per cell's ready set

  // Per slot and per cell.
  std::vector<ActionKind> slot_kind_;
  std::vector<char> present_;
  std::vector<int> cell_stage_, cell_slot_;
  std::vector<RankId> cell_rank_;
  std::vector<int> deps_, base_deps_;
  std::vector<char> gated_;
  std::vector<int> edge_begin_;
  std::vector<Edge> edges_;
  std::vector<int> gate_begin_, gate_slots_;
  std::vector<double> duration_, delta_;
  std::vector<int> rank_cells_begin_, rank_cells_;

  // Per task.
  std::vector<int32_t> remaining_, base_remaining_;
  std::vector<double> ready_time_, base_time_;
  std::vector<uint8_t> flags_;

  // Ready sets, per cell.
  std::vector<uint64_t> bits_;
  std::vector<int> first_word_, ready_count_;

  // Per rank.
  std::vector<double> free_at_;
  // Memory held plus the forwards still to come of admitted microbatches.
  std::vector<double> reserved_;
  std::vector<double> share_;          // one microbatch's forwards on the rank
  std::vector<int32_t> admitted_;      // [rank * m + mb]: forwards of mb started on rank
  std::vector<int64_t> forwards_waiting_, pending_w_, forwards_left_;
  std::vector<char> woken_, pinned_full_;
  std::vector<size_t> owned_, emitted_by_;
  std::vector<size_t> pin_pos_;
  std::vector<std::vector<int32_t>> pinned_tasks_;

  std::vector<Event> heap_;
  size_t total_ = 0, emitted_ = 0;
};

}  // namespace

Status RunListCompiler(const CompilePlan& plan, const CostModel& costs, Schedule& schedule) {
  PW_CHECK(static_cast<int>(plan.limits.size()) == schedule.num_ranks() &&
               static_cast<int>(plan.pinned.size()) == schedule.num_ranks(),
           "CompilePlan sized for another shape");
  Engine engine(plan, costs, schedule);
  return engine.Run();
}

}  // namespace pw::dsl::internal

// Tests of the built-in generators that need no simulator: coverage (every
// (stage, microbatch) has its F and its backward exactly once, on the rank
// that owns the stage), local order, placements, exact small programs, and
// the errors for parameters a family does not allow. Timing and memory
// properties live in sim/closed_form_test.cc.
#include "schedule/generators.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace pw {
namespace {

GeneratorOptions Opts(int p, int m, int chunks = 0) {
  GeneratorOptions o;
  o.num_ranks = p;
  o.num_microbatches = m;
  o.chunks = chunks;
  return o;
}

// Whether `family` accepts (p, m) with its default chunks, by the documented rules.
bool Allowed(const std::string& family, int p, int m) {
  if (family == "interleaved-1f1b") return m % p == 0;
  if (family == "dualpipe-v") return m >= 2 * p;
  return true;
}

std::string ProgramText(const Schedule& s, RankId r) {
  std::string out;
  for (const Action& a : s.programs[r]) {
    if (!out.empty()) out += ' ';
    out += s.ActionName(a);
  }
  return out;
}

// Checks coverage and local order; returns "" or a description of the first problem.
std::string CheckCoverage(const Schedule& s) {
  const int m = s.num_microbatches;
  const int stages = s.num_stages();
  // Per (stage, mb): counts of F, B, I, W and the program index of F and I.
  struct Cell {
    int f = 0, b = 0, i = 0, w = 0;
    size_t f_at = 0, i_at = 0;
  };
  std::vector<Cell> cells(static_cast<size_t>(stages) * m);
  const bool split = s.UsesSplitBackward();
  for (RankId r = 0; r < s.num_ranks(); ++r) {
    const Program& prog = s.programs[r];
    for (size_t k = 0; k < prog.size(); ++k) {
      const Action& a = prog[k];
      const std::string where = "rank " + std::to_string(r) + " position " + std::to_string(k) + ": ";
      if (a.stage < 0 || a.stage >= stages) return where + "stage out of range";
      if (a.microbatch < 0 || a.microbatch >= m) return where + "microbatch out of range";
      if (s.placement.RankOf(a.stage) != r) return where + s.ActionName(a) + " is not on its owning rank";
      Cell& c = cells[static_cast<size_t>(a.stage) * m + a.microbatch];
      switch (a.kind) {
        case ActionKind::kForward: ++c.f; c.f_at = k; break;
        case ActionKind::kBackward:
          if (split) return where + "B in a split-backward schedule";
          if (c.f == 0) return where + s.ActionName(a) + " before its F";
          ++c.b;
          break;
        case ActionKind::kBackwardInput:
          if (c.f == 0) return where + s.ActionName(a) + " before its F";
          ++c.i;
          c.i_at = k;
          break;
        case ActionKind::kBackwardWeight:
          if (c.i == 0) return where + s.ActionName(a) + " before its I";
          ++c.w;
          break;
        default: return where + "not a compute action: " + s.ActionName(a);
      }
    }
  }
  for (StageId st = 0; st < stages; ++st) {
    for (MicrobatchId mb = 0; mb < m; ++mb) {
      const Cell& c = cells[static_cast<size_t>(st) * m + mb];
      const std::string at = "(stage " + std::to_string(st) + ", mb " + std::to_string(mb) + "): ";
      if (c.f != 1) return at + "F appears " + std::to_string(c.f) + " times";
      if (split ? (c.i != 1 || c.w != 1 || c.b != 0) : (c.b != 1)) {
        return at + "backward counts B=" + std::to_string(c.b) + " I=" + std::to_string(c.i) +
               " W=" + std::to_string(c.w);
      }
    }
  }
  return "";
}

TEST(Generators, NamesAndFamiliesAgree) {
  const std::vector<std::string> names = BuiltinScheduleNames();
  const std::vector<std::string> want = {"gpipe", "1f1b",  "interleaved-1f1b", "looped-bfs",
                                         "zb-h1", "zb-h2", "zb-v",             "dualpipe-v"};
  EXPECT_EQ(names, want);
  ASSERT_EQ(BuiltinScheduleFamilies().size(), want.size());
  for (const ScheduleFamily& f : BuiltinScheduleFamilies()) {
    EXPECT_FALSE(f.description.empty()) << f.name;
    Result<Schedule> s = GenerateSchedule(f.name, Opts(4, 8));
    ASSERT_TRUE(s.ok()) << f.name << ": " << s.status().ToString();
    EXPECT_EQ(s->name, f.name);
    EXPECT_EQ(s->num_stages(), 4 * f.default_chunks) << f.name;
    Result<Schedule> direct = f.generate(Opts(4, 8));
    ASSERT_TRUE(direct.ok());
    EXPECT_EQ(*s, *direct) << f.name;
  }
}

TEST(Generators, EveryFamilyCoversEveryStageAndMicrobatchOnce) {
  for (const std::string& family : BuiltinScheduleNames()) {
    for (int p : {1, 2, 3, 4, 8}) {
      for (int m = 1; m <= 3 * p; ++m) {
        Result<Schedule> s = GenerateSchedule(family, Opts(p, m));
        if (!Allowed(family, p, m)) {
          EXPECT_FALSE(s.ok()) << family << " p=" << p << " m=" << m;
          continue;
        }
        ASSERT_TRUE(s.ok()) << family << " p=" << p << " m=" << m << ": " << s.status().ToString();
        EXPECT_EQ(s->num_ranks(), p);
        EXPECT_EQ(s->num_microbatches, m);
        EXPECT_EQ(CheckCoverage(*s), "") << family << " p=" << p << " m=" << m;
      }
    }
  }
}

TEST(Generators, InterleavedFamiliesCoverWithSeveralChunks) {
  for (const char* family : {"interleaved-1f1b", "looped-bfs"}) {
    for (int v : {1, 2, 3, 4}) {
      for (int p : {1, 2, 3, 4}) {
        for (int m = p; m <= 3 * p; m += p) {
          Result<Schedule> s = GenerateSchedule(family, Opts(p, m, v));
          ASSERT_TRUE(s.ok()) << family << " v=" << v << ": " << s.status().ToString();
          EXPECT_EQ(s->num_stages(), v * p);
          EXPECT_EQ(CheckCoverage(*s), "") << family << " p=" << p << " m=" << m << " v=" << v;
        }
      }
    }
  }
}

TEST(Generators, PlacementsAndBackwardKinds) {
  struct Want {
    const char* family;
    const char* placement;
    bool split;
  };
  for (const Want& w : {Want{"gpipe", "sequential", false}, Want{"1f1b", "sequential", false},
                        Want{"interleaved-1f1b", "interleaved", false}, Want{"looped-bfs", "interleaved", false},
                        Want{"zb-h1", "sequential", true}, Want{"zb-h2", "sequential", true},
                        Want{"zb-v", "v-shape", true}, Want{"dualpipe-v", "v-shape", true}}) {
    Result<Schedule> s = GenerateSchedule(w.family, Opts(4, 8));
    ASSERT_TRUE(s.ok()) << w.family;
    EXPECT_EQ(s->placement.Describe(), w.placement) << w.family;
    EXPECT_EQ(s->UsesSplitBackward(), w.split) << w.family;
  }
}

TEST(Generators, NamesAreForgiving) {
  for (const char* alias : {"ZB-V", "zbv", "zb_v", "ZBVZeroBubble"}) {
    Result<Schedule> s = GenerateSchedule(alias, Opts(2, 4));
    ASSERT_TRUE(s.ok()) << alias;
    EXPECT_EQ(s->name, "zb-v");
  }
  EXPECT_EQ(GenerateSchedule("Interleaved1F1B", Opts(2, 4))->name, "interleaved-1f1b");
  EXPECT_EQ(GenerateSchedule("LoopedBFS", Opts(2, 4))->name, "looped-bfs");
  EXPECT_EQ(GenerateSchedule("DualPipeV", Opts(2, 4))->name, "dualpipe-v");
  EXPECT_EQ(GenerateSchedule("GPipe", Opts(2, 4))->name, "gpipe");
}

TEST(Generators, GenerationIsDeterministic) {
  for (const std::string& family : BuiltinScheduleNames()) {
    Result<Schedule> a = GenerateSchedule(family, Opts(5, 10));
    Result<Schedule> b = GenerateSchedule(family, Opts(5, 10));
    ASSERT_TRUE(a.ok() && b.ok()) << family;
    EXPECT_EQ(*a, *b) << family;
  }
}

// --- exact programs of small cases, derived by hand from each family's rule ---

TEST(Generators, GPipeProgram) {
  Result<Schedule> s = GenerateGPipe(Opts(2, 3));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(ProgramText(*s, 0), "0F0 0F1 0F2 0B0 0B1 0B2");
  EXPECT_EQ(ProgramText(*s, 1), "1F0 1F1 1F2 1B0 1B1 1B2");
}

TEST(Generators, OneFOneBProgram) {
  Result<Schedule> s = Generate1F1B(Opts(4, 6));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(ProgramText(*s, 0), "0F0 0F1 0F2 0F3 0B0 0F4 0B1 0F5 0B2 0B3 0B4 0B5");
  EXPECT_EQ(ProgramText(*s, 2), "2F0 2F1 2B0 2F2 2B1 2F3 2B2 2F4 2B3 2F5 2B4 2B5");
  EXPECT_EQ(ProgramText(*s, 3), "3F0 3B0 3F1 3B1 3F2 3B2 3F3 3B3 3F4 3B4 3F5 3B5");
  // Fewer microbatches than warmup slots: all forwards, then all backwards.
  Result<Schedule> few = Generate1F1B(Opts(4, 2));
  ASSERT_TRUE(few.ok());
  EXPECT_EQ(ProgramText(*few, 0), "0F0 0F1 0B0 0B1");
}

TEST(Generators, Interleaved1F1BProgram) {
  Result<Schedule> s = GenerateInterleaved1F1B(Opts(2, 4, 2));
  ASSERT_TRUE(s.ok());
  // Rank 0 warms up with (v-1)p + 2(p-1) = 4 forwards; microbatches move
  // through the chunks p at a time; backwards visit the chunks in reverse.
  EXPECT_EQ(ProgramText(*s, 0), "0F0 0F1 2F0 2F1 0F2 2B0 0F3 2B1 2F2 0B0 2F3 0B1 2B2 2B3 0B2 0B3");
  EXPECT_EQ(ProgramText(*s, 1), "1F0 1F1 3F0 3B0 3F1 3B1 1F2 1B0 1F3 1B1 3F2 3B2 3F3 3B3 1B2 1B3");
}

TEST(Generators, LoopedBfsProgram) {
  Result<Schedule> s = GenerateLoopedBfs(Opts(2, 2, 2));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(ProgramText(*s, 0), "0F0 0F1 2F0 2F1 2B1 2B0 0B1 0B0");
  EXPECT_EQ(ProgramText(*s, 1), "1F0 1F1 3F0 3F1 3B1 3B0 1B1 1B0");
}

TEST(Generators, ZbH1Program) {
  Result<Schedule> s = GenerateZbH1(Opts(3, 4));
  ASSERT_TRUE(s.ok());
  // Rank r emits W's from its r-th steady op on (PyTorch's num_1f1b_microbatches = rank).
  EXPECT_EQ(ProgramText(*s, 0), "0F0 0F1 0F2 0I0 0W0 0F3 0I1 0W1 0I2 0W2 0I3 0W3");
  EXPECT_EQ(ProgramText(*s, 1), "1F0 1F1 1I0 1F2 1I1 1W0 1F3 1I2 1W1 1I3 1W2 1W3");
  EXPECT_EQ(ProgramText(*s, 2), "2F0 2I0 2F1 2I1 2F2 2I2 2W0 2F3 2I3 2W1 2W2 2W3");
}

TEST(Generators, ZbH2Program) {
  Result<Schedule> s = GenerateZbH2(Opts(4, 8));
  ASSERT_TRUE(s.ok());
  // Rank 0 runs 2p-1 = 7 warmup forwards, the last rank one; the last rank
  // defers its W's to the tail.
  EXPECT_EQ(ProgramText(*s, 0),
            "0F0 0F1 0F2 0F3 0F4 0F5 0F6 0I0 0W0 0I1 0F7 0I2 0W1 0I3 0W2 0I4 0W3 0I5 0W4 0I6 0W5 0W6 0I7 0W7");
  EXPECT_EQ(ProgramText(*s, 3),
            "3F0 3I0 3F1 3I1 3F2 3I2 3F3 3I3 3F4 3I4 3F5 3I5 3F6 3I6 3W0 3F7 3I7 3W1 3W2 3W3 3W4 3W5 3W6 3W7");
}

TEST(Generators, ZbVProgram) {
  Result<Schedule> s = GenerateZbV(Opts(2, 3));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(ProgramText(*s, 0), "0F0 0F1 0F2 3F0 3I0 3W0 3F1 3I1 3W1 0I0 0W0 3F2 3I2 3W2 0I1 0W1 0I2 0W2");
  EXPECT_EQ(ProgramText(*s, 1), "1F0 2F0 1F1 2F1 2I0 2W0 1F2 1I0 1W0 2F2 2I1 2W1 1I1 2I2 1I2 1W1 2W2 1W2");
}

TEST(Generators, DualPipeVProgram) {
  Result<Schedule> s = GenerateDualPipeV(Opts(2, 4));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(ProgramText(*s, 0),
            "0F0 0F1 0F2 3F0 3I0 3W0 3F1 0F3 3I1 3W1 3F2 0I0 0W0 3I2 3W2 3F3 0I1 0W1 3I3 3W3 0I2 0W2 0I3 0W3");
  EXPECT_EQ(ProgramText(*s, 1),
            "1F0 2F0 1F1 2F1 1F2 2I0 2W0 2F2 1I0 1W0 1F3 2I1 2W1 2F3 1I1 1W1 2I2 2W2 1I2 1W2 2I3 1I3 2W3 1W3");
}

// --- errors ---

void ExpectError(const Result<Schedule>& r, StatusCode code, const std::vector<std::string>& parts) {
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), code) << r.status().ToString();
  for (const std::string& part : parts) {
    EXPECT_NE(r.status().message().find(part), std::string::npos)
        << "'" << part << "' not in: " << r.status().message();
  }
}

TEST(GeneratorErrors, RanksAndMicrobatchesMustBePositive) {
  for (const std::string& family : BuiltinScheduleNames()) {
    ExpectError(GenerateSchedule(family, Opts(0, 4)), StatusCode::kInvalidArgument,
                {family, "at least 1 rank", "--ranks 0"});
    ExpectError(GenerateSchedule(family, Opts(-3, 4)), StatusCode::kInvalidArgument, {"--ranks -3"});
    ExpectError(GenerateSchedule(family, Opts(2, 0)), StatusCode::kInvalidArgument,
                {family, "at least 1 microbatch", "--microbatches 0"});
    ExpectError(GenerateSchedule(family, Opts(2, -1)), StatusCode::kInvalidArgument, {"--microbatches -1"});
  }
}

TEST(GeneratorErrors, InterleavedNeedsMultipleOfRanks) {
  ExpectError(GenerateSchedule("interleaved-1f1b", Opts(4, 6)), StatusCode::kFailedPrecondition,
              {"number of microbatches (6)", "multiple of the number of ranks (4)", "try --microbatches 8"});
  ExpectError(GenerateSchedule("interleaved-1f1b", Opts(4, 3)), StatusCode::kFailedPrecondition,
              {"try --microbatches 4"});
}

TEST(GeneratorErrors, ChunksMustFitTheFamily) {
  ExpectError(GenerateSchedule("zb-v", Opts(4, 8, 3)), StatusCode::kInvalidArgument,
              {"zb-v needs two stages per rank (--chunks 2)", "--chunks 3"});
  ExpectError(GenerateSchedule("dualpipe-v", Opts(4, 8, 1)), StatusCode::kInvalidArgument,
              {"dualpipe-v needs two stages per rank (--chunks 2)"});
  for (const char* family : {"gpipe", "1f1b", "zb-h1", "zb-h2"}) {
    ExpectError(GenerateSchedule(family, Opts(4, 8, 2)), StatusCode::kInvalidArgument,
                {family, "one stage per rank", "--chunks must be 1 (got 2)", "interleaved-1f1b"});
    EXPECT_TRUE(GenerateSchedule(family, Opts(4, 8, 1)).ok()) << family;
  }
  ExpectError(GenerateSchedule("interleaved-1f1b", Opts(4, 8, -1)), StatusCode::kInvalidArgument,
              {"at least 1 stage per rank", "--chunks -1"});
  ExpectError(GenerateSchedule("looped-bfs", Opts(4, 8, -2)), StatusCode::kInvalidArgument, {"--chunks -2"});
}

TEST(GeneratorErrors, DualPipeVNeedsTwiceTheRanksInMicrobatches) {
  ExpectError(GenerateSchedule("dualpipe-v", Opts(4, 7)), StatusCode::kFailedPrecondition,
              {"at least twice as many microbatches as ranks (8", "got 7", "try --microbatches 8"});
  EXPECT_TRUE(GenerateSchedule("dualpipe-v", Opts(4, 8)).ok());
}

TEST(GeneratorErrors, UnknownFamilyListsTheKnownOnes) {
  ExpectError(GenerateSchedule("zb-h3", Opts(4, 8)), StatusCode::kNotFound,
              {"unknown schedule family 'zb-h3'", "gpipe", "1f1b", "dualpipe-v"});
  ExpectError(GenerateSchedule("", Opts(4, 8)), StatusCode::kNotFound, {"unknown schedule family"});
}

TEST(GeneratorErrors, HugeRequestsFailInsteadOfExhaustingMemory) {
  ExpectError(GenerateSchedule("1f1b", Opts(1 << 20, 1 << 20)), StatusCode::kInvalidArgument,
              {"limit", "fewer ranks"});
  ExpectError(GenerateSchedule("looped-bfs", Opts(1 << 16, 1 << 16, 1 << 16)), StatusCode::kInvalidArgument,
              {"limit"});
  ExpectError(GenerateSchedule("zb-h2", Opts(2147483647, 2147483647)), StatusCode::kInvalidArgument,
              {"limit"});
}

// --- scale ---

// At scale the IR is exact and tight. How fast it is generated (the aim:
// under a second) is measured by bench/sim_bench ("generate 1F1B" rows), not
// timed here: a timed unit test fails whenever the shared machine is busy.
TEST(GeneratorScale, OneFOneBWithSixteenMillionActionsIsExactAndTight) {
  Result<Schedule> s = Generate1F1B(Opts(1024, 8192));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->NumActions(), size_t{2} * 1024 * 8192);
  for (const Program& prog : s->programs) EXPECT_EQ(prog.capacity(), prog.size());
}

TEST(GeneratorScale, ManyRanksWithFewMicrobatchesStayLinear) {
  // Many ranks and few microbatches would cost O(ranks^2): zb-h2's list
  // scheduler must skip idle ranks rather than visit every rank every round,
  // and zb-v must not walk its padding to 2p-1 microbatches. Quadratic
  // versions take minutes here; linear ones milliseconds.
  Result<Schedule> s = GenerateZbH2(Opts(65536, 2));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->NumActions(), size_t{3} * 65536 * 2);
  Result<Schedule> v = GenerateZbV(Opts(65536, 1));
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->NumActions(), size_t{6} * 65536);
  Result<Schedule> big = GenerateZbH2(Opts(256, 2048));
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(CheckCoverage(*big), "");
}

}  // namespace
}  // namespace pw

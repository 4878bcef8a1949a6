// Simulates the built-in schedules (schedule/generators.h) under uniform
// costs without communication and checks the published closed forms: GPipe
// and 1F1B makespans, interleaved 1F1B's reduced bubble, 1F1B's peak memory,
// ZB-H1's third-of-a-bubble at 1F1B's memory, and that ZB-H2, ZB-V and
// DualPipe-V are never slower than ZB-H1. Also: no family deadlocks.
// docs/schedules.md states the same properties with their preconditions.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "schedule/generators.h"
#include "sim/simulator.h"

namespace pw {
namespace {

constexpr double kEps = 1e-9;

Schedule Gen(const std::string& family, int p, int m, int chunks = 0) {
  GeneratorOptions o;
  o.num_ranks = p;
  o.num_microbatches = m;
  o.chunks = chunks;
  Result<Schedule> s = GenerateSchedule(family, o);
  EXPECT_TRUE(s.ok()) << family << " p=" << p << " m=" << m << ": " << s.status().ToString();
  return s.ok() ? std::move(s).value() : Schedule{};
}

// Uniform per-stage costs. A negative time leaves that field unset.
struct Uniform {
  double f = 1, b = -1, i = -1, w = -1;
  double activation = 1;     // bytes one microbatch holds on one stage
  double freed_by_input = 0;  // by default activations stay until W
};

SimResult Sim(const Schedule& s, const Uniform& u) {
  CostModel costs;
  StageCost& c = costs.stages[0];
  c.forward = u.f;
  if (u.b >= 0) c.backward = u.b;
  if (u.i >= 0) c.backward_input = u.i;
  if (u.w >= 0) c.backward_weight = u.w;
  c.activation_bytes = u.activation;
  c.freed_by_input = u.freed_by_input;
  Status st = costs.Resolve(s);
  EXPECT_TRUE(st.ok()) << st.ToString();
  SimOptions options;
  options.record_spans = true;
  Result<SimResult> r = Simulate(s, costs, options);
  EXPECT_TRUE(r.ok()) << s.name << ": " << r.status().ToString();
  return r.ok() ? std::move(r).value() : SimResult{};
}

// Split-backward costs (F, I, W) for a whole stage, divided over `chunks`
// stages per rank so that a rank's work per microbatch stays F + I + W.
Uniform Split(double f, double i, double w, int chunks = 1) {
  Uniform u;
  u.f = f / chunks;
  u.i = i / chunks;
  u.w = w / chunks;
  u.activation = 1.0 / chunks;
  return u;
}

struct Ratio {
  double f, i, w;
};
const std::vector<Ratio> kRatios = {{1, 1, 1}, {2, 3, 1}, {1, 2, 1}, {1, 1, 2}, {3, 1, 1}, {1, 3, 2}};

std::string Where(const std::string& family, int p, int m, const Ratio& r) {
  return family + " p=" + std::to_string(p) + " m=" + std::to_string(m) + " F=" + std::to_string(r.f) +
         " I=" + std::to_string(r.i) + " W=" + std::to_string(r.w);
}

double MaxPeak(const SimResult& r) {
  double peak = 0;
  for (const RankSimResult& rank : r.ranks) peak = std::max(peak, rank.peak_memory);
  return peak;
}

// Each rank's active window: first start, last end, and idle time inside it.
struct Window {
  double start = 0, end = 0, idle = 0;
};
std::vector<Window> Windows(const SimResult& r) {
  std::vector<Window> out;
  for (size_t k = 0; k < r.spans.size(); ++k) {
    const auto& spans = r.spans[k];
    Window w;
    if (!spans.empty()) {
      w.start = spans.front().start;
      w.end = spans.back().end;
      w.idle = (w.end - w.start) - r.ranks[k].busy;
    }
    out.push_back(w);
  }
  return out;
}

TEST(ClosedForm, GPipeAnd1F1BMakespan) {
  for (const char* family : {"gpipe", "1f1b"}) {
    for (auto [f, b] : std::vector<std::pair<double, double>>{{1, 2}, {1, 1}, {2, 3}, {3, 1}}) {
      for (int p = 1; p <= 8; ++p) {
        for (int m = 1; m <= 3 * p; ++m) {
          Uniform u;
          u.f = f;
          u.b = b;
          const SimResult r = Sim(Gen(family, p, m), u);
          EXPECT_NEAR(r.makespan, (m + p - 1) * (f + b), kEps)
              << family << " p=" << p << " m=" << m << " F=" << f << " B=" << b;
        }
      }
    }
  }
}

TEST(ClosedForm, InterleavedShrinksTheBubbleByTheChunkCount) {
  // With v chunks per rank costing F/v and B/v each, Megatron's interleaved
  // schedule takes m(F+B) + (p-1)(F+B)/v whenever m is a multiple of p (its
  // precondition), for any ratio of F to B.
  for (auto [f, b] : std::vector<std::pair<double, double>>{{1, 2}, {1, 1}, {2, 3}, {3, 1}}) {
    for (int v = 1; v <= 4; ++v) {
      for (int p = 1; p <= 8; ++p) {
        for (int m = p; m <= 4 * p; m += p) {
          Uniform u;
          u.f = f / v;
          u.b = b / v;
          const SimResult r = Sim(Gen("interleaved-1f1b", p, m, v), u);
          EXPECT_NEAR(r.makespan, m * (f + b) + (p - 1) * (f + b) / v, 1e-7)
              << "p=" << p << " m=" << m << " v=" << v << " F=" << f << " B=" << b;
        }
        // Looped BFS reaches the same makespan for every m >= p (at the
        // price of holding all m microbatches, see below).
        for (int m = p; m <= 3 * p; ++m) {
          Uniform u;
          u.f = f / v;
          u.b = b / v;
          const SimResult r = Sim(Gen("looped-bfs", p, m, v), u);
          EXPECT_NEAR(r.makespan, m * (f + b) + (p - 1) * (f + b) / v, 1e-7)
              << "looped-bfs p=" << p << " m=" << m << " v=" << v << " F=" << f << " B=" << b;
        }
      }
    }
  }
}

TEST(ClosedForm, OneFOneBAndGPipePeakActivations) {
  for (int p = 1; p <= 8; ++p) {
    for (int m = 1; m <= 3 * p; ++m) {
      Uniform u;
      u.b = 2;
      const SimResult one = Sim(Gen("1f1b", p, m), u);
      const SimResult gpipe = Sim(Gen("gpipe", p, m), u);
      for (int r = 0; r < p; ++r) {
        EXPECT_EQ(one.ranks[r].peak_memory, std::min(p - r, m)) << "1f1b p=" << p << " m=" << m << " r=" << r;
        EXPECT_EQ(gpipe.ranks[r].peak_memory, m) << "gpipe p=" << p << " m=" << m << " r=" << r;
      }
    }
  }
}

TEST(ClosedForm, InterleavedAndLoopedBfsPeakActivations) {
  // Interleaved: rank r holds its warmup forwards plus one, each 1/v of a
  // microbatch's activations on the rank: rank 0 holds p + (p-1)/v against
  // 1F1B's p. Looped BFS runs every forward first, so it holds all m.
  for (int v = 1; v <= 4; ++v) {
    for (int p = 1; p <= 8; ++p) {
      for (int m = p; m <= 3 * p; m += p) {
        Uniform u;
        u.f = 1.0 / v;
        u.b = 2.0 / v;
        u.activation = 1.0 / v;
        const SimResult inter = Sim(Gen("interleaved-1f1b", p, m, v), u);
        const SimResult bfs = Sim(Gen("looped-bfs", p, m, v), u);
        for (int r = 0; r < p; ++r) {
          const int warmup = std::min((v - 1) * p + 2 * (p - 1 - r), m * v);
          const double want = std::min(warmup + 1, m * v) / static_cast<double>(v);
          EXPECT_NEAR(inter.ranks[r].peak_memory, want, 1e-9) << "p=" << p << " m=" << m << " v=" << v << " r=" << r;
          EXPECT_NEAR(bfs.ranks[r].peak_memory, m, 1e-9) << "p=" << p << " m=" << m << " v=" << v << " r=" << r;
        }
        EXPECT_NEAR(inter.ranks[0].peak_memory, std::min(p + (p - 1.0) / v, static_cast<double>(m)), 1e-9);
      }
    }
  }
}

TEST(ClosedForm, ZbH1MakespanIsAThirdOf1F1BsBubble) {
  // m(F+I+W) + (p-1)(F+I-W) holds for m >= p when W <= min(F, I): the W's
  // that fill the tail must fit in the gaps the F and I chains leave.
  const std::vector<Ratio> ratios = {{1, 1, 1}, {2, 3, 1}, {1, 2, 1}, {3, 1, 1}, {2, 5, 1.5}, {4, 2, 2}};
  for (const Ratio& x : ratios) {
    for (int p = 1; p <= 8; ++p) {
      for (int m = p; m <= 4 * p; ++m) {
        const SimResult r = Sim(Gen("zb-h1", p, m), Split(x.f, x.i, x.w));
        EXPECT_NEAR(r.makespan, m * (x.f + x.i + x.w) + (p - 1) * (x.f + x.i - x.w), kEps)
            << Where("zb-h1", p, m, x);
      }
    }
  }
  // With F = I = W = 1 the bubble per rank is p-1, a third of 1F1B's 3(p-1) (F=1, B=2).
  for (int p = 2; p <= 8; ++p) {
    const int m = 2 * p;
    Uniform one;
    one.b = 2;
    const double bubble_1f1b = Sim(Gen("1f1b", p, m), one).makespan - 3 * m;
    const double bubble_h1 = Sim(Gen("zb-h1", p, m), Split(1, 1, 1)).makespan - 3 * m;
    EXPECT_NEAR(bubble_1f1b, 3 * (p - 1), kEps);
    EXPECT_NEAR(bubble_h1, bubble_1f1b / 3, kEps) << "p=" << p;
  }
}

TEST(ClosedForm, ZbH1KeepsOneFOneBsPeakMemory) {
  for (int p = 1; p <= 8; ++p) {
    for (int m = 1; m <= 3 * p; ++m) {
      Uniform fb;
      fb.b = 2;
      const SimResult one = Sim(Gen("1f1b", p, m), fb);
      // Activations held until W (freed_by_input = 0): every rank peaks at
      // min(p, m), which is 1F1B's peak (on rank 0) — later ranks hold more
      // than under 1F1B because they delay their W's.
      Uniform until_w = Split(1, 1, 1);
      const SimResult held = Sim(Gen("zb-h1", p, m), until_w);
      // Activations freed by I (freed_by_input = 1): the same per-rank peak as 1F1B.
      Uniform until_i = Split(1, 1, 1);
      until_i.freed_by_input = 1;
      const SimResult freed = Sim(Gen("zb-h1", p, m), until_i);
      EXPECT_EQ(MaxPeak(held), MaxPeak(one)) << "p=" << p << " m=" << m;
      for (int r = 0; r < p; ++r) {
        EXPECT_EQ(held.ranks[r].peak_memory, std::min(p, m)) << "p=" << p << " m=" << m << " r=" << r;
        EXPECT_EQ(freed.ranks[r].peak_memory, one.ranks[r].peak_memory) << "p=" << p << " m=" << m << " r=" << r;
      }
    }
  }
}

TEST(ClosedForm, ZbH2IsNeverSlowerThanZbH1) {
  for (const Ratio& x : kRatios) {
    for (int p = 1; p <= 8; ++p) {
      for (int m = 1; m <= 4 * p; ++m) {
        const double h1 = Sim(Gen("zb-h1", p, m), Split(x.f, x.i, x.w)).makespan;
        const double h2 = Sim(Gen("zb-h2", p, m), Split(x.f, x.i, x.w)).makespan;
        EXPECT_LE(h2, h1 + kEps) << Where("zb-h2", p, m, x);
      }
    }
  }
}

TEST(ClosedForm, ZbH2IsAParallelogramWithoutBubbles) {
  // With F = I = W and m >= p the makespan is m(F+I+W) + (p-1)F, the bound of
  // one iteration (the last rank cannot start before (p-1)F). With
  // m >= 2p-1, enough for the 2(p-1-r)+1 warmup forwards, every rank r also
  // works without a gap from r*F to r*F + m(F+I+W): the published "zero
  // bubble" follows once the next iteration's warmup fills the idle start of
  // later ranks and the idle end of earlier ones.
  for (double t : {1.0, 2.5}) {
    for (int p = 1; p <= 8; ++p) {
      for (int m = p; m <= 4 * p; ++m) {
        const SimResult r = Sim(Gen("zb-h2", p, m), Split(t, t, t));
        EXPECT_NEAR(r.makespan, 3 * m * t + (p - 1) * t, kEps) << "p=" << p << " m=" << m;
        if (m < 2 * p - 1) continue;
        const std::vector<Window> w = Windows(r);
        for (int k = 0; k < p; ++k) {
          EXPECT_NEAR(w[k].start, k * t, kEps) << "p=" << p << " m=" << m << " r=" << k;
          EXPECT_NEAR(w[k].idle, 0, kEps) << "p=" << p << " m=" << m << " r=" << k;
        }
      }
    }
  }
}

TEST(ClosedForm, ZbH2HoldsUpTo2pMinus1Microbatches) {
  for (int p = 1; p <= 8; ++p) {
    for (int m = 1; m <= 4 * p; ++m) {
      const SimResult r = Sim(Gen("zb-h2", p, m), Split(1, 1, 1));
      for (int k = 0; k < p; ++k) {
        EXPECT_EQ(r.ranks[k].peak_memory, std::min(2 * p - 1, m)) << "p=" << p << " m=" << m << " r=" << k;
      }
    }
  }
}

TEST(ClosedForm, ZbVIsNeverSlowerThanZbH1AndKeeps1F1BsMemory) {
  for (const Ratio& x : kRatios) {
    for (int p = 1; p <= 8; ++p) {
      for (int m = 1; m <= 4 * p; ++m) {
        const double h1 = Sim(Gen("zb-h1", p, m), Split(x.f, x.i, x.w)).makespan;
        // Each V-shape stage is half a rank's layers: half the time and memory.
        const SimResult v = Sim(Gen("zb-v", p, m), Split(x.f, x.i, x.w, 2));
        EXPECT_LE(v.makespan, h1 + kEps) << Where("zb-v", p, m, x);
        // Peak activations, in units of one microbatch through a rank's
        // whole share of the model, never exceed 1F1B's peak min(p, m).
        EXPECT_LE(MaxPeak(v), std::min(p, m) + kEps) << Where("zb-v", p, m, x);
        if (m >= 2 * p) {
          EXPECT_NEAR(MaxPeak(v), p, kEps) << Where("zb-v", p, m, x);
        }
      }
    }
  }
}

TEST(ClosedForm, ZbVHasNoBubbleInsideARankWhenFIWAreEqual) {
  // With F = I = W and m >= 2p: rank r works without a gap from r*F/2 on,
  // and the makespan is m(F+I+W) + (p-1)F/2 — half of ZB-H2's start-up.
  for (int p = 1; p <= 8; ++p) {
    for (int m = 2 * p; m <= 4 * p; ++m) {
      const SimResult r = Sim(Gen("zb-v", p, m), Split(1, 1, 1, 2));
      EXPECT_NEAR(r.makespan, 3 * m + (p - 1) * 0.5, kEps) << "p=" << p << " m=" << m;
      const std::vector<Window> w = Windows(r);
      for (int k = 0; k < p; ++k) {
        EXPECT_NEAR(w[k].start, k * 0.5, kEps) << "p=" << p << " m=" << m << " r=" << k;
        EXPECT_NEAR(w[k].idle, 0, kEps) << "p=" << p << " m=" << m << " r=" << k;
      }
    }
  }
}

TEST(ClosedForm, DualPipeVIsNeverSlowerThanZbH1) {
  for (const Ratio& x : kRatios) {
    for (int p = 1; p <= 8; ++p) {
      for (int m = 2 * p; m <= 5 * p; ++m) {
        const double h1 = Sim(Gen("zb-h1", p, m), Split(x.f, x.i, x.w)).makespan;
        const SimResult d = Sim(Gen("dualpipe-v", p, m), Split(x.f, x.i, x.w, 2));
        EXPECT_LE(d.makespan, h1 + kEps) << Where("dualpipe-v", p, m, x);
      }
    }
  }
  // With F = I = W it matches ZB-V's makespan, holding half a microbatch
  // more: p + 1/2 on every rank with activations kept until W.
  for (int p = 1; p <= 8; ++p) {
    for (int m = 2 * p; m <= 4 * p; ++m) {
      const SimResult r = Sim(Gen("dualpipe-v", p, m), Split(1, 1, 1, 2));
      EXPECT_NEAR(r.makespan, 3 * m + (p - 1) * 0.5, kEps) << "p=" << p << " m=" << m;
      for (int k = 0; k < p; ++k) EXPECT_NEAR(r.ranks[k].peak_memory, p + 0.5, kEps) << "p=" << p << " m=" << m;
    }
  }
}

TEST(ClosedForm, NoFamilyDeadlocks) {
  for (const std::string& family : BuiltinScheduleNames()) {
    for (int p = 1; p <= 16; ++p) {
      for (int m = 1; m <= 4 * p; ++m) {
        if (family == "interleaved-1f1b" && m % p != 0) continue;
        if (family == "dualpipe-v" && m < 2 * p) continue;
        GeneratorOptions o;
        o.num_ranks = p;
        o.num_microbatches = m;
        Result<Schedule> s = GenerateSchedule(family, o);
        ASSERT_TRUE(s.ok()) << family << " p=" << p << " m=" << m << ": " << s.status().ToString();
        CostModel costs;
        ASSERT_TRUE(costs.Resolve(*s).ok());
        SimOptions quiet;
        quiet.record_spans = false;
        quiet.record_bubbles = false;
        Result<SimResult> r = Simulate(*s, costs, quiet);
        ASSERT_TRUE(r.ok()) << family << " p=" << p << " m=" << m << ": " << r.status().ToString();
        EXPECT_GT(r->makespan, 0);
      }
    }
  }
  for (const char* family : {"interleaved-1f1b", "looped-bfs"}) {
    for (int v : {3, 4}) {
      for (int p = 1; p <= 8; ++p) {
        for (int m = p; m <= 3 * p; m += p) {
          const SimResult r = Sim(Gen(family, p, m, v), Uniform{});
          EXPECT_GT(r.makespan, 0) << family << " v=" << v;
        }
      }
    }
  }
}

}  // namespace
}  // namespace pw

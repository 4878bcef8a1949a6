#include "schedule/csv_format.h"

#include <gtest/gtest.h>

#include <random>

#include "schedule/action_text.h"
#include "schedule/list_scheduler.h"
#include "schedule/lowering.h"

namespace pw {
namespace {

// What torch.distributed.pipelining's ScheduleLoopedBFS puts in
// pipeline_order for 2 ranks x 2 local stages, 2 microbatches, and
// _dump_csv writes: rank 0 runs stages 0 and 2, rank 1 stages 1 and 3; rank
// 1 is pre-padded with one None, rank 0 waits two steps for the first
// backward. Rows differ in length; csv.writer ends rows in "\r\n".
constexpr std::string_view kLoopedBfsCsv =
    "0F0,0F1,2F0,2F1,,,2B1,2B0,0B1,0B0\r\n"
    ",1F0,1F1,3F0,3F1,3B1,3B0,1B1,1B0\r\n";

Schedule LoopedBfs() {
  Schedule s = MakeEmptySchedule("looped_bfs", *Placement::Interleaved(2, 2), 2);
  s.programs[0] = {Fwd(0, 0),   Fwd(0, 1),   Fwd(2, 0), Fwd(2, 1), kIdleAction,
                   kIdleAction, Bwd(2, 1),   Bwd(2, 0), Bwd(0, 1), Bwd(0, 0)};
  s.programs[1] = {kIdleAction, Fwd(1, 0), Fwd(1, 1), Fwd(3, 0), Fwd(3, 1),
                   Bwd(3, 1),   Bwd(3, 0), Bwd(1, 1), Bwd(1, 0)};
  return s;
}

struct UnitHooks {
  double Duration(RankId, const Action&) { return 1.0; }
  double CommDelay(const Action&, StageId) { return 0.0; }
  void OnAction(RankId, size_t, double, double) {}
};

TEST(CsvFormatTest, ReadsPyTorchsLoopedBfsDump) {
  Result<Schedule> s = ParseScheduleCsv(kLoopedBfsCsv, "runs/looped_bfs.csv");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(*s, LoopedBfs());
  EXPECT_EQ(s->name, "looped_bfs");
  EXPECT_EQ(s->placement.Describe(), "interleaved");
  UnitHooks hooks;
  EXPECT_TRUE(ListSchedule(*s, hooks).ok());
}

TEST(CsvFormatTest, WritesWhatPyTorchWrites) {
  Result<std::string> csv = FormatScheduleCsv(LoopedBfs());
  ASSERT_TRUE(csv.ok()) << csv.status().ToString();
  EXPECT_EQ(*csv, kLoopedBfsCsv);
}

TEST(CsvFormatTest, CsvToScheduleToCsvIsByteExact) {
  const std::string_view inputs[] = {
      kLoopedBfsCsv,
      // Trailing idle steps leave trailing commas; split backward.
      "0F0,0F1,,0I0,0W0,0I1,0W1,,\r\n,1F0,1I0,1F1,1I1,1W0,1W1\r\n",
      // One rank, one action.
      "0F0\r\n",
  };
  for (std::string_view in : inputs) {
    Result<Schedule> s = ParseScheduleCsv(in, "x.csv");
    ASSERT_TRUE(s.ok()) << in << ": " << s.status().ToString();
    Result<std::string> out = FormatScheduleCsv(*s);
    ASSERT_TRUE(out.ok());
    EXPECT_EQ(*out, in);
  }
  // Unix line ends round-trip when asked for.
  const std::string_view unix_csv = "0F0,0B0\n1F0,1B0\n";
  Result<Schedule> s = ParseScheduleCsv(unix_csv, "x.csv");
  ASSERT_TRUE(s.ok());
  CsvExportOptions unix_style;
  unix_style.line_terminator = "\n";
  EXPECT_EQ(*FormatScheduleCsv(*s, unix_style), unix_csv);
}

TEST(CsvFormatTest, ScheduleToCsvToScheduleIsExact) {
  Schedule s = MakeEmptySchedule("v", *Placement::VShape(2), 3);
  s.programs[0] = {Fwd(0, 0), Fwd(0, 1), Fwd(3, 0), BwdI(3, 0), Fwd(0, 2), BwdW(3, 0), Fwd(3, 1), Bwd(3, 1),
                   Fwd(3, 2), Bwd(3, 2), Bwd(0, 0), Bwd(0, 1), Bwd(0, 2)};
  s.programs[1] = {Fwd(1, 0), Fwd(2, 0), Fwd(1, 1), Fwd(2, 1), Bwd(2, 0), Fwd(1, 2), Fwd(2, 2),
                   Bwd(1, 0), Bwd(2, 1), Bwd(1, 1), Bwd(2, 2), Bwd(1, 2)};
  Result<std::string> csv = FormatScheduleCsv(s);
  ASSERT_TRUE(csv.ok());
  Result<Schedule> back = ParseScheduleCsv(*csv, "v.csv");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, s);
  EXPECT_EQ(back->placement.Describe(), "v-shape");
}

TEST(CsvFormatTest, PythonCsvQuirks) {
  // A row of one empty cell is written `""` (csv.writer's way to tell it
  // from an empty row); an empty program is an empty line.
  Schedule s = MakeEmptySchedule("q", *Placement::Sequential(3), 1);
  s.programs[0] = {Fwd(0, 0)};
  s.programs[1] = {kIdleAction};
  s.programs[2] = {};
  EXPECT_EQ(*FormatScheduleCsv(s), "0F0\r\n\"\"\r\n\r\n");
  // Reading: quotes, blanks around cells (from_str strips), "\r" and "\n"
  // line ends, no final line end.
  Result<Schedule> r = ParseScheduleCsv("\"0F0\", 0B0 \r1F0,\"1B0\"\n\t2F0\t,2B0", "q.csv");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->num_ranks(), 3);
  EXPECT_EQ(r->programs[0], (Program{Fwd(0, 0), Bwd(0, 0)}));
  EXPECT_EQ(r->programs[2], (Program{Fwd(2, 0), Bwd(2, 0)}));
  // `""` is one idle cell.
  r = ParseScheduleCsv("0F0,\"\",0B0\r\n", "q.csv");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->programs[0], (Program{Fwd(0, 0), kIdleAction, Bwd(0, 0)}));
}

TEST(CsvFormatTest, MicrobatchCountIsInferredOrGiven) {
  Result<Schedule> s = ParseScheduleCsv("0F0,0F3,0B0,0B3\r\n", "m.csv");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->num_microbatches, 4);
  CsvImportOptions options;
  options.num_microbatches = 8;
  options.name = "given";
  s = ParseScheduleCsv("0F0,0F3,0B0,0B3\r\n", "m.csv", options);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->num_microbatches, 8);
  EXPECT_EQ(s->name, "given");
  options.num_microbatches = 2;
  s = ParseScheduleCsv("0F0,0F3,0B0,0B3\r\n", "m.csv", options);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(),
            "m.csv:1:5 (rank 0, cell 2): microbatch 3 is out of range: 2 microbatches were asked for (0..1); raise "
            "the microbatch count or let it be inferred");
}

TEST(CsvFormatTest, LegacyBackwardInputAsB) {
  const std::string_view legacy = "0F0,0B0,0W0\r\n";  // PyTorch 2.4 zero bubble
  Result<Schedule> modern = ParseScheduleCsv(legacy, "old.csv");
  ASSERT_TRUE(modern.ok());
  EXPECT_EQ(modern->programs[0][1], Bwd(0, 0));
  CsvImportOptions options;
  options.legacy_b_means_input = true;
  Result<Schedule> old = ParseScheduleCsv(legacy, "old.csv", options);
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->programs[0], (Program{Fwd(0, 0), BwdI(0, 0), BwdW(0, 0)}));
}

TEST(CsvFormatTest, ExportRefusesNonComputeActions) {
  Schedule s = LoopedBfs();
  Result<Schedule> lowered = InsertCommunication(s);
  ASSERT_TRUE(lowered.ok());
  Result<std::string> csv = FormatScheduleCsv(*lowered);
  ASSERT_FALSE(csv.ok());
  EXPECT_EQ(csv.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(csv.status().message(),
            "rank 0, position 1: '0SEND_F0' is not a compute action, and PyTorch's compute-only CSV holds only F, "
            "B, I and W; strip the schedule to its compute actions first (StripToCompute), or save it in the text "
            "format, which keeps every action");
  // Stripped, it exports as before.
  EXPECT_EQ(*FormatScheduleCsv(StripToCompute(*lowered)), kLoopedBfsCsv);
}

std::string ImportError(std::string_view csv) {
  Result<Schedule> s = ParseScheduleCsv(csv, "e.csv");
  EXPECT_FALSE(s.ok()) << csv;
  if (s.ok()) return "";
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  return s.status().message();
}

TEST(CsvFormatTest, ImportErrorsSayWhereAndWhy) {
  EXPECT_EQ(ImportError("0F0,0B0\r\n1F0,F0\r\n"),
            "e.csv:2:5 (rank 1, cell 2): expected a stage number, found 'F' at column 1 of 'F0'; put the stage "
            "number first; actions look like 2F0, 1SEND_F3 or 0REDUCE_GRAD");
  EXPECT_EQ(ImportError("0F0,0SEND_F0\r\n1F0\r\n"),
            "e.csv:1:5 (rank 0, cell 2): '0SEND_F0' is not a compute action; the compute-only CSV holds only F, B, "
            "I and W, and pipewright adds communication, REDUCE_GRAD and OPT itself (lowering passes); keep such "
            "schedules in the text format");
  EXPECT_EQ(ImportError("0F0,1F0\r\n1B0\r\n"),
            "e.csv:2:1 (rank 1, cell 1): stage 1 runs on rank 1 here but on rank 0 at e.csv:1:5; a stage lives on "
            "one rank, so move its actions to one row");
  EXPECT_EQ(ImportError("0F0\r\n,,\r\n"),
            "e.csv:2: row 2 (rank 1) has no actions, so rank 1 owns no stage; every rank needs one (an empty line "
            "counts as a row: remove stray blank lines)");
  EXPECT_EQ(ImportError("0F0\r\n1F0\r\n\r\n"),
            "e.csv:3: row 3 (rank 2) has no actions, so rank 2 owns no stage; every rank needs one (an empty line "
            "counts as a row: remove stray blank lines)");
  EXPECT_EQ(ImportError("0F0\r\n2F0\r\n"),
            "e.csv: stage 1 appears in no row, but stage 2 does; the placement cannot be inferred. Every stage "
            "from 0 to the largest needs at least one action");
  EXPECT_EQ(ImportError(""), "e.csv: the CSV has no rows; write one row per rank, e.g. '0F0,0B0'");
  EXPECT_EQ(ImportError("0F0,\"0B0\r\n"),
            "e.csv:1:5: a quoted cell is not closed before the end of the file; add the closing '\"'");
  EXPECT_NE(ImportError("0F0,0UNSHARD\r\n").find("UNSHARD is a PyTorch action"), std::string::npos);
  EXPECT_NE(ImportError("0F0,(0F1;0B0)OVERLAP_F_B\r\n").find("OVERLAP_F_B group"), std::string::npos);
  EXPECT_NE(ImportError("0F0,2000000000F0\r\n").find("stage 1 appears in no row"), std::string::npos);
  EXPECT_NE(ImportError("0F0x\r\n").find("unexpected 'x'"), std::string::npos);
}

TEST(CsvFormatTest, GarbageNeverCrashes) {
  const std::string base(kLoopedBfsCsv);
  std::mt19937 rng(3);
  const std::string alphabet = "0123456789FBIWSEND_RCV, \r\n\"\t.x\xff";
  int parsed = 0;
  for (int i = 0; i < 5000; ++i) {
    std::string text = base;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !text.empty(); ++e) {
      const size_t at = rng() % text.size();
      switch (rng() % 3) {
        case 0: text[at] = alphabet[rng() % alphabet.size()]; break;
        case 1: text.erase(at, 1 + rng() % 4); break;
        default: text.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
      }
    }
    Result<Schedule> s = ParseScheduleCsv(text, "fuzz.csv");
    if (!s.ok()) {
      EXPECT_EQ(s.status().message().rfind("fuzz.csv", 0), 0u) << s.status().message();
      continue;
    }
    ++parsed;
    // What parses is compute-only, so it exports, and reads back the same.
    Result<std::string> out = FormatScheduleCsv(*s);
    ASSERT_TRUE(out.ok());
    Result<Schedule> again = ParseScheduleCsv(*out, "again.csv");
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    EXPECT_EQ(*again, *s);
  }
  EXPECT_GT(parsed, 0);
  for (size_t n = 0; n <= base.size(); ++n) (void)ParseScheduleCsv(base.substr(0, n), "cut.csv");
  for (int i = 0; i < 2000; ++i) {
    std::string text(rng() % 100, ' ');
    for (char& c : text) c = static_cast<char>(rng() % 256);
    (void)ParseScheduleCsv(text, "noise.csv");
  }
}

}  // namespace
}  // namespace pw

#include "schedule/step_grid.h"

#include <gtest/gtest.h>

#include "schedule/schedule_test_util.h"

namespace pw {
namespace {

Schedule OneFOneB(int p, int m) { return testing_util::HandOneFOneB(p, m); }

TEST(StepGridTest, RendersEveryCellAligned) {
  const Schedule s = OneFOneB(2, 3);
  EXPECT_EQ(RenderStepGrid(s),
            "  step   |   0    1    2    3    4    5\n"
            "  rank 0 | 0F0  0F1  0B0  0F2  0B1  0B2\n"
            "  rank 1 | 1F0  1B0  1F1  1B1  1F2  1B2\n");
}

TEST(StepGridTest, MarksTheCellAndItsRowWithoutShiftingColumns) {
  const Schedule s = OneFOneB(2, 3);
  StepGridOptions o;
  o.mark = GridCell{0, 2};
  o.related = {GridCell{1, 1}};
  EXPECT_EQ(RenderStepGrid(s, o),
            "  step   |   0    1    2    3    4    5\n"
            "> rank 0 | 0F0  0F1 >0B0< 0F2  0B1  0B2\n"
            "  rank 1 | 1F0 [1B0] 1F1  1B1  1F2  1B2\n");
}

TEST(StepGridTest, IdleIsADotAndTheEndOfAProgramIsBlank) {
  Schedule s = MakeEmptySchedule("x", *Placement::Sequential(2), 1);
  s.programs[0] = {Fwd(0, 0), {0, kNoMicrobatch, ActionKind::kIdle}, Bwd(0, 0)};
  s.programs[1] = {Fwd(1, 0)};
  StepGridOptions o;
  o.mark = GridCell{1, 2};  // past the end of rank 1's program: an empty cell
  EXPECT_EQ(RenderStepGrid(s, o),
            "  step   |   0    1    2\n"
            "  rank 0 | 0F0    .  0B0\n"
            "> rank 1 | 1F0      >   <\n");
}

TEST(StepGridTest, WindowsStepsAndRanksAroundTheMark) {
  const Schedule s = OneFOneB(8, 16);  // 32 steps per rank
  StepGridOptions o;
  o.mark = GridCell{5, 20};
  o.max_columns = 5;
  o.max_rows = 3;
  // "…" (U+2026) stands for the elided steps on either side.
  EXPECT_EQ(RenderStepGrid(s, o),
            "  step   |     18    19    20    21    22\n"
            "  (ranks 0..3 not shown)\n"
            "  rank 4 | \u2026  4B7  4F11   4B8  4F12   4B9  \u2026\n"
            "> rank 5 | \u2026 5F10   5B8 >5F11<  5B9  5F12  \u2026\n"
            "  rank 6 | \u2026  6B8  6F10   6B9  6F11  6B10  \u2026\n"
            "  (rank 7 not shown)\n"
            "  (steps 18..22 of 32 shown)\n");
}

TEST(StepGridTest, WindowStretchesToShowRelatedCellsThatFit) {
  const Schedule s = OneFOneB(4, 16);
  StepGridOptions o;
  o.mark = GridCell{0, 10};
  o.related = {GridCell{3, 14}, GridCell{2, 30}};  // the second does not fit
  o.max_columns = 6;
  o.max_rows = 0;
  const std::string grid = RenderStepGrid(s, o);
  EXPECT_NE(grid.find(">0B3<"), std::string::npos) << grid;
  EXPECT_NE(grid.find("[3F7]"), std::string::npos) << grid;
  EXPECT_EQ(grid.find("2B15"), std::string::npos) << grid;
  EXPECT_NE(grid.find("steps 10..15 of 32"), std::string::npos) << grid;
}

TEST(StepGridTest, WithoutMarkStartsAtStepZeroAndFlagsTheFocusRank) {
  const Schedule s = OneFOneB(4, 16);
  StepGridOptions o;
  o.focus_rank = 3;
  o.max_columns = 4;
  o.max_rows = 2;
  EXPECT_EQ(RenderStepGrid(s, o),
            "  step   |   0    1    2    3\n"
            "  (ranks 0..1 not shown)\n"
            "  rank 2 | 2F0  2F1  2B0  2F2  \u2026\n"
            "> rank 3 | 3F0  3B0  3F1  3B1  \u2026\n"
            "  (steps 0..3 of 32 shown)\n");
}

TEST(StepGridTest, CompactModeDrawsOneCharacterPerCell) {
  Schedule s = OneFOneB(2, 8);
  s.programs[1].insert(s.programs[1].begin(), {1, 0, ActionKind::kRecvForward});
  StepGridOptions o;
  o.compact = true;
  o.mark = GridCell{0, 3};
  o.related = {GridCell{1, 1}};
  EXPECT_EQ(RenderStepGrid(s, o),
            "  step   | 0         10\n"
            "> rank 0 | FFBFBFBFBFBFBFBB\n"
            "              ^\n"
            "  rank 1 | rFBFBFBFBFBFBFBFB\n"
            "            +\n"
            "  legend: F forward, B backward, r receive\n");
}

TEST(StepGridTest, DrawsUnregisteredKindsInsteadOfFailing) {
  Schedule s = MakeEmptySchedule("x", *Placement::Sequential(1), 1);
  s.programs[0] = {Fwd(0, 0), {0, 0, static_cast<ActionKind>(77)}};
  EXPECT_EQ(ActionLabel(s, s.programs[0][1]), "0?770");
  EXPECT_NE(RenderStepGrid(s).find("0?770"), std::string::npos);
}

TEST(StepGridTest, NamesUserKindsInCompactLegend) {
  Schedule s = MakeEmptySchedule("x", *Placement::Sequential(1), 1);
  KindInfo offload;
  offload.name = "OFFLOAD";
  const ActionKind k = *s.kinds.Register(offload);
  s.programs[0] = {Fwd(0, 0), {0, 0, k}, Bwd(0, 0)};
  StepGridOptions o;
  o.compact = true;
  const std::string grid = RenderStepGrid(s, o);
  EXPECT_NE(grid.find("| FoB\n"), std::string::npos) << grid;
  EXPECT_NE(grid.find("o OFFLOAD"), std::string::npos) << grid;
}

}  // namespace
}  // namespace pw

#include "viz/time_grid.h"

#include <gtest/gtest.h>

#include "viz/viz_test_util.h"

namespace pw {
namespace {

using testing_viz::OneFOneB;
using testing_viz::SimulateOrDie;

TEST(TimeGridTest, TwoRankOneFOneBIsExact) {
  // F=1, B=2: rank 0 F0[0,1] F1[1,2] B0[4,6] B1[7,9];
  //           rank 1 F0[1,2] B0[2,4] F1[4,5] B1[5,7].
  const Schedule s = OneFOneB(2, 2);
  const SimResult sim = SimulateOrDie(s);
  EXPECT_EQ(RenderTimeGrid(s, sim),
            "1f1b: p=2, m=2, makespan 9, bubble ratio 33.3%, 1 column = 1 time unit\n"
            "rank 0 | F0 F1 .. .. B0--- .. B1--- |\n"
            "rank 1 | .. F0 B0--- F1 B1--- .. .. |\n"
            "time     0     2     4     6     8\n"
            "legend: F=forward B=backward .=idle; digits = microbatch\n");
}

TEST(TimeGridTest, HalfUnitQuantumForFractionalCosts) {
  const Schedule s = OneFOneB(2, 1);
  const SimResult sim = SimulateOrDie(s, "F=1.5,B=2");
  TimeGridOptions options;
  options.title = options.ruler = options.legend = false;
  // F lasts 3 half-units and B 4: rank 0 F0[0,1.5] B0[5,7]; rank 1 F0[1.5,3] B0[3,5].
  EXPECT_EQ(RenderTimeGrid(s, sim, options),
            "rank 0 | F0------ .. .. .. .. .. .. .. B0--------- |\n"
            "rank 1 | .. .. .. F0------ B0--------- .. .. .. .. |\n");
}

TEST(TimeGridTest, NarrowWidthFallsBackToOneCharacterPerColumn) {
  const Schedule s = OneFOneB(2, 2);
  const SimResult sim = SimulateOrDie(s);
  TimeGridOptions options;
  options.max_columns = 20;  // 9 labelled cells need 27
  options.title = options.legend = false;
  EXPECT_EQ(RenderTimeGrid(s, sim, options),
            "rank 0 |FF..B-.B-|\n"
            "rank 1 |.FB-FB-..|\n"
            "time    0\n");
}

TEST(TimeGridTest, CoarseColumnsCapTheWidth) {
  const Schedule s = OneFOneB(4, 64);
  const SimResult sim = SimulateOrDie(s);
  TimeGridOptions options;
  options.max_columns = 50;
  const std::string grid = RenderTimeGrid(s, sim, options);
  EXPECT_NE(grid.find("coarse"), std::string::npos) << grid;
  // makespan 3 * (64 + 3) = 201 over at most 50 columns: a round 5 units
  // per column, 41 columns; every rank row is the prefix, the cells and the bar.
  EXPECT_NE(grid.find("1 column = 5 time units"), std::string::npos) << grid;
  size_t rows = 0;
  for (size_t at = grid.find("rank "); at != std::string::npos; at = grid.find("rank ", at + 1)) {
    const size_t eol = grid.find('\n', at);
    EXPECT_EQ(eol - at, std::string("rank 0 |").size() + 41 + 1) << grid.substr(at, eol - at);
    ++rows;
  }
  EXPECT_EQ(rows, 4u);
}

TEST(TimeGridTest, SecondChunkIsLowerCase) {
  const Schedule s = testing_viz::VShapeGPipe(2, 1);
  const SimResult sim = SimulateOrDie(s);
  TimeGridOptions options;
  options.title = options.ruler = false;
  // Rank 0 owns stages 0 and 3, rank 1 stages 1 and 2; F=1, B=2:
  // 0F0[0,1] 1F0[1,2] 2F0[2,3] 3F0[3,4] 3B0[4,6] 2B0[6,8] 1B0[8,10] 0B0[10,12].
  EXPECT_EQ(RenderTimeGrid(s, sim, options),
            "rank 0 | F0 .. .. f0 b0--- .. .. .. .. B0--- |\n"
            "rank 1 | .. F0 f0 .. .. .. b0--- B0--- .. .. |\n"
            "legend: F=forward B=backward .=idle; digits = microbatch; lower case = a rank's 2nd (4th, ...) chunk\n");
}

TEST(TimeGridTest, EmptyScheduleRendersEmptyRows) {
  const Schedule s = MakeEmptySchedule("empty", *Placement::Sequential(2), 0);
  SimResult sim;  // what a simulator would say: nothing ran
  sim.ranks.resize(2);
  sim.spans.resize(2);
  TimeGridOptions options;
  options.legend = false;
  EXPECT_EQ(RenderTimeGrid(s, sim, options),
            "empty: p=2, m=0, makespan 0, bubble ratio 0.0%\n"
            "rank 0 ||\n"
            "rank 1 ||\n");
}

}  // namespace
}  // namespace pw

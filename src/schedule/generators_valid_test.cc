// The contract that lets dsl::LoadSchedule skip the validator for built-in
// families (its fast path): every schedule a generator returns passes every
// check of the validator, the deadlock dry run included. If a generator
// change ever breaks that, this test fails where the fast path would have
// let an invalid schedule through.
#include <gtest/gtest.h>

#include <string>

#include "schedule/generators.h"
#include "schedule/validator.h"

namespace pw {
namespace {

// Validates whatever the generator accepts; returns how many shapes it accepted.
int ExpectValidWhereAccepted(const std::string& family, int p, int m, int chunks) {
  GeneratorOptions o;
  o.num_ranks = p;
  o.num_microbatches = m;
  o.chunks = chunks;
  Result<Schedule> s = GenerateSchedule(family, o);
  if (!s.ok()) return 0;  // a refused shape never reaches the fast path
  const ValidationReport report = CheckSchedule(*s);
  EXPECT_TRUE(report.ok()) << family << " p=" << p << " m=" << m << " chunks=" << chunks << ": "
                           << (report.problems.empty() ? "" : report.problems.front().message);
  EXPECT_TRUE(report.dry_run_done) << family;
  return 1;
}

TEST(GeneratorsValid, EveryFamilyAtEveryAcceptedShapePassesTheValidator) {
  for (const std::string& family : BuiltinScheduleNames()) {
    int accepted = 0;
    for (int p = 1; p <= 8; ++p) {
      for (int m = 1; m <= 4 * p; ++m) accepted += ExpectValidWhereAccepted(family, p, m, 0);
    }
    EXPECT_GT(accepted, 20) << family << ": the grid should hold many accepted shapes";
  }
}

TEST(GeneratorsValid, EveryChunkCountPassesTheValidator) {
  for (const std::string& family : BuiltinScheduleNames()) {
    for (int chunks = 1; chunks <= 4; ++chunks) {
      for (int p = 1; p <= 5; ++p) {
        for (int m = 1; m <= 3 * p; ++m) ExpectValidWhereAccepted(family, p, m, chunks);
      }
    }
  }
}

TEST(GeneratorsValid, LargerShapesPassTheValidator) {
  for (const std::string& family : BuiltinScheduleNames()) {
    for (int p : {16, 32}) {
      for (int m : {2 * p, 4 * p + 0, 4 * p + 2}) ExpectValidWhereAccepted(family, p, m, 0);
    }
  }
}

}  // namespace
}  // namespace pw

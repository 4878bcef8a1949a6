#include "core/status.h"

#include <gtest/gtest.h>

namespace pw {
namespace {

Result<int> ParsePositive(int x) {
  if (x <= 0) return Status::InvalidArgument("x must be positive, got " + std::to_string(x));
  return x;
}

Result<int> Doubled(int x) {
  PW_ASSIGN_OR_RETURN(int v, ParsePositive(x));
  return 2 * v;
}

TEST(StatusTest, OkAndErrorsCarryCodeAndMessage) {
  EXPECT_TRUE(Status::Ok().ok());
  Status s = Status::NotFound("no such schedule 'foo'");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.ToString(), "NotFound: no such schedule 'foo'");
  EXPECT_EQ(s.WithContext("file.csv:3").message(), "file.csv:3: no such schedule 'foo'");
  EXPECT_TRUE(Status::Ok().WithContext("x").ok());
}

TEST(StatusTest, AssignOrReturnPropagatesErrors) {
  EXPECT_EQ(*Doubled(4), 8);
  Result<int> bad = Doubled(-1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
}

TEST(StatusDeathTest, ValueOfErrorIsABug) {
  Result<int> bad = ParsePositive(0);
  EXPECT_DEATH((void)bad.value(), "internal check failed");
}

}  // namespace
}  // namespace pw

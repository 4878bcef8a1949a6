#include "core/status_record.h"

#include <gtest/gtest.h>

namespace pw {
namespace {

TEST(StatusReason, SurvivesContextAndIsDroppedByNothingElse) {
  Status s = Status::IoError("recv failed").WithReason(StatusReason::kPeerTimedOut);
  EXPECT_EQ(s.reason(), StatusReason::kPeerTimedOut);
  EXPECT_EQ(s.WithContext("step 3").reason(), StatusReason::kPeerTimedOut);
  EXPECT_EQ(s.WithContext("step 3").message(), "step 3: recv failed");
  EXPECT_EQ(Status::IoError("x").reason(), StatusReason::kUnspecified);
  EXPECT_TRUE(Status::Ok().WithReason(StatusReason::kPeerLost).ok());
  EXPECT_EQ(Status::Ok().WithReason(StatusReason::kPeerLost).reason(), StatusReason::kUnspecified);
}

TEST(StatusReason, NamesRoundTrip) {
  for (StatusReason r : {StatusReason::kUnspecified, StatusReason::kPeerTimedOut, StatusReason::kPeerLost,
                         StatusReason::kCostsDoNotFit}) {
    EXPECT_EQ(StatusReasonFromName(StatusReasonName(r)), r) << StatusReasonName(r);
  }
  EXPECT_EQ(StatusReasonFromName("no-such-reason"), StatusReason::kUnspecified);
}

TEST(StatusRecord, LineRoundTripsCodeAndReason) {
  const Status s = Status::IoError("all-reduce failed after 3.00 s").WithReason(StatusReason::kPeerLost);
  const std::string line = StatusRecordLine(s);
  EXPECT_EQ(line, "pipewright-status: code=IoError reason=peer-lost");
  std::optional<StatusRecord> record = ParseStatusRecordLine(line);
  ASSERT_TRUE(record.has_value());
  EXPECT_EQ(record->code, StatusCode::kIoError);
  EXPECT_EQ(record->reason, StatusReason::kPeerLost);
}

TEST(StatusRecord, OtherLinesAreNotRecordsAndUnknownFieldsReadAsUnspecified) {
  // The wording of an error never makes a record, whatever it says.
  EXPECT_FALSE(ParseStatusRecordLine("pipewright: error: Timed out waiting 3000ms").has_value());
  EXPECT_FALSE(ParseStatusRecordLine(" pipewright-status: code=IoError reason=peer-lost").has_value());
  std::optional<StatusRecord> future = ParseStatusRecordLine("pipewright-status: reason=disk-full code=Busy extra=1");
  ASSERT_TRUE(future.has_value());
  EXPECT_EQ(future->code, StatusCode::kInternal);
  EXPECT_EQ(future->reason, StatusReason::kUnspecified);
  std::optional<StatusRecord> swapped = ParseStatusRecordLine("pipewright-status: reason=peer-timed-out code=NotFound");
  ASSERT_TRUE(swapped.has_value());
  EXPECT_EQ(swapped->code, StatusCode::kNotFound);
  EXPECT_EQ(swapped->reason, StatusReason::kPeerTimedOut);
}

}  // namespace
}  // namespace pw

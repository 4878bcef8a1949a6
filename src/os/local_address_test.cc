#include "os/local_address.h"

#include <gtest/gtest.h>

namespace pw {
namespace {

TEST(LocalAddressToward, LoopbackRoutesFromLoopback) {
  Result<std::string> local = LocalAddressToward("127.0.0.1");
  ASSERT_TRUE(local.ok()) << local.status().ToString();
  EXPECT_EQ(*local, "127.0.0.1");
}

TEST(LocalAddressToward, OwnAddressIsItself) {
  // Whatever address this machine uses toward loopback is one of its own,
  // and the route toward one of its own addresses starts at that address:
  // rank 0 on MASTER_ADDR binds the address the others dial.
  Result<std::string> local = LocalAddressToward("localhost");
  ASSERT_TRUE(local.ok()) << local.status().ToString();
  Result<std::string> again = LocalAddressToward(*local);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*again, *local);
}

TEST(LocalAddressToward, UnresolvableNameIsNotFound) {
  Result<std::string> local = LocalAddressToward("no-such-host.invalid");
  ASSERT_FALSE(local.ok());
  EXPECT_EQ(local.status().code(), StatusCode::kNotFound);
  EXPECT_NE(local.status().message().find("no-such-host.invalid"), std::string::npos);
}

}  // namespace
}  // namespace pw

// The hand-written safetensors reader/writer (round trip and every
// malformed-file error) and the checkpoint manifest reader's NotFound.
// Resumption on real ranks is tested in runtime/checkpoint_test.cc.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "model/safetensors.h"

namespace pw {
namespace {

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("pw_safetensors_test_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

// A file: 8-byte little-endian header length, header, data.
void WriteRaw(const std::string& path, uint64_t length, const std::string& header,
              const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(&length), 8);
  out << header << data;
}
TEST(SafetensorsTest, RoundTrip) {
  const std::string path = TempPath("round.safetensors");
  at::Tensor f = at::randn({3, 5});
  at::Tensor i = at::arange(7, at::kLong).reshape({7, 1});
  at::Tensor scalar = at::full({}, 2.5f);
  at::Tensor empty = at::zeros({0, 4});
  at::Tensor strided = at::randn({4, 6}).t();  // non-contiguous
  ASSERT_TRUE(WriteSafetensors(path, {{"f", f}, {"i", i}, {"s", scalar}, {"e", empty},
                                      {"t", strided}},
                               {{"stage", "1"}})
                  .ok());
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  std::ifstream in(path, std::ios::binary);
  uint64_t n = 0;
  in.read(reinterpret_cast<char*>(&n), 8);
  EXPECT_EQ(n % 8, 0u);
  Result<SafetensorsContents> read = ReadSafetensors(path);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ASSERT_EQ(read->tensors.size(), 5u);
  std::map<std::string, at::Tensor> got(read->tensors.begin(), read->tensors.end());
  EXPECT_TRUE(at::equal(got["f"], f));
  EXPECT_TRUE(at::equal(got["i"], i));
  EXPECT_EQ(got["i"].scalar_type(), at::kLong);
  EXPECT_EQ(got["s"].dim(), 0);
  EXPECT_EQ(got["s"].item<float>(), 2.5f);
  EXPECT_EQ(got["e"].sizes(), empty.sizes());
  EXPECT_TRUE(at::equal(got["t"], strided));
  EXPECT_EQ(read->metadata.at("stage"), "1");
  std::filesystem::remove(path);
}

TEST(SafetensorsTest, WriterRejectsBadInput) {
  const std::string path = TempPath("bad_write.safetensors");
  Status s = WriteSafetensors(path, {{"d", at::zeros({2}, at::kDouble)}});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'d'"), std::string::npos) << s.message();
  s = WriteSafetensors(path, {{"a", at::zeros({2})}, {"a", at::zeros({2})}});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  s = WriteSafetensors("/nonexistent_dir_pw/x.safetensors", {{"a", at::zeros({2})}});
  EXPECT_EQ(s.code(), StatusCode::kIoError);
}

TEST(SafetensorsTest, MalformedFilesNameFileAndTensor) {
  const std::string path = TempPath("bad.safetensors");
  const std::string floats(8, '\0');  // two F32 zeros
  struct Bad {
    const char* what;
    uint64_t length;  // 0: the header's size
    std::string header;
    std::string data;
    const char* expect;  // substring of the message
  };
  const std::vector<Bad> cases = {
      {"huge length", 1ull << 40, "{}", "", "header length"},
      {"length past end", 100, "{}", "", "header length"},
      {"bad json", 0, "{\"a\": ", "", "not valid JSON"},
      {"not an object", 0, "[1, 2]", "", "not a JSON object"},
      {"missing fields", 0, R"({"w": {"dtype": "F32"}})", floats, "tensor 'w'"},
      {"bad dtype", 0, R"({"w": {"dtype": "F8_E4M3", "shape": [2], "data_offsets": [0, 4]}})", floats,
       "unsupported dtype"},
      {"negative dim", 0, R"({"w": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})",
       floats, "not a size"},
      {"shape mismatch", 0, R"({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})",
       floats, "needs 12 bytes"},
      {"offsets past end", 0, R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})",
       floats, "outside the data buffer"},
      {"offsets reversed", 0, R"({"w": {"dtype": "F32", "shape": [0], "data_offsets": [8, 0]}})",
       floats, "outside the data buffer"},
      {"bad offsets", 0, R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0]}})", floats,
       "data_offsets"},
      {"bad metadata", 0, R"({"__metadata__": {"k": 1}})", "", "__metadata__"},
  };
  for (const Bad& c : cases) {
    WriteRaw(path, c.length ? c.length : c.header.size(), c.header, c.data);
    Result<SafetensorsContents> r = ReadSafetensors(path);
    ASSERT_FALSE(r.ok()) << c.what;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.what;
    EXPECT_NE(r.status().message().find(path), std::string::npos) << c.what;
    EXPECT_NE(r.status().message().find(c.expect), std::string::npos)
        << c.what << ": " << r.status().message();
    if (c.header.find("\"w\"") != std::string::npos) {
      EXPECT_NE(r.status().message().find("'w'"), std::string::npos) << c.what;
    }
  }
  {  // shorter than the length field
    std::ofstream(path, std::ios::binary | std::ios::trunc) << "abc";
    Result<SafetensorsContents> r = ReadSafetensors(path);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("shorter than"), std::string::npos);
  }
  std::filesystem::remove(path);
  EXPECT_EQ(ReadSafetensors(path).status().code(), StatusCode::kNotFound);
}
TEST(CheckpointTest, MissingManifestIsNotFound) {
  Result<CheckpointManifest> m = ReadCheckpointManifest(TempPath("no_such_ckpt"));
  EXPECT_EQ(m.status().code(), StatusCode::kNotFound);
}


}  // namespace
}  // namespace pw

// Checkpoint integrity: durable writes with their SHA-256, every stage file
// verified against the manifest (a flipped byte or a truncation is refused
// naming the file), older checkpoints without checksums still load, and a
// write interrupted before its rename leaves the previous checkpoint
// loadable. Resumption on real ranks is tested in runtime/checkpoint_test.cc.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "model/durable_file.h"
#include "model/model_config.h"
#include "model/partitioner.h"
#include "model/stage_module.h"

namespace pw {
namespace {

namespace fs = std::filesystem;

std::string TempDir(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("pw_ckpt_integrity_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void FlipMiddleBytes(const std::string& path, int count) {
  std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
  f.seekg(0, std::ios::end);
  const std::streamoff size = f.tellg();
  for (int i = 0; i < count; ++i) {
    f.seekg(size / 2 + i);
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ 0x5a);
    f.seekp(size / 2 + i);
    f.write(&c, 1);
  }
}

ModelConfig TinyConfig() { return ModelConfig{.d_model = 16, .n_layers = 2, .n_heads = 2, .seq_len = 8}; }

// A checkpoint of the tiny model in 2 stages after `step` steps, written as
// SaveTrainingCheckpoint does (step_<N>/ files, digests in the manifest).
// `shift` moves the parameters so that two checkpoints differ.
CheckpointManifest WriteTinyCheckpoint(const std::string& dir, int64_t step, float shift) {
  const ModelConfig config = TinyConfig();
  Result<ModelPartition> partition = PartitionBalanced(config, 2);
  PW_CHECK(partition.ok(), partition.status().ToString());
  CheckpointManifest m;
  m.model_config = FormatModelConfig(config);
  m.schedule = "1f1b";
  m.pp = 2;
  m.dp = 1;
  m.microbatches = 2;
  m.microbatch_size = 1;
  m.step = m.optimizer_steps = step;
  for (const StageSpan& span : partition->stages) {
    StageModule stage(config, span, 7);
    {
      c10::NoGradGuard no_grad;
      for (at::Tensor p : stage.Parameters()) p.add_(shift);
    }
    const std::string file = CheckpointStagePath(step, span.stage);
    Result<FileDigest> digest = WriteCheckpointStage(dir, stage, AdamWState{}, file);
    PW_CHECK(digest.ok(), digest.status().ToString());
    m.stages.push_back({span.stage, span.first_block, span.num_blocks, span.has_embedding, span.has_head, file,
                        digest->bytes, digest->sha256});
  }
  PW_CHECK(WriteCheckpointManifest(dir, m).ok(), "write manifest");
  return m;
}

// Loads stage `s` of the checkpoint in `dir` into a fresh stage module;
// returns the status and, when loaded, the first parameter's first value.
Status LoadStage(const std::string& dir, int s, float* first_value = nullptr) {
  PW_ASSIGN_OR_RETURN(CheckpointManifest m, ReadCheckpointManifest(dir));
  Result<ModelPartition> partition = PartitionBalanced(TinyConfig(), 2);
  StageModule stage(TinyConfig(), partition->stages[s], 7);
  AdamWState state;
  PW_RETURN_IF_ERROR(LoadCheckpointStage(dir, m, stage, state));
  if (first_value != nullptr) *first_value = stage.Parameters()[0].reshape({-1})[0].item<float>();
  return Status::Ok();
}

TEST(DurableFileTest, DigestIsSha256OfTheBytes) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_TRUE(IsSha256Hex(Sha256Hex("")));
  EXPECT_FALSE(IsSha256Hex("ABC"));
  const std::string dir = TempDir("digest");
  const std::string path = dir + "/f.bin";
  Result<FileDigest> d = WriteFileDurably(path, "abc");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->bytes, 3u);
  EXPECT_EQ(d->sha256, Sha256Hex("abc"));
  EXPECT_EQ(ReadAll(path), "abc");
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  Result<FileDigest> missing = WriteFileDurably("/nonexistent_dir_pw/f.bin", "x");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kIoError);
  EXPECT_NE(missing.status().message().find("/nonexistent_dir_pw/f.bin.tmp"), std::string::npos);
  fs::remove_all(dir);
}

TEST(DurableFileTest, InterruptedWriteLeavesTheOldFile) {
  const std::string dir = TempDir("interrupted");
  const std::string path = dir + "/f.bin";
  ASSERT_TRUE(WriteFileDurably(path, "old contents").ok());
  // A writer abandoned before Commit (an error) removes its .tmp.
  {
    DurableFileWriter writer(path);
    ASSERT_TRUE(writer.Open().ok());
    ASSERT_TRUE(writer.Write("new").ok());
  }
  EXPECT_EQ(ReadAll(path), "old contents");
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  // A process that dies before Commit (no destructors run) leaves a stray .tmp.
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    DurableFileWriter writer(path);
    if (writer.Open().ok()) (void)writer.Write("new, half writ");
    ::_exit(0);
  }
  int wstatus = 0;
  ASSERT_EQ(::waitpid(child, &wstatus, 0), child);
  EXPECT_EQ(ReadAll(path), "old contents");
  EXPECT_EQ(ReadAll(path + ".tmp"), "new, half writ");
  fs::remove_all(dir);
}

TEST(CheckpointIntegrityTest, ManifestCarriesVerifiedChecksums) {
  const std::string dir = TempDir("checksums");
  const CheckpointManifest written = WriteTinyCheckpoint(dir, 3, 0.5f);
  Result<CheckpointManifest> read = ReadCheckpointManifest(dir);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ASSERT_EQ(read->stages.size(), 2u);
  for (size_t s = 0; s < 2; ++s) {
    EXPECT_EQ(read->stages[s].file, "step_3/stage_" + std::to_string(s) + ".safetensors");
    EXPECT_EQ(read->stages[s].sha256, written.stages[s].sha256);
    EXPECT_EQ(read->stages[s].sha256, Sha256Hex(ReadAll(dir + "/" + read->stages[s].file)));
    EXPECT_EQ(read->stages[s].bytes, fs::file_size(dir + "/" + read->stages[s].file));
  }
  EXPECT_TRUE(LoadStage(dir, 0).ok());
  EXPECT_TRUE(LoadStage(dir, 1).ok());
  fs::remove_all(dir);
}

TEST(CheckpointIntegrityTest, FlippedBytesAreRefusedNamingTheFile) {
  const std::string dir = TempDir("flipped");
  WriteTinyCheckpoint(dir, 2, 0.25f);
  const std::string file = dir + "/step_2/stage_1.safetensors";
  FlipMiddleBytes(file, 4);  // the repro: 4 bytes in the middle, parses fine
  Status s = LoadStage(dir, 1);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_NE(s.message().find("checkpoint file " + file + " is corrupt"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("SHA-256"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("earlier one, or retrain"), std::string::npos) << s.message();
  EXPECT_TRUE(LoadStage(dir, 0).ok());  // the other stage's file is intact

  // A truncated file is refused by size, before parsing.
  fs::resize_file(file, fs::file_size(file) - 100);
  s = LoadStage(dir, 1);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(file), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("bytes but"), std::string::npos) << s.message();
  fs::remove_all(dir);
}

TEST(CheckpointIntegrityTest, CheckpointWithoutChecksumsLoadsUnverified) {
  const std::string dir = TempDir("legacy");
  CheckpointManifest m = WriteTinyCheckpoint(dir, 1, 0.0f);
  for (CheckpointStage& s : m.stages) s.sha256.clear();  // as written before checksums
  ASSERT_TRUE(WriteCheckpointManifest(dir, m).ok());
  EXPECT_EQ(ReadAll(dir + "/" + kCheckpointManifest).find("sha256"), std::string::npos);
  testing::internal::CaptureStderr();
  Status s = LoadStage(dir, 0);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_NE(err.find("warning: " + dir + "/step_1/stage_0.safetensors is not verified"), std::string::npos) << err;

  // A file outside the checkpoint directory is refused.
  std::string text = ReadAll(dir + "/" + kCheckpointManifest);
  const std::string file = "\"step_1/stage_0.safetensors\"";
  ASSERT_NE(text.find(file), std::string::npos) << text;
  text.replace(text.find(file), file.size(), "\"../stage_0.safetensors\"");
  ASSERT_TRUE(WriteFileDurably(dir + "/" + kCheckpointManifest, text).ok());
  Result<CheckpointManifest> bad = ReadCheckpointManifest(dir);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("not a path inside the checkpoint directory"), std::string::npos)
      << bad.status().message();
  fs::remove_all(dir);
}

TEST(CheckpointIntegrityTest, InterruptedCheckpointLeavesThePreviousOneLoadable) {
  const std::string dir = TempDir("previous");
  WriteTinyCheckpoint(dir, 2, 0.5f);
  float before = 0;
  ASSERT_TRUE(LoadStage(dir, 0, &before).ok());
  // The next checkpoint dies while writing: stage 0's file of step 4 is
  // complete, stage 1's is still a .tmp, the manifest not yet rewritten.
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    fs::create_directories(dir + "/step_4");
    (void)WriteFileDurably(dir + "/step_4/stage_0.safetensors", "complete but not committed");
    DurableFileWriter writer(dir + "/step_4/stage_1.safetensors");
    if (writer.Open().ok()) (void)writer.Write("half");
    ::_exit(0);
  }
  int wstatus = 0;
  ASSERT_EQ(::waitpid(child, &wstatus, 0), child);
  Result<CheckpointManifest> m = ReadCheckpointManifest(dir);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->step, 2);
  float after = 0;
  ASSERT_TRUE(LoadStage(dir, 0, &after).ok());
  EXPECT_EQ(after, before);
  EXPECT_TRUE(LoadStage(dir, 1).ok());

  // The leftovers are not the checkpoint's: cleaning up removes only them.
  RemoveUnreferencedCheckpointFiles(dir, *m);
  EXPECT_FALSE(fs::exists(dir + "/step_4"));
  EXPECT_TRUE(fs::exists(dir + "/step_2/stage_1.safetensors"));
  EXPECT_TRUE(LoadStage(dir, 1).ok());

  // A completed next checkpoint replaces it; the old files go after the manifest.
  const CheckpointManifest next = WriteTinyCheckpoint(dir, 4, 1.0f);
  RemoveUnreferencedCheckpointFiles(dir, next);
  EXPECT_FALSE(fs::exists(dir + "/step_2"));
  ASSERT_TRUE(LoadStage(dir, 0, &after).ok());
  EXPECT_EQ(after, before + 0.5f);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace pw

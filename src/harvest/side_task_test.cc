// Side-task specs, the built-in registry, the CNN and image built-ins run
// in-process, and the fault-injection options.
#include "harvest/side_task.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "harvest/side_task_test_util.h"
#include "harvest/task_host.h"

namespace pw {
namespace {

TEST(SideTaskSpecTest, ParsesNamesOptionsAndPlacement) {
  Result<SideTaskSpec> a = ParseSideTaskSpec("pagerank");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->name, "pagerank");
  EXPECT_TRUE(a->args.empty());
  EXPECT_EQ(a->pinned_rank, -1);

  Result<SideTaskSpec> b = ParseSideTaskSpec("cnn@rank=1");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->name, "cnn");
  EXPECT_EQ(b->pinned_rank, 1);

  Result<SideTaskSpec> c = ParseSideTaskSpec("pagerank:scale=16,iters=20@rank=0");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->name, "pagerank");
  EXPECT_EQ(c->args, (std::vector<std::string>{"scale=16", "iters=20"}));
  EXPECT_EQ(c->pinned_rank, 0);
  EXPECT_EQ(FormatSideTaskSpec(*c), "pagerank:scale=16,iters=20");
  Result<SideTaskSpec> again = ParseSideTaskSpec(FormatSideTaskSpec(*c));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->args, c->args);

  Result<SideTaskSpec> d = ParseSideTaskSpec("image:width=64@mem=3GiB@rank=1");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->pinned_rank, 1);
  EXPECT_EQ(d->memory_limit_bytes, int64_t{3} << 30);
  EXPECT_EQ(d->args, (std::vector<std::string>{"width=64"}));
}

TEST(SideTaskSpecTest, CommandsKeepTheirOwnAtSignsAndTakeTrailingSuffixes) {
  Result<SideTaskSpec> a = ParseSideTaskCommand("mail -s hi me@example.org@rank=1@mem=300MiB");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->name, "cmd");
  EXPECT_EQ(a->command, "mail -s hi me@example.org");
  EXPECT_EQ(a->pinned_rank, 1);
  EXPECT_EQ(a->memory_limit_bytes, int64_t{300} << 20);
  Result<SideTaskSpec> b = ParseSideTaskCommand("echo a@b");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->command, "echo a@b");
  EXPECT_EQ(b->pinned_rank, -1);
  EXPECT_FALSE(ParseSideTaskCommand("yes@rank=x").ok());
  EXPECT_FALSE(ParseSideTaskCommand("  @rank=1").ok()) << "empty command";
}

TEST(SideTaskSpecTest, ErrorsNameTheBadPartAndListBuiltins) {
  struct Case {
    std::string text;
    std::vector<std::string> expect;
  } cases[] = {
      {"pagrank", {"unknown side task 'pagrank'", "did you mean 'pagerank'", "cnn, image, infer, pagerank"}},
      {"", {"missing the task name", "cnn, image, infer, pagerank"}},
      {"cnn@rnk=1", {"'@rnk=1'", "@rank=N"}},
      {"cnn@rank=-2", {"'@rank=-2'"}},
      {"cnn@mem=lots", {"'@mem=lots'", "@mem=3GiB"}},
      {"cnn@mem=12", {"'@mem=12'", "at least 1MiB"}},
      {"pagerank:scale", {"bad option 'scale'", "key=value"}},
      {"pagerank:scale=16,", {"bad option ''"}},
      {"pagerank:scael=3", {"unknown option 'scael'", "did you mean 'scale'", "edge_factor"}},
      {"cnn:batch=0", {"batch=0", "[1, 65536]"}},
      {"cnn:lr=fast", {"lr=fast", "number"}},
      {"cnn:size=18", {"size=18", "multiple of 4"}},
      {"cnn:parts=5", {"parts=5", "does not divide batch=32"}},
      {"pagerank:graph=x.txt,scale=3", {"graph=FILE", "scale"}},
      {"image:fail_after=x", {"fail_after=x"}},
      {"image:alloc=lots", {"alloc=lots", "8GiB"}},
  };
  for (const Case& c : cases) {
    Result<SideTaskSpec> spec = ParseSideTaskSpec(c.text);
    ASSERT_FALSE(spec.ok()) << c.text;
    EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument) << c.text;
    for (const std::string& e : c.expect) {
      EXPECT_NE(spec.status().message().find(e), std::string::npos)
          << c.text << " -> " << spec.status().message() << " (expected '" << e << "')";
    }
  }
}

TEST(SideTaskSpecTest, RegistryListsEveryBuiltinWithUnitAndWorkingDefaults) {
  EXPECT_EQ(BuiltinSideTaskNames(), (std::vector<std::string>{"cnn", "image", "infer", "pagerank"}));
  const std::map<std::string, std::string> units = {
      {"cnn", "images"}, {"image", "pixels"}, {"infer", "tokens"}, {"pagerank", "edges"}};
  for (const BuiltinSideTaskInfo& info : BuiltinSideTaskInfos()) {
    EXPECT_EQ(info.unit, units.at(info.name));
    EXPECT_FALSE(info.options.empty());
    SideTaskSpec spec;
    spec.name = info.name;
    if (info.name == "infer") {  // the only built-in with required options: its files
      const std::string dir = std::filesystem::temp_directory_path().string();
      spec.args = {"prompts=" + dir + "/prompts.jsonl", "out=" + dir + "/out.jsonl"};
    }
    Result<std::unique_ptr<SideTask>> task = MakeBuiltinSideTask(spec);
    ASSERT_TRUE(task.ok()) << info.name << ": " << task.status().ToString();
    EXPECT_EQ((*task)->name(), info.name);
    EXPECT_EQ((*task)->unit(), info.unit);
  }
  EXPECT_STREQ(SideTaskStateName(SideTaskState::kPaused), "PAUSED");
  EXPECT_STREQ(SideTaskStateName(SideTaskState::kStopped), "STOPPED");
}

TEST(CnnTaskTest, LossDecreasesOverSteps) {
  std::unique_ptr<SideTask> task = MakeTestTask("cnn:seed=3");
  ASSERT_NE(task, nullptr);
  ASSERT_TRUE(task->Setup().ok());
  double first = 0, last = 0;
  const int steps = 80;
  for (int i = 0; i < steps; ++i) {
    Result<double> w = task->Step();
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    EXPECT_EQ(*w, 32);  // one minibatch of images
    const double loss = MetricOf(*task, "loss");
    if (i < 5) first += loss / 5;
    if (i >= steps - 5) last += loss / 5;
  }
  EXPECT_NEAR(first, std::log(10.0), 0.6) << "starts near chance for 10 classes";
  EXPECT_LT(last, 0.5 * first) << "first " << first << " last " << last;
}

TEST(CnnTaskTest, SameSeedSameLoss) {
  std::unique_ptr<SideTask> a = MakeTestTask("cnn:seed=5,batch=8"), b = MakeTestTask("cnn:seed=5,batch=8");
  ASSERT_TRUE(a->Setup().ok());
  ASSERT_TRUE(b->Setup().ok());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(a->Step().ok());
    ASSERT_TRUE(b->Step().ok());
  }
  EXPECT_DOUBLE_EQ(MetricOf(*a, "loss"), MetricOf(*b, "loss"));
}

// A minibatch run in parts (as the host runs it when a bubble is shorter
// than a step) accumulates the whole minibatch's gradient: the model trains
// as with whole steps, up to the order of fp32 sums.
TEST(CnnTaskTest, AStepCutIntoPartsTrainsAsTheWholeStep) {
  std::unique_ptr<SideTask> whole = MakeTestTask("cnn:seed=7,batch=16,parts=4");
  std::unique_ptr<SideTask> cut = MakeTestTask("cnn:seed=7,batch=16,parts=4");
  ASSERT_TRUE(whole->Setup().ok());
  ASSERT_TRUE(cut->Setup().ok());
  EXPECT_EQ(cut->StepParts(), 4);
  for (int i = 0; i < 6; ++i) {
    Result<double> w = whole->Step();
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    EXPECT_EQ(*w, 16);
    double images = 0;
    for (int parts : {1, 2, 1}) {
      Result<double> p = cut->StepPart(parts);
      ASSERT_TRUE(p.ok()) << p.status().ToString();
      EXPECT_EQ(*p, 4 * parts) << "a part is batch / parts images";
      images += *p;
    }
    EXPECT_EQ(images, 16);
    EXPECT_EQ(MetricOf(*cut, "minibatches"), i + 1) << "one update per minibatch, after its last part";
    EXPECT_NEAR(MetricOf(*cut, "loss"), MetricOf(*whole, "loss"), 1e-5 * MetricOf(*whole, "loss"));
  }
  // Misuse is refused: more parts than are left, none, a whole step mid-step.
  ASSERT_TRUE(cut->StepPart(3).ok());
  EXPECT_FALSE(cut->StepPart(2).ok());
  EXPECT_FALSE(cut->StepPart(0).ok());
  EXPECT_FALSE(cut->Step().ok());
  EXPECT_TRUE(cut->StepPart(1).ok());
  EXPECT_TRUE(cut->Step().ok()) << "between steps again";
}

TEST(ImageTaskTest, CountsPixelsOfEveryImageProcessed) {
  std::unique_ptr<SideTask> task = MakeTestTask("image:width=64,height=48,count=3,per_step=2");
  ASSERT_NE(task, nullptr);
  ASSERT_TRUE(task->Setup().ok());
  double work = 0;
  for (int i = 0; i < 5; ++i) {
    Result<double> w = task->Step();
    ASSERT_TRUE(w.ok());
    EXPECT_EQ(*w, 2 * 64 * 48);
    work += *w;
  }
  EXPECT_EQ(work, 10 * 64 * 48);
  EXPECT_EQ(MetricOf(*task, "images"), 10);
  EXPECT_GT(MetricOf(*task, "checksum"), 0) << "generated shapes have edges";
  // Deterministic: a second task with the same seed ends on the same output.
  std::unique_ptr<SideTask> twin = MakeTestTask("image:width=64,height=48,count=3,per_step=2");
  ASSERT_TRUE(twin->Setup().ok());
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(twin->Step().ok());
  EXPECT_EQ(MetricOf(*twin, "checksum"), MetricOf(*task, "checksum"));
  // A step cuts image by image.
  EXPECT_EQ(task->StepParts(), 2);
  Result<double> part = task->StepPart(1);
  ASSERT_TRUE(part.ok());
  EXPECT_EQ(*part, 64 * 48);
  EXPECT_EQ(MetricOf(*task, "images"), 11);
}

TEST(ImageTaskTest, ReadsNetpbmDirectoryAndReportsBadFiles) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("pw_image_task_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream pgm(dir / "a.pgm", std::ios::binary);
    pgm << "P5\n# comment\n20 10\n255\n";
    for (int i = 0; i < 200; ++i) pgm.put(static_cast<char>(i % 7 == 0 ? 255 : 0));
    std::ofstream ppm(dir / "b.ppm", std::ios::binary);
    ppm << "P6 30 5 255\n";
    for (int i = 0; i < 450; ++i) ppm.put(static_cast<char>(i));
    std::ofstream(dir / "notes.txt") << "ignored";
  }
  std::unique_ptr<SideTask> task = MakeTestTask("image:dir=" + dir.string() + ",scale=1");
  ASSERT_NE(task, nullptr);
  Status setup = task->Setup();
  ASSERT_TRUE(setup.ok()) << setup.ToString();
  Result<double> w1 = task->Step(), w2 = task->Step(), w3 = task->Step();
  ASSERT_TRUE(w1.ok() && w2.ok() && w3.ok());
  EXPECT_EQ(*w1, 200);  // a.pgm (sorted first), then b.ppm, then a.pgm again
  EXPECT_EQ(*w2, 150);
  EXPECT_EQ(*w3, 200);

  std::ofstream(dir / "c.ppm", std::ios::binary) << "P6 30 5 255\nshort";
  std::unique_ptr<SideTask> bad = MakeTestTask("image:dir=" + dir.string());
  Status s = bad->Setup();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("c.ppm"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("truncated"), std::string::npos) << s.message();
  std::filesystem::remove_all(dir);

  std::unique_ptr<SideTask> missing = MakeTestTask("image:dir=/nonexistent/images");
  Status m = missing->Setup();
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.message().find("/nonexistent/images"), std::string::npos) << m.message();
}

TEST(FaultInjectionTest, FailAfterReturnsAnErrorAtTheChosenStep) {
  std::unique_ptr<SideTask> task = MakeTestTask("image:width=16,height=16,fail_after=2");
  ASSERT_TRUE(task->Setup().ok());
  EXPECT_TRUE(task->Step().ok());
  EXPECT_TRUE(task->Step().ok());
  Result<double> third = task->Step();
  ASSERT_FALSE(third.ok());
  EXPECT_NE(third.status().message().find("injected failure at step 3"), std::string::npos)
      << third.status().message();
}

TEST(SideTaskHostArgsTest, ArgvRoundTripsAndRejectsJunk) {
  SideTaskHostArgs args{"pagerank:scale=12", 3, 1.5};
  Result<SideTaskHostArgs> parsed = ParseSideTaskHostArgv(SideTaskHostArgv(args));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->spec, args.spec);
  EXPECT_EQ(parsed->control_fd, 3);
  EXPECT_EQ(parsed->margin, 1.5);
  EXPECT_FALSE(ParseSideTaskHostArgv({"side-task", "host"}).ok());
  EXPECT_FALSE(ParseSideTaskHostArgv({"side-task", "host", "--spec", "cnn", "--margin", "-1"}).ok());
  EXPECT_FALSE(ParseSideTaskHostArgv({"side-task", "host", "--spec", "cnn", "--bogus", "1"}).ok());
}

}  // namespace
}  // namespace pw

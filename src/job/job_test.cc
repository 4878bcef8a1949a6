// Jobs as data: every field survives the JSON job file exactly, --set and
// TOML tables reach every field by name with clear errors, ranges hold for
// every reader.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "job/fields_json.h"
#include "job/fields_toml.h"
#include "job/infer_job.h"
#include "job/train_job.h"
#include "job/train_plan.h"

namespace pw {
namespace {

// A job whose every field differs from its default, with doubles that
// need all 17 digits (--lr 5e-7 once reached the ranks as 0).
TrainJob Unusual() {
  TrainJob j;
  j.config = "/models/m.toml";
  j.set = {"model.n_layers=6", "train.steps=9"};
  j.pp = 3;
  j.dp = 2;
  j.schedule = "zb-h1";
  j.chunks = 2;
  j.microbatches = 6;
  j.microbatch_size = 5;
  j.steps = 77;
  j.seed = 18446744073709551557ull;
  j.data = "/data/corpus.txt";
  j.lr = 5e-7;
  j.grad_clip = 0.1 + 0.2;
  j.on_nonfinite = "skip";
  j.weight_decay = 1.0 / 3.0;
  j.warmup = 7;
  j.decay_steps = 100;
  j.eval_every = 5;
  j.eval_batches = 3;
  j.layers_per_stage = "1,2,1";
  j.metrics_out = "/tmp/m.jsonl";
  j.checkpoint_dir = "/tmp/ck";
  j.checkpoint_every = 11;
  j.resume = "/tmp/old";
  j.trace = "/tmp/t.json";
  j.profile_out = "/tmp/p.json";
  j.loss_curve = "/tmp/l.svg";
  j.side_task = {"cnn", "pagerank:scale=8@rank=1"};
  j.side_task_cmd = {"sha256sum /etc/hosts@rank=0"};
  j.harvest_policy = "idle";
  j.harvest_step_margin = 1.75;
  j.harvest_paired = 3;
  j.recompute_paired = 4;
  j.schedule_costs = "/tmp/best.json";
  j.timeout = 30;
  j.collective_timeout = 7;
  j.max_restarts = 2;
  j.pin_cpus = false;
  j.receive_window = 7;
  j.progress = true;
  j.plan_why = "schedule auto: zb-h1";
  j.model_dir = "/tmp/hf-model";
  j.request_json = R"({"schedule": "auto"})";
  j.model.d_model = 64;
  j.model.n_layers = 6;
  j.model.dropout = 0.125;
  return j;
}

TEST(JobFields, TrainJobRoundTripsEveryFieldExactly) {
  const TrainJob original = Unusual();
  Result<TrainJob> back = TrainJobFromJson(TrainJobToJson(original), "job.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(FieldsToJson(*back), FieldsToJson(original));
  EXPECT_EQ(back->lr, 5e-7);
  EXPECT_EQ(back->grad_clip, 0.1 + 0.2);
  EXPECT_EQ(back->seed, 18446744073709551557ull);
  EXPECT_EQ(back->model, original.model);
  // Every field is visited: a job that differs from the default in every
  // field has no field equal to the default in the JSON.
  const nlohmann::json defaults = FieldsToJson(TrainJob{});
  const nlohmann::json unusual = FieldsToJson(original);
  for (auto it = defaults.begin(); it != defaults.end(); ++it) {
    EXPECT_NE(unusual[it.key()], it.value()) << it.key() << " is not set by Unusual()";
  }
}

// The planner's answer is applied to a copy: the request keeps `auto`, the
// job the ranks run has the concrete plan, and the request rides along.
TEST(TrainPlanTest, ApplyPlanLeavesTheRequestAndRecordsIt) {
  TrainJob request;
  request.schedule = "auto";
  request.layers_per_stage = "auto";
  request.pp = 2;
  ResolvedTrainPlan plan = PlanOf(request);
  EXPECT_EQ(plan.schedule, "auto");
  EXPECT_EQ(plan.why, "");
  plan.schedule = "looped-bfs";
  plan.layers_per_stage = "1,3,3,1";
  plan.microbatches = 8;
  plan.why = "schedule auto: measured";
  const TrainJob ran = ApplyPlan(request, plan);
  EXPECT_EQ(request.schedule, "auto");
  EXPECT_EQ(ran.schedule, "looped-bfs");
  EXPECT_EQ(ran.layers_per_stage, "1,3,3,1");
  EXPECT_EQ(ran.microbatches, 8);
  EXPECT_EQ(ran.plan_why, "schedule auto: measured");
  const nlohmann::json asked = nlohmann::json::parse(ran.request_json);
  EXPECT_EQ(asked["schedule"], "auto");
  EXPECT_EQ(asked["layers_per_stage"], "auto");
  EXPECT_EQ(FieldsToJson(PlanOf(ran)), FieldsToJson(plan));
  // Applying again (a worker's job file planned once more) keeps the original request.
  const TrainJob again = ApplyPlan(ran, PlanOf(ran));
  EXPECT_EQ(again.request_json, ran.request_json);
}

TEST(JobFields, JobFileMakesPathsAbsolute) {
  TrainJob j;
  j.metrics_out = "out/m.jsonl";
  j.schedule = "relative-is-not-a-path.pipe";  // a family name or file: left alone
  Result<TrainJob> back = TrainJobFromJson(TrainJobToJson(j), "job.json");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->metrics_out.front(), '/');
  EXPECT_NE(back->metrics_out.find("out/m.jsonl"), std::string::npos);
}

TEST(JobFields, JobFileErrorsNameTheKey) {
  Result<TrainJob> bad = TrainJobFromJson(R"({"train": {"pp": "two"}, "model": "[model]\n"})", "j.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("j.json: pp"), std::string::npos) << bad.status().ToString();
  bad = TrainJobFromJson(R"({"train": {"ppp": 2}, "model": "[model]\n"})", "j.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'ppp'"), std::string::npos);
  bad = TrainJobFromJson(R"({"train": {"pp": 0}, "model": "[model]\n"})", "j.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("out of range"), std::string::npos);
  EXPECT_FALSE(TrainJobFromJson("not json", "j.json").ok());
}

TEST(JobFields, SetReachesFieldsByName) {
  TrainJob j;
  ASSERT_TRUE(SetFieldFromText(j, "train", "lr", "5e-7").ok());
  EXPECT_EQ(j.lr, 5e-7);
  ASSERT_TRUE(SetFieldFromText(j, "train", "side_task", "cnn").ok());
  ASSERT_TRUE(SetFieldFromText(j, "train", "side_task", "image").ok());
  EXPECT_EQ(j.side_task, (std::vector<std::string>{"cnn", "image"}));
  Status typo = SetFieldFromText(j, "train", "stepz", "3");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.message().find("did you mean 'steps'"), std::string::npos) << typo.ToString();
  Status nan = SetFieldFromText(j, "train", "steps", "many");
  ASSERT_FALSE(nan.ok());
  EXPECT_NE(nan.message().find("not a whole number"), std::string::npos);
  Status range = SetFieldFromText(j, "train", "pp", "0");
  ASSERT_FALSE(range.ok());
  EXPECT_EQ(j.pp, 2);  // unchanged on error
  // Plumbing and flag-only fields are not --set keys.
  EXPECT_FALSE(SetFieldFromText(j, "train", "progress", "true").ok());
  EXPECT_FALSE(SetFieldFromText(j, "train", "config", "x.toml").ok());
}

TEST(JobFields, TrainTableSetsDefaultsUnlessGivenOnTheCommandLine) {
  const std::string toml = "[model]\nd_model = 64\n[train]\nlr = 2e-3\nsteps = 50\nside_task = [\"cnn\"]\n";
  TrainJob j;
  j.steps = 7;  // as if --steps 7 was given
  Status s = ApplyTrainTable(j, toml, "m.toml", [](std::string_view key) { return key == "steps"; });
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(j.lr, 2e-3);
  EXPECT_EQ(j.steps, 7);
  EXPECT_EQ(j.side_task, std::vector<std::string>{"cnn"});
  Status bad = ApplyTrainTable(j, "[train]\nlrr = 1\n", "m.toml", nullptr);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("m.toml:2:1"), std::string::npos) << bad.ToString();
  EXPECT_NE(bad.message().find("did you mean 'lr'"), std::string::npos) << bad.ToString();
  EXPECT_TRUE(ApplyTrainTable(j, "[model]\nd_model = 8\n", "m.toml", nullptr).ok());  // no table: fine
}

TEST(JobFields, ResolveAppliesConfigFileThenSets) {
  TrainJob j;
  j.config = std::string(PW_SOURCE_DIR) + "/examples/small.toml";
  j.set = {"model.n_layers=2", "train.microbatches=3"};
  Status s = ResolveTrainJob(j, [](std::string_view) { return false; });
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(j.model.d_model, 256);
  EXPECT_EQ(j.model.n_layers, 2);
  EXPECT_EQ(j.microbatches, 3);
  j.set = {"optimizer.lr=1"};
  EXPECT_FALSE(ResolveTrainJob(j, [](std::string_view) { return false; }).ok());
}

TEST(JobFields, InferJobRoundTrips) {
  InferJob j;
  j.prompts = "p.jsonl";
  j.out = "/tmp/o.jsonl";
  j.temperature = 0.7;
  j.top_p = 0.9;
  j.max_batch_tokens = int64_t{1} << 20;
  j.set = {"model.n_layers=2"};
  j.predict_crossover = true;
  j.collective_timeout = 9;
  Result<InferJob> back = InferJobFromJson(InferJobToJson(j), "i.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->temperature, 0.7);
  EXPECT_EQ(back->max_batch_tokens, int64_t{1} << 20);
  EXPECT_EQ(back->set, j.set);
  EXPECT_TRUE(back->predict_crossover);
  EXPECT_EQ(back->collective_timeout, 9);
  EXPECT_EQ(back->prompts.front(), '/');
  EXPECT_FALSE(InferJobFromJson(R"({"train": {}})", "i.json").ok());
}

TEST(JobFields, CheckFieldRangesCatchesWhatBypassedTheFlags) {
  TrainJob j;
  EXPECT_TRUE(CheckFieldRanges(j).ok());
  j.microbatch_size = 0;
  Status s = CheckFieldRanges(j);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("--microbatch-size"), std::string::npos) << s.ToString();
}

// A choice field's values live in its declaration: --set, TOML, job files
// and the flags refuse any other value, naming the values and the closest.
TEST(JobFields, ChoiceFieldsRefuseOtherValuesForEveryReader) {
  InferJob j;
  EXPECT_TRUE(CheckFieldRanges(j).ok()) << "every default is one of its field's choices";
  Status typo = SetFieldFromText(j, "infer", "mode", "wass");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.message().find("'wass' is not a value of mode (did you mean 'was'?); use one of replicate, was, "
                                "cas, shared, auto"),
            std::string::npos)
      << typo.message();
  EXPECT_EQ(j.mode, "auto") << "a refused value leaves the job unchanged";
  ASSERT_TRUE(SetFieldFromText(j, "infer", "mode", "cas").ok());
  EXPECT_EQ(j.mode, "cas");

  j.kv_dtype = "bf16";  // as a job file could carry it
  Status file = CheckFieldRanges(j);
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.message().rfind("--kv-dtype: 'bf16' is not a value of kv_dtype", 0), 0u) << file.message();

  TrainJob t;
  t.on_nonfinite = "ignore";
  Status train = CheckFieldRanges(t);
  ASSERT_FALSE(train.ok());
  EXPECT_NE(train.message().find("use one of stop, skip"), std::string::npos) << train.message();

  const FieldInfo split{.name = "split", .help = "", .choices = "queue round-robin"};
  EXPECT_EQ(FieldChoices(split), (std::vector<std::string_view>{"queue", "round-robin"}));
  EXPECT_TRUE(CheckFieldChoice("round-robin", split, "--split").ok());
  Status far = CheckFieldChoice("zzzzzzzzzzzz", split, "--split");
  ASSERT_FALSE(far.ok());
  EXPECT_EQ(far.message().find("did you mean"), std::string::npos) << "no suggestion for a value near none: "
                                                                    << far.message();
}

// One rule for "does this job need the harvest layer", shared by the CLI
// (builds without it refuse) and the harvest layer (builds with it start it).
TEST(JobFields, WantsHarvestWhenAnyHarvestFieldIsSet) {
  EXPECT_FALSE(WantsHarvest(TrainJob{}));
  TrainJob task;
  task.side_task = {"cnn"};
  EXPECT_TRUE(WantsHarvest(task));
  TrainJob command;
  command.side_task_cmd = {"true"};
  EXPECT_TRUE(WantsHarvest(command));
  TrainJob policy;
  policy.harvest_policy = "idle";
  EXPECT_TRUE(WantsHarvest(policy));
  TrainJob paired;
  paired.harvest_paired = 2;
  EXPECT_TRUE(WantsHarvest(paired));
}

}  // namespace
}  // namespace pw

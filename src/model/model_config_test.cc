#include "model/model_config.h"

#include <gtest/gtest.h>

#include <string>

namespace pw {
namespace {

const std::string kSourceDir = PW_SOURCE_DIR;

TEST(ModelConfigTest, DefaultsAreTinyAndValid) {
  ModelConfig config;
  EXPECT_TRUE(ValidateModelConfig(config).ok());
  EXPECT_EQ(config.vocab_size, 256);
  EXPECT_EQ(config.d_model, 128);
  EXPECT_EQ(config.n_layers, 4);
}

TEST(ModelConfigTest, LoadsBundledExamples) {
  Result<ModelConfig> tiny = LoadModelConfig(kSourceDir + "/examples/tiny.toml");
  ASSERT_TRUE(tiny.ok()) << tiny.status().ToString();
  EXPECT_EQ(*tiny, ModelConfig{});  // tiny.toml spells out the defaults
  Result<ModelConfig> small = LoadModelConfig(kSourceDir + "/examples/small.toml");
  ASSERT_TRUE(small.ok()) << small.status().ToString();
  EXPECT_EQ(small->d_model, 256);
  EXPECT_EQ(small->n_layers, 8);
  EXPECT_EQ(small->n_heads, 8);
  EXPECT_EQ(small->seq_len, 128);
  EXPECT_EQ(CountParameters(*small), 6482432);
}

TEST(ModelConfigTest, MissingKeysKeepDefaultsAndOtherTablesAreIgnored) {
  Result<ModelConfig> config =
      ParseModelConfig("[train]\nsteps = 10\n[model]\nd_model = 64\ndropout = 0\n", "x.toml");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->d_model, 64);
  EXPECT_EQ(config->dropout, 0.0);  // an integer is accepted for a float key
  EXPECT_EQ(config->n_layers, 4);
}

TEST(ModelConfigTest, MissingFileIsNotFound) {
  Result<ModelConfig> config = LoadModelConfig("/no/such/model.toml");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), StatusCode::kNotFound);
  EXPECT_NE(config.status().message().find("/no/such/model.toml"), std::string::npos);
}

TEST(ModelConfigTest, SyntaxErrorNamesLineAndColumn) {
  Result<ModelConfig> config = ParseModelConfig("[model]\nd_model = = 3\n", "m.toml");
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("m.toml:2:"), std::string::npos)
      << config.status().message();
  EXPECT_NE(config.status().message().find("TOML syntax error"), std::string::npos);
}

TEST(ModelConfigTest, UnknownKeyIsNamedWithSuggestionAndValidKeys) {
  Result<ModelConfig> config = ParseModelConfig("[model]\nd_modle = 64\n", "m.toml");
  ASSERT_FALSE(config.ok());
  const std::string& m = config.status().message();
  EXPECT_NE(m.find("m.toml:2:1"), std::string::npos) << m;
  EXPECT_NE(m.find("unknown key 'model.d_modle'"), std::string::npos) << m;
  EXPECT_NE(m.find("did you mean 'd_model'"), std::string::npos) << m;
  EXPECT_NE(m.find("vocab_size, d_model, n_layers, n_heads, seq_len"), std::string::npos) << m;
}

TEST(ModelConfigTest, WrongTypeNamesKeyAndTypes) {
  Result<ModelConfig> config = ParseModelConfig("[model]\nn_layers = \"four\"\n", "m.toml");
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("m.toml:2:12: model.n_layers must be an integer, "
                                           "got a string"),
            std::string::npos)
      << config.status().message();
  config = ParseModelConfig("[model]\nbias = 1\n", "m.toml");
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("model.bias must be true or false"),
            std::string::npos);
}

TEST(ModelConfigTest, MissingModelTableIsAnError) {
  Result<ModelConfig> config = ParseModelConfig("[train]\nsteps = 3\n", "m.toml");
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("no [model] table"), std::string::npos);
  config = ParseModelConfig("model = 3\n", "m.toml");
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("must be a table"), std::string::npos);
}

TEST(ModelConfigTest, ValidationNamesEveryViolatedConstraint) {
  ModelConfig config;
  config.d_model = 100;
  config.n_heads = 3;
  config.seq_len = 0;
  config.dropout = 1.0;
  Status status = ValidateModelConfig(config);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  const std::string& m = status.message();
  EXPECT_NE(m.find("model.d_model (100) must be divisible by model.n_heads (3)"),
            std::string::npos) << m;
  EXPECT_NE(m.find("model.seq_len must be positive, got 0"), std::string::npos) << m;
  EXPECT_NE(m.find("model.dropout must be in [0, 1)"), std::string::npos) << m;

  Result<ModelConfig> parsed =
      ParseModelConfig("[model]\nd_model = 64\nn_heads = 5\n", "m.toml");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("m.toml: invalid model config"), std::string::npos);
}

TEST(ModelConfigTest, OverridesSetEachType) {
  ModelConfig config;
  EXPECT_TRUE(ApplyOverride(config, "model.d_model=256").ok());
  EXPECT_TRUE(ApplyOverride(config, "model.dropout = 0.1").ok());
  EXPECT_TRUE(ApplyOverride(config, "model.bias=false").ok());
  EXPECT_EQ(config.d_model, 256);
  EXPECT_DOUBLE_EQ(config.dropout, 0.1);
  EXPECT_FALSE(config.bias);
}

TEST(ModelConfigTest, OverrideErrors) {
  ModelConfig config;
  Status s = ApplyOverride(config, "model.widht=3");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("unknown key 'model.widht'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("valid [model] keys: vocab_size, d_model"), std::string::npos);

  s = ApplyOverride(config, "train.steps=3");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("unknown section 'train'"), std::string::npos) << s.message();

  s = ApplyOverride(config, "model.n_layers=4x");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("--set model.n_layers=4x: '4x' is not a whole number"), std::string::npos)
      << s.message();

  // A key's declared range holds as it is set.
  s = ApplyOverride(config, "model.n_layers=0");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("--set model.n_layers=0: 0 is out of range; n_layers must be in [1, "),
            std::string::npos)
      << s.message();
  s = ApplyOverride(config, "model.dropout=nan");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(config.dropout, 0.0) << "a refused value leaves the config unchanged";

  s = ApplyOverride(config, "model.n_layers");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("expected section.key=value"), std::string::npos);

  s = ApplyOverride(config, "d_model=3");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("key must name its section, e.g. model.d_model"), std::string::npos);

  s = ApplyOverride(config, "model.n_layers=99999999999");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("out of range"), std::string::npos);
  EXPECT_EQ(config, ModelConfig{});  // failed overrides change nothing
}

TEST(ModelConfigTest, ApplyOverridesValidatesAtTheEnd) {
  ModelConfig config;
  // n_heads=6 alone is invalid with d_model 128 (128 % 6 != 0); the pair is valid.
  EXPECT_TRUE(ApplyOverrides(config, {"model.n_heads=6", "model.d_model=96"}).ok());
  Status s = ApplyOverrides(config, {"model.n_heads=5"});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("after --set overrides: invalid model config"), std::string::npos)
      << s.message();
}

TEST(ModelConfigTest, FormatRoundTrips) {
  ModelConfig config;
  config.d_model = 96;
  config.n_heads = 6;
  config.dropout = 0.1;
  config.init_std = 0.02;
  config.bias = false;
  const std::string text = FormatModelConfig(config);
  EXPECT_NE(text.find("dropout = 0.1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("bias = false\n"), std::string::npos) << text;
  Result<ModelConfig> back = ParseModelConfig(text, "formatted");
  ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << FormatModelConfig(config);
  EXPECT_EQ(*back, config);
}

}  // namespace
}  // namespace pw

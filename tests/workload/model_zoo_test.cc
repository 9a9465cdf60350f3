// Built-in models against published parameter counts; lookup; custom JSON models and errors.
#include "workload/model_zoo.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace powertrain::workload {
namespace {

ModelSpec must_find(const char* name) {
  auto model = find_model(name);
  EXPECT_TRUE(model.ok()) << (model.ok() ? "" : model.error().message);
  return model.ok() ? *model : ModelSpec{};
}

TEST(ModelZooTest, EveryBuiltinIsValidAndSourced) {
  EXPECT_EQ(builtin_models().size(), 13u);
  for (const ModelSpec& m : builtin_models()) {
    core::Status valid = validate_model(m, m.name);
    EXPECT_TRUE(valid.ok()) << m.name << ": " << (valid.ok() ? "" : valid.error().message);
    EXPECT_FALSE(m.source.empty()) << m.name;
  }
}

// Exact counts published for the Hugging Face checkpoints.
TEST(ModelZooTest, ParameterCountsMatchHuggingFaceCheckpoints) {
  EXPECT_EQ(parameter_count(must_find("llama3.3-70b")), 70'553'706'496.0);
  EXPECT_EQ(parameter_count(must_find("llama3.2-3b")), 3'212'749'824.0);
  EXPECT_EQ(parameter_count(must_find("t5-3b")), 2'851'598'336.0);
  EXPECT_EQ(parameter_count(must_find("bloom-3b")), 3'002'557'440.0);
  EXPECT_EQ(parameter_count(must_find("bloom-7b1")), 7'069'016'064.0);
  EXPECT_EQ(parameter_count(must_find("bloom-176b")), 176'247'271'424.0);
  // Qwen3-1.7B: 1.7 B with the tied output layer counted once; 1.4 B without embeddings.
  const ModelSpec qwen = must_find("qwen3-1.7b");
  EXPECT_EQ(parameter_count(qwen), 1'720'574'976.0);
  EXPECT_NEAR(parameter_count(qwen) - double(qwen.vocab_size) * qwen.hidden_size, 1.4e9, 0.01e9);
}

// Perseus's Merak loader prints these counts (GPT-2 code with a 1024-row position table; the
// zoo uses GPT-3's 2048) and 1276.40 M for bert-huge-uncased.
TEST(ModelZooTest, ParameterCountsMatchPerseusMerakLoader) {
  const std::pair<const char*, double> merak_millions[] = {
      {"gpt3-1.3b", 1313.63}, {"gpt3-2.7b", 2648.93},   {"gpt3-6.7b", 6654.21},
      {"gpt3-13b", 12848.14}, {"gpt3-175b", 174591.68},
  };
  for (const auto& [name, millions] : merak_millions) {
    const ModelSpec m = must_find(name);
    const double with_1024_positions = parameter_count(m) - 1024.0 * m.hidden_size;
    EXPECT_NEAR(with_1024_positions / 1e6, millions, 0.006) << name;
  }
  EXPECT_NEAR(parameter_count(must_find("bert-huge-1.3b")) / 1e6, 1276.40, 0.006);
}

TEST(ModelZooTest, ParameterCountsMatchNominalSizes) {
  const std::pair<const char*, double> nominal[] = {
      {"gpt3-1.3b", 1.3e9}, {"gpt3-2.7b", 2.7e9},  {"gpt3-6.7b", 6.7e9}, {"gpt3-13b", 13e9},
      {"gpt3-175b", 175e9}, {"bloom-176b", 176e9}, {"t5-3b", 2.9e9},     {"llama3.3-70b", 70.6e9},
  };
  for (const auto& [name, size] : nominal) {
    EXPECT_NEAR(parameter_count(must_find(name)) / size, 1.0, 0.03) << name;
  }
}

TEST(ModelZooTest, LookupIsCaseInsensitiveAndKnowsPerseusNames) {
  EXPECT_EQ(must_find("GPT3-175B").num_layers, 96);
  EXPECT_EQ(must_find("Llama3.3-70B").num_kv_heads, 8);
  EXPECT_EQ(must_find("gpt3-xl").name, "gpt3-1.3b");
  EXPECT_EQ(must_find("bert-huge-uncased").name, "bert-huge-1.3b");
  const ModelSpec t5 = must_find("t5-3b");
  EXPECT_EQ(t5.num_encoder_layers, 24);
  EXPECT_EQ(t5.num_decoder_layers(), 24);
  EXPECT_EQ(t5.q_dim(), 4096);  // 32 heads × 128, wider than d_model
}

TEST(ModelZooTest, UnknownNameListsEveryKnownModel) {
  auto model = find_model("gpt4");
  ASSERT_FALSE(model.ok());
  const std::string& message = model.error().message;
  EXPECT_NE(message.find("unknown model 'gpt4'"), std::string::npos) << message;
  for (const ModelSpec& m : builtin_models()) {
    EXPECT_NE(message.find(m.name), std::string::npos) << m.name;
  }
}

constexpr const char* kTinyJson = R"({
  "name": "tiny", "architecture": "decoder", "num_layers": 4, "hidden_size": 256,
  "num_heads": 8, "num_kv_heads": 2, "ffn_hidden_size": 688, "gated_mlp": true,
  "vocab_size": 1000, "default_seq_len": 512, "position": "rotary", "norm": "rmsnorm",
  "linear_bias": false, "dropout": false, "tied_embeddings": false
})";

TEST(ModelZooTest, ParsesCustomJsonWithDefaults) {
  auto model = parse_model_json(kTinyJson, "tiny.json");
  ASSERT_TRUE(model.ok()) << model.error().message;
  EXPECT_EQ(model->name, "tiny");
  EXPECT_EQ(model->head_dim, 32);  // hidden / heads
  EXPECT_EQ(model->kv_dim(), 64);
  EXPECT_TRUE(model->gated_mlp);
  EXPECT_FALSE(model->tied_embeddings);
  EXPECT_EQ(model->norm, NormKind::kRmsNorm);
  // 4 × (2·256·256 + 2·256·64 + 2·256 norms + 3·256·688) + 2 · 1000·256 + 256 final norm.
  EXPECT_EQ(parameter_count(*model),
            4.0 * (2 * 256 * 256 + 2 * 256 * 64 + 512 + 3 * 256 * 688) + 2 * 256000.0 + 256);
}

TEST(ModelZooTest, ReadsJsonFileAndResolvesPaths) {
  // The process id keeps the copy in powertrain_sanitized_tests, run beside this one, apart.
  const std::string path =
      ::testing::TempDir() + "/workload_tiny_model_" + std::to_string(::getpid()) + ".json";
  std::ofstream(path) << kTinyJson;
  auto model = resolve_model(path);
  ASSERT_TRUE(model.ok()) << model.error().message;
  EXPECT_EQ(model->num_layers, 4);
  std::remove(path.c_str());
  auto missing = resolve_model(path);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find(path), std::string::npos);
}

std::string json_error(const std::string& text) {
  auto model = parse_model_json(text, "my.json");
  return model.ok() ? "(parsed)" : model.error().message;
}

TEST(ModelZooTest, CustomJsonErrorsNameTheFileAndField) {
  const std::string base =
      R"("architecture": "decoder", "num_layers": 2, "num_heads": 4, "ffn_hidden_size": 64,
         "vocab_size": 100, "default_seq_len": 32)";
  EXPECT_EQ(json_error("{" + base + R"(, "hidden_size": -5})"),
            "my.json: field 'hidden_size' must be a positive integer, got -5");
  EXPECT_EQ(json_error("{" + base + R"(, "hidden_size": 16.5})"),
            "my.json: field 'hidden_size' must be a positive integer, got 16.5");
  EXPECT_EQ(json_error("{" + base + "}"),
            "my.json: field 'hidden_size' is missing (a positive integer is required)");
  EXPECT_EQ(json_error("{" + base + R"(, "hidden_size": 16, "hiden": 3})"),
            "my.json: unknown field 'hiden' (fields are those of ModelSpec, see "
            "docs/workload.md)");
  EXPECT_EQ(json_error("{" + base + R"(, "hidden_size": 16, "gated_mlp": "yes"})"),
            "my.json: field 'gated_mlp' must be true or false, got \"yes\"");
  EXPECT_EQ(json_error("{" + base + R"(, "hidden_size": 16, "num_kv_heads": 3})"),
            "my.json: field 'num_kv_heads' must divide num_heads = 4, got 3");
  EXPECT_EQ(json_error("{" + base + R"(, "hidden_size": 18})"),
            "my.json: field 'head_dim' is missing and hidden_size 18 is not a multiple of "
            "num_heads 4");
  EXPECT_NE(json_error(R"({"architecture": "rnn"})")
                .find("my.json: field 'architecture' must be one of decoder, encoder, "
                      "encoder-decoder, got \"rnn\""),
            std::string::npos);
  EXPECT_EQ(json_error(R"({"architecture": "encoder-decoder", "num_layers": 4,
      "hidden_size": 16, "num_heads": 4, "ffn_hidden_size": 64, "vocab_size": 100,
      "default_seq_len": 32, "num_encoder_layers": 4})"),
            "my.json: field 'num_encoder_layers' must be between 1 and num_layers - 1 = 3 for "
            "an encoder-decoder model, got 4");
  EXPECT_EQ(json_error("[1, 2]"), "my.json: expected a JSON object with model fields, got [1,2]");
  EXPECT_EQ(json_error(R"({"a": {"b": {"c": {"d": {"e": 1}}}}})"),
            "my.json: JSON nested deeper than 4 levels");
  const std::string invalid = json_error("{\"num_layers\": }");
  EXPECT_EQ(invalid.rfind("my.json: invalid JSON: parse error at line 1", 0), 0u) << invalid;
}

}  // namespace
}  // namespace powertrain::workload

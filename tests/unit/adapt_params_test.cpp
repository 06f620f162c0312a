#include "pilot/adapt/adapt_params.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "pilot/limits.h"

namespace pilot {
namespace {

const std::string kSha(64, 'c');

const std::string kValid = R"({
  "description": "langid, adapted to the support tickets",
  "base_model": {"path": "../data/models/langid/langid.pt", "sha256": ")" +
                           kSha + R"("},
  "train_manifest": "../data/adapt/train.json",
  "eval_manifest": "/abs/eval.jsonl",
  "train": {
    "parameters": ["fc_w", "fc.bias"],
    "optimiser": "sgd",
    "learning_rate": 0.01,
    "momentum": 0.9,
    "weight_decay": 0.0,
    "batch_size": 8,
    "steps": 200,
    "seed": 7,
    "threads": 2,
    "checkpoint_every": 25,
    "keep_checkpoints": 3,
    "dtype": "bfloat16"
  },
  "device": "cuda:0",
  "limits": {"max_bytes": 4096},
  "acceptance": {"min_eval_accuracy": 0.9, "min_gain": -0.05}
})";

const std::string kMinimal = R"({
  "base_model": {"path": "m.pt", "sha256": ")" +
                             kSha + R"("},
  "train_manifest": "train.json",
  "eval_manifest": "eval.json",
  "train": {"epochs": 3, "threads": 1}
})";

std::string With(const std::string& base, const std::string& from, const std::string& to) {
  std::string s = base;
  auto at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

Result<AdaptParams> Parse(const std::string& text) {
  return ParseAdaptParams(text, "/proj/config", "config/adapt.json");
}

// The error's message holds `key`; the error is bad input naming the file.
void ExpectRefused(const std::string& text, const std::string& key) {
  auto p = Parse(text);
  ASSERT_FALSE(p.ok()) << key;
  EXPECT_EQ(p.error().kind, ErrorKind::kBadInput);
  EXPECT_EQ(p.error().where, "config/adapt.json");
  EXPECT_NE(p.error().what.find(key), std::string::npos) << key << ": " << p.error().what;
}

TEST(AdaptParams, ParsesEveryKeyAndResolvesPaths) {
  auto p = Parse(kValid);
  ASSERT_TRUE(p.ok()) << p.error().ToString();
  const AdaptParams& a = p.value();
  EXPECT_EQ(a.base_model, "/proj/data/models/langid/langid.pt");
  EXPECT_EQ(a.base_model_sha256, kSha);
  EXPECT_EQ(a.train_manifest, "/proj/data/adapt/train.json");
  EXPECT_EQ(a.eval_manifest, "/abs/eval.jsonl");
  EXPECT_EQ(a.trainable, (std::vector<std::string>{"fc_w", "fc.bias"}));
  EXPECT_EQ(a.optimiser, "sgd");
  EXPECT_DOUBLE_EQ(a.learning_rate, 0.01);
  EXPECT_DOUBLE_EQ(a.momentum, 0.9);
  EXPECT_EQ(a.batch_size, 8);
  EXPECT_EQ(a.steps, std::optional<std::uint64_t>(200));
  EXPECT_FALSE(a.epochs.has_value());
  EXPECT_EQ(a.seed, 7u);
  EXPECT_EQ(a.threads, 2);
  EXPECT_EQ(a.checkpoint_every, 25u);
  EXPECT_EQ(a.keep_checkpoints, 3);
  EXPECT_EQ(a.dtype, "bfloat16");
  EXPECT_EQ(a.device, "cuda:0");
  EXPECT_EQ(a.max_bytes, 4096u);
  EXPECT_DOUBLE_EQ(*a.acceptance.min_eval_accuracy, 0.9);
  EXPECT_DOUBLE_EQ(*a.acceptance.min_gain, -0.05);
}

TEST(AdaptParams, DefaultsWhatIsNotGiven) {
  auto p = Parse(kMinimal);
  ASSERT_TRUE(p.ok()) << p.error().ToString();
  const AdaptParams& a = p.value();
  EXPECT_EQ(a.base_model, "/proj/config/m.pt");
  EXPECT_TRUE(a.trainable.empty());
  EXPECT_EQ(a.optimiser, "adam");
  EXPECT_EQ(a.epochs, std::optional<int>(3));
  EXPECT_FALSE(a.steps.has_value());
  EXPECT_EQ(a.batch_size, 16);
  EXPECT_EQ(a.checkpoint_every, 50u);
  EXPECT_EQ(a.keep_checkpoints, 2);
  EXPECT_EQ(a.dtype, "float32");
  EXPECT_EQ(a.device, "auto");
  EXPECT_EQ(a.max_bytes, 1u << 16);
  EXPECT_TRUE(a.acceptance.empty());
  auto all = Parse(With(kMinimal, "\"epochs\": 3", "\"epochs\": 3, \"parameters\": \"all\""));
  ASSERT_TRUE(all.ok()) << all.error().ToString();
  EXPECT_TRUE(all.value().trainable.empty());
}

TEST(AdaptParams, UnknownKeysAreRefusedByNameAtEveryLevel) {
  ExpectRefused(With(kValid, "\"device\"", "\"devise\""), "'devise'");
  ExpectRefused(With(kValid, "\"optimiser\"", "\"optimizer\""), "train.optimizer");
  ExpectRefused(With(kValid, "\"sha256\"", "\"sha265\""), "base_model.sha265");
  ExpectRefused(With(kValid, "\"max_bytes\"", "\"max_byte\""), "limits.max_byte");
  ExpectRefused(With(kValid, "\"min_gain\"", "\"min_accuracy\""), "acceptance.min_accuracy");
}

TEST(AdaptParams, CredentialsAreRefusedWithoutEchoingThem) {
  const std::string secret = "ghp_Zx8Kq2Lm9Pw4Rt7Yv1Bn3Cd5Fg6Hj0aa";
  auto p = Parse(With(kValid, "\"description\": \"langid, adapted to the support tickets\"",
                      "\"description\": \"" + secret + "\""));
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().what.find(secret), std::string::npos);
  EXPECT_EQ(p.error().ToString().find(secret), std::string::npos);
  // Named by its key path, before any complaint about the key being unknown.
  auto key = Parse(With(kValid, "\"seed\": 7", "\"seed\": 7, \"db_password\": \"hunter2-very-secret\""));
  ASSERT_FALSE(key.ok());
  EXPECT_NE(key.error().what.find("train.db_password"), std::string::npos) << key.error().what;
  EXPECT_NE(key.error().hint.find("environment"), std::string::npos);
  EXPECT_EQ(key.error().ToString().find("hunter2"), std::string::npos);
}

TEST(AdaptParams, RequiresTheInputsThreadsAndExactlyOneLength) {
  ExpectRefused(R"({"train_manifest": "t", "eval_manifest": "e", "train": {"steps": 1, "threads": 1}})",
                "base_model");
  ExpectRefused(With(kMinimal, "\"train_manifest\": \"train.json\",", ""), "train_manifest");
  ExpectRefused(With(kMinimal, "\"eval_manifest\": \"eval.json\",", ""), "eval_manifest");
  ExpectRefused(With(kMinimal, ",\n  \"train\": {\"epochs\": 3, \"threads\": 1}", ""), "'train'");
  ExpectRefused(With(kMinimal, ", \"threads\": 1", ""), "train.threads");
  ExpectRefused(With(kMinimal, "\"epochs\": 3,", ""), "train.epochs");
  auto both = Parse(With(kMinimal, "\"epochs\": 3", "\"epochs\": 3, \"steps\": 10"));
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.error().what.find("train.steps"), std::string::npos) << both.error().what;
  EXPECT_NE(both.error().what.find("train.epochs"), std::string::npos) << both.error().what;
  ExpectRefused(With(kMinimal, ", \"sha256\": \"" + kSha + "\"", ""), "base_model.sha256");
  ExpectRefused(With(kMinimal, "\"path\": \"m.pt\", ", ""), "base_model.path");
}

TEST(AdaptParams, MomentumIsForSgdOnly) {
  ExpectRefused(With(kValid, "\"optimiser\": \"sgd\"", "\"optimiser\": \"adam\""), "train.momentum");
  ExpectRefused(With(kMinimal, "\"epochs\": 3", "\"epochs\": 3, \"momentum\": 0"), "train.momentum");
  ExpectRefused(With(kValid, "\"momentum\": 0.9", "\"momentum\": 1"), "train.momentum");
}

TEST(AdaptParams, BadValuesNameTheirKey) {
  for (auto [from, to, key] : {
           std::tuple{std::string("\"sha256\": \"") + kSha,
                      std::string("\"sha256\": \"") + std::string(64, 'C'), std::string("base_model.sha256")},
           std::tuple{std::string("\"sha256\": \"") + kSha, std::string("\"sha256\": \"abc"),
                      std::string("base_model.sha256")},
           std::tuple{std::string("\"../data/adapt/train.json\""), std::string("\"\""),
                      std::string("train_manifest")},
           std::tuple{std::string("\"/abs/eval.jsonl\""), std::string("7"), std::string("eval_manifest")},
           std::tuple{std::string("[\"fc_w\", \"fc.bias\"]"), std::string("[]"),
                      std::string("train.parameters")},
           std::tuple{std::string("[\"fc_w\", \"fc.bias\"]"), std::string("[\"fc_w\", \"fc_w\"]"),
                      std::string("train.parameters")},
           std::tuple{std::string("[\"fc_w\", \"fc.bias\"]"), std::string("[\"fc w\"]"),
                      std::string("train.parameters")},
           std::tuple{std::string("[\"fc_w\", \"fc.bias\"]"), std::string("\"some\""),
                      std::string("train.parameters")},
           std::tuple{std::string("[\"fc_w\", \"fc.bias\"]"),
                      std::string("[\"") + std::string(129, 'p') + "\"]", std::string("train.parameters")},
           std::tuple{std::string("\"sgd\""), std::string("\"rmsprop\""), std::string("train.optimiser")},
           std::tuple{std::string("0.01"), std::string("0"), std::string("train.learning_rate")},
           std::tuple{std::string("0.01"), std::string("10.5"), std::string("train.learning_rate")},
           std::tuple{std::string("0.01"), std::string("\"0.01\""), std::string("train.learning_rate")},
           std::tuple{std::string("\"weight_decay\": 0.0"), std::string("\"weight_decay\": -0.1"),
                      std::string("train.weight_decay")},
           std::tuple{std::string("\"batch_size\": 8"), std::string("\"batch_size\": 0"),
                      std::string("train.batch_size")},
           std::tuple{std::string("\"batch_size\": 8"), std::string("\"batch_size\": 65537"),
                      std::string("train.batch_size")},
           std::tuple{std::string("\"batch_size\": 8"), std::string("\"batch_size\": 8.5"),
                      std::string("train.batch_size")},
           std::tuple{std::string("\"steps\": 200"), std::string("\"steps\": 0"), std::string("train.steps")},
           std::tuple{std::string("\"steps\": 200"), std::string("\"steps\": 10000001"),
                      std::string("train.steps")},
           std::tuple{std::string("\"steps\": 200"), std::string("\"epochs\": 10001"),
                      std::string("train.epochs")},
           std::tuple{std::string("\"seed\": 7"), std::string("\"seed\": -1"), std::string("train.seed")},
           std::tuple{std::string("\"seed\": 7"), std::string("\"seed\": 9007199254740992"),
                      std::string("train.seed")},
           std::tuple{std::string("\"threads\": 2"), std::string("\"threads\": 0"),
                      std::string("train.threads")},
           std::tuple{std::string("\"threads\": 2"), std::string("\"threads\": 257"),
                      std::string("train.threads")},
           std::tuple{std::string("\"checkpoint_every\": 25"), std::string("\"checkpoint_every\": 0"),
                      std::string("train.checkpoint_every")},
           std::tuple{std::string("\"keep_checkpoints\": 3"), std::string("\"keep_checkpoints\": 101"),
                      std::string("train.keep_checkpoints")},
           std::tuple{std::string("\"bfloat16\""), std::string("\"float64\""), std::string("train.dtype")},
           std::tuple{std::string("\"cuda:0\""), std::string("\"tpu\""), std::string("device")},
           std::tuple{std::string("4096"), std::string("0"), std::string("limits.max_bytes")},
           std::tuple{std::string("4096"), std::string("1073741825"), std::string("limits.max_bytes")},
           std::tuple{std::string("0.9, \"min_gain\""), std::string("1.1, \"min_gain\""),
                      std::string("acceptance.min_eval_accuracy")},
           std::tuple{std::string("-0.05"), std::string("-1.5"), std::string("acceptance.min_gain")},
           std::tuple{std::string("\"langid, adapted to the support tickets\""), std::string("5"),
                      std::string("description")},
       }) {
    ExpectRefused(With(kValid, from, to), key);
  }
}

TEST(AdaptParams, WrongShapesAreRefusedNeverThrown) {
  for (const std::string text : {"", "[]", "null", "{", "{\"base_model\": 1}", "{\"train\": []}",
                                 "{\"base_model\": {\"path\": \"m\", \"sha256\": null}}"}) {
    auto p = Parse(text);
    ASSERT_FALSE(p.ok()) << text;
    EXPECT_EQ(p.error().kind, ErrorKind::kBadInput);
  }
  ExpectRefused(With(kMinimal, "{\"epochs\": 3, \"threads\": 1}", "3"), "'train'");
  ExpectRefused(With(kValid, "{\"max_bytes\": 4096}", "[4096]"), "limits");
  std::string big(limits::kParamsBytes, ' ');
  EXPECT_FALSE(Parse(kMinimal + big).ok());
}

}  // namespace
}  // namespace pilot

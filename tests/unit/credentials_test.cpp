#include "pilot/credentials.h"

#include <gtest/gtest.h>

namespace pilot {
namespace {

TEST(Credentials, KeysThatLookLikeSecrets) {
  for (const char* k : {"password", "db_passwd", "API_KEY", "apiKey", "hf-token", "client_secret",
                        "private_key", "aws_access_key_id", "Authorization"}) {
    EXPECT_TRUE(KeyLooksLikeCredential(k)) << k;
  }
  for (const char* k : {"tokenizer", "model_sha256", "batch_size", "max_bytes", "keyword"}) {
    EXPECT_FALSE(KeyLooksLikeCredential(k)) << k;
  }
}

TEST(Credentials, ValuesThatLookLikeSecrets) {
  EXPECT_TRUE(ValueLooksLikeCredential("-----BEGIN OPENSSH PRIVATE KEY-----\nabc"));
  EXPECT_TRUE(ValueLooksLikeCredential("ghp_0123456789abcdefABCDEF0123456789"));
  EXPECT_TRUE(ValueLooksLikeCredential("hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345"));
  EXPECT_TRUE(ValueLooksLikeCredential("AKIAIOSFODNN7EXAMPLEKEY1"));
  EXPECT_TRUE(ValueLooksLikeCredential("https://user:pa55@example.com/repo"));
  EXPECT_TRUE(ValueLooksLikeCredential("q8Zr2LxV9mK4pT7wN1bY6cH3jD5fS0gA"));
  // Not secrets: a sha256 pin, paths, labels, prose.
  EXPECT_FALSE(ValueLooksLikeCredential(std::string(64, 'f')));
  EXPECT_FALSE(ValueLooksLikeCredential("../data/models/langid/langid.pt"));
  EXPECT_FALSE(ValueLooksLikeCredential("torchscript-classifier"));
  EXPECT_FALSE(ValueLooksLikeCredential("The bundled default pilot: 12 documents."));
  EXPECT_FALSE(ValueLooksLikeCredential("https://example.com/docs"));
}

TEST(Credentials, EnvironmentVariableNamesAreTheWayToRefer) {
  EXPECT_TRUE(CheckNoCredentials(nlohmann::json::parse(R"({"stage":{"token_env":"HF_TOKEN"}})"), "p").ok());
  auto bad = CheckNoCredentials(nlohmann::json::parse(R"({"token_env":"hf_realvalue123"})"), "p");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().what.find("token_env"), std::string::npos);
  auto in_list =
      CheckNoCredentials(nlohmann::json::parse(R"({"x":["ok", "sk-AAAAAAAAAAAAAAAAAAAAAAAA"]})"), "p");
  ASSERT_FALSE(in_list.ok());
  EXPECT_NE(in_list.error().what.find("x[1]"), std::string::npos);
  EXPECT_EQ(in_list.error().ToString().find("sk-AAAA"), std::string::npos);
}

}  // namespace
}  // namespace pilot

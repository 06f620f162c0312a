#include "pilot/credentials.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <map>

namespace pilot {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Strips separators so that "api-key", "api_key", "apiKey" and "APIKEY" compare alike.
std::string Squash(std::string_view s) {
  std::string out;
  for (char c : Lower(s)) {
    if (std::isalnum(static_cast<unsigned char>(c))) out += c;
  }
  return out;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool IsEnvVarName(std::string_view v) {
  if (v.empty() || v.size() > 128 || std::isdigit(static_cast<unsigned char>(v[0]))) return false;
  return std::all_of(v.begin(), v.end(), [](unsigned char c) {
    return std::isupper(c) || std::isdigit(c) || c == '_';
  });
}

double ShannonBitsPerChar(std::string_view v) {
  std::map<char, int> counts;
  for (char c : v) ++counts[c];
  double h = 0;
  for (const auto& [_, n] : counts) {
    double p = static_cast<double>(n) / v.size();
    h -= p * std::log2(p);
  }
  return h;
}

Status Walk(const nlohmann::json& node, const std::string& path, const std::string& source) {
  auto refuse = [&](const std::string& key_path, const char* what) {
    return Status(BadInput(
        std::string(what) + " at key '" + key_path + "'; its value is not shown", source,
        "parameters hold no secrets: pass access information through the environment and "
        "name the variable here by name only (e.g. \"token_env\": \"MY_TOKEN\"); it is never "
        "copied into a run folder"));
  };
  if (node.is_object()) {
    for (const auto& [key, value] : node.items()) {
      std::string key_path = path.empty() ? key : path + "." + key;
      bool names_env = EndsWith(Lower(key), "_env");
      if (names_env) {
        if (!value.is_string() || !IsEnvVarName(value.get<std::string>())) {
          return refuse(key_path, "a key ending in _env must hold an environment variable name");
        }
        continue;
      }
      if (KeyLooksLikeCredential(key)) return refuse(key_path, "a key that looks like a credential");
      if (Status st = Walk(value, key_path, source); !st.ok()) return st;
    }
  } else if (node.is_array()) {
    for (std::size_t i = 0; i < node.size(); ++i) {
      if (Status st = Walk(node[i], path + "[" + std::to_string(i) + "]", source); !st.ok()) return st;
    }
  } else if (node.is_string()) {
    if (ValueLooksLikeCredential(node.get<std::string>())) {
      return refuse(path, "a value that looks like a credential");
    }
  }
  return {};
}

}  // namespace

bool KeyLooksLikeCredential(std::string_view key) {
  static const std::array<const char*, 14> kWords = {
      "password", "passwd", "passphrase", "secret", "token", "apikey", "accesskey",
      "privatekey", "credential", "authorization", "bearer", "cookie", "sessionid", "clientsecret"};
  std::string k = Squash(key);
  // "tokenizer" is a model option, not a token.
  for (auto at = k.find("tokeniz"); at != std::string::npos; at = k.find("tokeniz")) k.erase(at, 7);
  return std::any_of(kWords.begin(), kWords.end(),
                     [&](const char* w) { return k.find(w) != std::string::npos; });
}

bool ValueLooksLikeCredential(std::string_view value) {
  if (value.find("PRIVATE KEY-----") != std::string_view::npos) return true;
  static const std::array<const char*, 10> kPrefixes = {
      "sk-", "ghp_", "gho_", "github_pat_", "hf_", "xoxb-", "xoxp-", "AKIA", "glpat-", "eyJ"};
  for (const char* p : kPrefixes) {
    std::string_view prefix(p);
    if (value.size() >= prefix.size() + 16 && value.substr(0, prefix.size()) == prefix &&
        value.find_first_of(" /\\.") == std::string_view::npos) {
      return true;
    }
  }
  if (value.find("://") != std::string_view::npos && value.find('@') != std::string_view::npos) {
    // scheme://user:password@host
    auto at = value.find('@');
    auto scheme = value.find("://");
    if (value.substr(scheme + 3, at - scheme - 3).find(':') != std::string_view::npos) return true;
  }
  // A long token of base64/hex-ish characters with high entropy and no path structure.
  if (value.size() >= 32 && value.find_first_of(" /\\.") == std::string_view::npos &&
      std::all_of(value.begin(), value.end(), [](unsigned char c) {
        return std::isalnum(c) || c == '_' || c == '-' || c == '+' || c == '=';
      })) {
    bool hex_only = std::all_of(value.begin(), value.end(),
                                [](unsigned char c) { return std::isxdigit(c); });
    // 64 hex digits are a sha256 pin, not a secret.
    if (!(hex_only && value.size() == 64) && ShannonBitsPerChar(value) > 4.0) return true;
  }
  return false;
}

Status CheckNoCredentials(const nlohmann::json& doc, const std::string& source) {
  return Walk(doc, "", source);
}

}  // namespace pilot

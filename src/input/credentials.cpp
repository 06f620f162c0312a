#include "pilot/credentials.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <map>

#include "pilot/json_util.h"

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
  return std::all_of(v.begin(), v.end(),
                     [](unsigned char c) { return std::isupper(c) || std::isdigit(c) || c == '_'; });
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
    return Status(
        BadInput(std::string(what) + " at key '" + key_path + "'; its value is not shown", source,
                 "parameters hold no secrets: pass access information through the environment and "
                 "name the variable here by name only (e.g. \"token_env\": \"MY_TOKEN\"); it is never "
                 "copied into a run folder"));
  };
  if (node.is_object()) {
    for (const auto& [key, value] : node.items()) {
      std::string key_path = (path.empty() ? "" : path + ".") + KeyForMessage(key);
      bool names_env = EndsWith(Lower(key), "_env");
      if (names_env) {
        if (!value.is_string() || !IsEnvVarName(value.get<std::string>())) {
          return refuse(key_path, "a key ending in _env must hold an environment variable name");
        }
        continue;
      }
      // A generator's settings count and name a model's tokens: these two keys, at this path
      // alone, are not credentials.
      const bool generation_setting =
          key_path == "generation.max_new_tokens" || key_path == "generation.stop_token_ids";
      if ((KeyLooksLikeCredential(key) && !generation_setting) || ValueLooksLikeCredential(key)) {
        return refuse(key_path, "a key that looks like a credential");
      }
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
      "password",   "passwd",     "passphrase",    "secret", "token",  "apikey",    "accesskey",
      "privatekey", "credential", "authorization", "bearer", "cookie", "sessionid", "clientsecret"};
  std::string k = Squash(key);
  // "tokenizer" is a model option, not a token.
  for (auto at = k.find("tokeniz"); at != std::string::npos; at = k.find("tokeniz")) k.erase(at, 7);
  return std::any_of(kWords.begin(), kWords.end(),
                     [&](const char* w) { return k.find(w) != std::string::npos; });
}

namespace {

bool IsTokenChar(unsigned char c) { return std::isalnum(c) || c == '_' || c == '-'; }

// A known token format anywhere in the text, at a word boundary: "sk-…" inside free text
// is as much a secret as a value that is only the token.
bool HasKnownToken(std::string_view v) {
  struct Format {
    const char* prefix;
    std::size_t min_body;  // characters after the prefix
    bool dots;             // JWTs are three dot-separated parts
  };
  static const std::array<Format, 11> kFormats = {{{"sk-", 16, false},
                                                   {"ghp_", 16, false},
                                                   {"gho_", 16, false},
                                                   {"ghs_", 16, false},
                                                   {"github_pat_", 16, false},
                                                   {"hf_", 16, false},
                                                   {"xoxb-", 16, false},
                                                   {"xoxp-", 16, false},
                                                   {"glpat-", 16, false},
                                                   {"AKIA", 16, false},
                                                   {"eyJ", 16, true}}};
  for (const Format& f : kFormats) {
    const std::string_view prefix(f.prefix);
    for (auto at = v.find(prefix); at != std::string_view::npos; at = v.find(prefix, at + 1)) {
      if (at > 0 && std::isalnum(static_cast<unsigned char>(v[at - 1]))) continue;  // "task-…", "disk-…"
      std::size_t end = at + prefix.size();
      while (end < v.size() &&
             (IsTokenChar(static_cast<unsigned char>(v[end])) || (f.dots && v[end] == '.'))) {
        ++end;
      }
      if (end - at - prefix.size() >= f.min_body) return true;
    }
  }
  return false;
}

// A long run of base64/hex-like characters with high entropy: an API key, an AWS secret
// access key (which may hold '/' and '+'). Paths and prose do not look like this: they
// have '.' or spaces, and their words are not a random mix of upper case, lower case and
// digits.
bool IsHighEntropyToken(std::string_view t) {
  if (t.size() < 32) return false;
  bool upper = false, lower = false, digit = false;
  for (unsigned char c : t) {
    if (!(std::isalnum(c) || c == '_' || c == '-' || c == '+' || c == '=' || c == '/')) return false;
    upper = upper || std::isupper(c);
    lower = lower || std::islower(c);
    digit = digit || std::isdigit(c);
  }
  bool hex_only = std::all_of(t.begin(), t.end(), [](unsigned char c) { return std::isxdigit(c); });
  if (hex_only) return false;
  // A name made of words: "disk-scratch-volume-0001-primary", "task_classification_v2".
  bool words = t.find_first_of("-_") != std::string_view::npos;
  for (std::size_t i = 0; words && i < t.size();) {
    std::size_t j = t.find_first_of("-_", i);
    std::string_view seg = t.substr(i, j == std::string_view::npos ? std::string_view::npos : j - i);
    bool all_lower = std::all_of(seg.begin(), seg.end(), [](unsigned char c) { return std::islower(c); });
    bool digits = std::all_of(seg.begin(), seg.end(), [](unsigned char c) { return std::isdigit(c); });
    words = all_lower || digits || seg.size() <= 4;
    i = j == std::string_view::npos ? t.size() : j + 1;
  }
  if (words) return false;  // sha256 pins, git revisions: hex never exceeds 4 bits per char anyway
  if (t.find('/') != std::string_view::npos) {
    // A path of words has less entropy than a random key of the same length.
    return upper && lower && digit && t.front() != '/' && ShannonBitsPerChar(t) > 4.5;
  }
  return ShannonBitsPerChar(t) > 4.0;
}

}  // namespace

bool ValueLooksLikeCredential(std::string_view value) {
  if (value.find("PRIVATE KEY-----") != std::string_view::npos) return true;
  if (HasKnownToken(value)) return true;
  // scheme://user:password@host
  for (auto scheme = value.find("://"); scheme != std::string_view::npos;
       scheme = value.find("://", scheme + 3)) {
    auto stop = value.find_first_of("/ \t\n", scheme + 3);
    std::string_view authority =
        value.substr(scheme + 3, stop == std::string_view::npos ? stop : stop - scheme - 3);
    auto at = authority.rfind('@');
    if (at != std::string_view::npos && authority.substr(0, at).find(':') != std::string_view::npos)
      return true;
  }
  // Every whitespace- or quote-separated token of the text.
  std::size_t i = 0;
  while (i < value.size()) {
    while (i < value.size() && std::strchr(" \t\r\n\"'`,;()[]{}<>", value[i]) != nullptr) ++i;
    std::size_t j = i;
    while (j < value.size() && std::strchr(" \t\r\n\"'`,;()[]{}<>", value[j]) == nullptr) ++j;
    std::string_view token = value.substr(i, j - i);
    // "key=VALUE" and "key:VALUE": the value part alone.
    auto sep = token.find_first_of("=:");
    if (sep != std::string_view::npos && sep + 1 < token.size() &&
        IsHighEntropyToken(token.substr(sep + 1))) {
      return true;
    }
    if (IsHighEntropyToken(token)) return true;
    i = j;
  }
  return false;
}

Status CheckNoCredentials(const nlohmann::json& doc, const std::string& source) {
  return Walk(doc, "", source);
}

}  // namespace pilot

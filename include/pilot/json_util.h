// Small helpers around nlohmann::json that turn its exceptions into pilot Errors, and the
// one JSON parser every file pilot reads goes through (docs/security.md, "What pilot trusts").
#pragma once

#include <cstddef>
#include <filesystem>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "pilot/limits.h"
#include "pilot/status.h"

namespace pilot {

// Parses JSON text. Refuses, naming `source`:
// - a syntax error, by line and column only (no byte of the text is echoed: it may hold a
//   secret);
// - nesting deeper than `max_depth` objects/arrays (checked while parsing, so a hostile
//   document never builds a deep tree);
// - a key that appears twice in one object, naming its JSON path (the last one would
//   otherwise silently win, hiding the first from every check).
Result<nlohmann::json> ParseJson(std::string_view text, const std::string& source,
                                 std::size_t max_depth = limits::kJsonDepth);
// The same checks, keeping the objects' key order: for a document pilot wrote that is to be
// written again byte for byte (verify rebuilding a derived file from it).
Result<nlohmann::ordered_json> ParseOrderedJson(std::string_view text, const std::string& source,
                                                std::size_t max_depth = limits::kJsonDepth);

// Pretty JSON with a trailing newline (the form of every JSON file in a run folder).
// Invalid UTF-8 in a string (a file name, an argument) is replaced, never a throw.
std::string PrettyJson(const nlohmann::ordered_json& doc);
// One line, no trailing newline; invalid UTF-8 replaced as above.
std::string JsonLine(const nlohmann::ordered_json& doc);

// A key as it may be shown in a message: itself when it is plainly a name (1-64
// characters of [A-Za-z0-9_.-] that do not look like a credential), otherwise a mask that
// gives its length only.
std::string KeyForMessage(std::string_view key);
// A value that is not a JSON key (a file name in a folder, a scheduler variable, a run id, an
// option's value) as it may be shown in a message: escaped for the terminal (a byte that is
// not UTF-8 as \xNN) and cut at `max` bytes; a mask giving its length when it looks like a
// credential.
std::string ValueForMessage(std::string_view value, std::size_t max = 64);

// Typed access to an object's member: nullopt when the document is not an object, the key
// is absent or holds another type. Never throws.
std::optional<std::string> StringAt(const nlohmann::json& j, const char* key);
std::optional<double> NumberAt(const nlohmann::json& j, const char* key);
std::optional<std::uint64_t> UnsignedAt(const nlohmann::json& j, const char* key);

// Typed reads of the members of a document pilot does not trust (a folder's report.json, a
// run record read for a plan): each error (exit 2) names the key path and the file, as
// "'counts.total' is missing or not a whole number" at "<file> key counts.total", with `hint`.
// `parent` is the object's key path ("" at the top). Never throws.
class JsonFields {
 public:
  JsonFields(std::string file, std::string hint) : file_(std::move(file)), hint_(std::move(hint)) {}
  Result<const nlohmann::json*> Object(const nlohmann::json& obj, const char* key,
                                       const std::string& parent = {}) const;
  Result<const nlohmann::json*> Array(const nlohmann::json& obj, const char* key,
                                      const std::string& parent = {}) const;
  // A finite number >= 0.
  Result<double> Number(const nlohmann::json& obj, const char* key, const std::string& parent = {}) const;
  // A finite number >= 0, or null (absent is null too).
  Result<std::optional<double>> NumberOrNull(const nlohmann::json& obj, const char* key,
                                             const std::string& parent = {}) const;
  Result<std::uint64_t> Unsigned(const nlohmann::json& obj, const char* key,
                                 const std::string& parent = {}) const;
  Result<bool> Bool(const nlohmann::json& obj, const char* key, const std::string& parent = {}) const;
  // A string of 1 to `max_bytes` bytes.
  Result<std::string> String(const nlohmann::json& obj, const char* key, const std::string& parent = {},
                             std::size_t max_bytes = 256) const;
  // "<file> key <path>", or the file alone for an empty path.
  std::string Where(const std::string& path) const;
  const std::string& hint() const { return hint_; }
  static std::string Join(const std::string& parent, const char* key);

 private:
  Error Wrong(const std::string& parent, const char* key, const char* what) const;
  std::string file_;
  std::string hint_;
};

// The member `key` of `j`, or null when `j` is not an object or has no such member: for
// reading a document whose shape was checked already (a value shown as it is). Never throws.
const nlohmann::json& MemberOrNull(const nlohmann::json& j, const char* key);

// Typed reads of the settings of one object in a file the user wrote (a parameter file): each
// setting optional unless said, each message naming its key path ("train.batch_size") with
// `source` as the place and `hint` as the remedy (exit 2). Never throws.
class SettingsReader {
 public:
  SettingsReader(const nlohmann::json& obj, std::string prefix, std::string source, std::string hint)
      : obj_(obj), prefix_(std::move(prefix)), source_(std::move(source)), hint_(std::move(hint)) {}

  bool Has(const char* key) const { return obj_.is_object() && obj_.contains(key); }
  std::string Key(const char* key) const { return prefix_.empty() ? key : prefix_ + "." + key; }
  Error Wrong(const char* key, const std::string& what) const;
  // The settings of the member `key`, an object (its shape is the caller's to check).
  SettingsReader Child(const char* key) const;

  // A non-empty string; absent is an error when `required`.
  Status String(const char* key, std::string& out, bool required) const;
  // A non-empty path without NUL, relative ones resolved against `base_dir`; required.
  Status Path(const char* key, const std::filesystem::path& base_dir, std::filesystem::path& out) const;
  // One of `allowed`, when present.
  Status OneOf(const char* key, std::string& out, std::initializer_list<const char*> allowed) const;
  // A whole number in [lo, hi], compared exactly (no rounding through a double).
  Status Whole(const char* key, std::uint64_t& out, std::uint64_t lo, std::uint64_t hi) const;
  template <typename T>
  Status Whole(const char* key, T& out, std::uint64_t lo, std::uint64_t hi) const {
    static_assert(std::is_integral_v<T>);
    if (!Has(key)) return {};
    std::uint64_t v = 0;
    PILOT_TRY(Whole(key, v, lo, hi));
    out = static_cast<T>(v);
    return {};
  }
  // A finite number in [lo, hi]; `open_lo` excludes lo, `open_hi` excludes hi.
  Status Number(const char* key, double& out, double lo, double hi, bool open_lo = false,
                bool open_hi = false) const;
  Status Optional(const char* key, std::optional<double>& out, double lo, double hi) const;

 private:
  const nlohmann::json& obj_;
  std::string prefix_;
  std::string source_;
  std::string hint_;
};

// Refuses (exit 2, naming the key path and `source`, listing what is allowed) a member of
// `obj` that is not in `allowed`, and an `obj` that is not an object: a typo in a parameter
// file must never fall back to a default. `where` is the object's key path ("" at the top);
// `hint` is given when `obj` is not an object.
Status CheckKnownKeys(const nlohmann::json& obj, std::initializer_list<const char*> allowed,
                      const std::string& where, const std::string& source, const std::string& hint);

}  // namespace pilot

#include "pilot/manifest.h"

#include <algorithm>
#include <set>
#include <unordered_set>

#include "pilot/escape.h"
#include "pilot/fs.h"
#include "pilot/hash.h"
#include "pilot/json_util.h"
#include "pilot/limits.h"
#include "pilot/reasons.h"

namespace pilot {
namespace {

const char* kFix = "fix the manifest; nothing was run";

Result<std::string> RequiredString(const nlohmann::json& item, const char* key, const std::string& where) {
  auto it = item.find(key);
  if (it == item.end()) return BadInput(std::string("missing field '") + key + "'", where, kFix);
  if (!it->is_string()) return BadInput(std::string("field '") + key + "' must be a string", where, kFix);
  return it->get<std::string>();
}

// The checks every item gets once its fields are known to be strings (or absent): shared by
// the JSON parser's path and the line scanner's, so both refuse with the same words.
Result<ManifestItem> CheckItem(ManifestItem item, const std::string& where_base) {
  // Built only for a message: most items pass.
  struct Where {
    const std::string& base;
    const std::string& id;
    operator std::string() const { return base + " id " + id; }  // NOLINT: a message's place
  } where{where_base, item.id};
  if (!IsValidItemId(item.id)) {
    return BadInput("invalid id '" + item.id + "': 1-128 characters of [A-Za-z0-9._-]", where, kFix);
  }
  if (item.path.empty()) return BadInput("empty path", where, kFix);
  for (unsigned char c : item.path) {
    if (c < 0x20 || c == 0x7f) {
      // A NUL would silently cut the path short; other control bytes are never meant.
      return BadInput("the path holds a control character (byte " + std::to_string(c) + ")", where, kFix);
    }
  }
  if (!IsSha256Hex(item.sha256)) {
    return BadInput("sha256 must be 64 lower-case hex digits", where,
                    "pin the file with `sha256sum` or `pilot manifest`");
  }
  if (item.expected && item.expected->empty()) {
    return BadInput("'expected' must be a non-empty string", where, kFix);
  }
  if (item.expected && item.expected->size() > limits::kExpectedLabelBytes) {
    return BadInput("'expected' is " + std::to_string(item.expected->size()) + " bytes; a label is at most " +
                        std::to_string(limits::kExpectedLabelBytes),
                    where, kFix);
  }
  if (item.expected && EscapeTerminal(*item.expected) != *item.expected) {
    // A label is compared with the model's and shown in reports: a control or layout character
    // (ESC, a newline, a bidi override) is never one.
    return BadInput(
        "'expected' holds a control or layout character (" + ShowUntrusted(*item.expected, 40) + ")", where,
        kFix);
  }
  if (item.expected_rejection && !reason::IsKnown(*item.expected_rejection)) {
    return BadInput("'expected_rejection' must be a known reason code", where,
                    "see docs/formats.md, 'Reason codes'");
  }
  if (item.expected && item.expected_rejection) {
    return BadInput("an item cannot have both 'expected' and 'expected_rejection'", where, kFix);
  }
  return item;
}

Result<ManifestItem> ParseItem(const nlohmann::json& j, const std::string& where_base) {
  if (!j.is_object()) return BadInput("an item must be a JSON object", where_base, kFix);
  std::string where = where_base;
  if (auto id = j.find("id"); id != j.end() && id->is_string()) where += " id " + id->get<std::string>();
  for (const auto& [key, _] : j.items()) {
    if (key != "id" && key != "path" && key != "sha256" && key != "expected" && key != "expected_rejection") {
      return BadInput("unknown field '" + key + "'", where,
                      "allowed: id, path, sha256, expected, expected_rejection");
    }
  }
  ManifestItem item;
  for (auto [key, dest] :
       {std::pair{"id", &item.id}, std::pair{"path", &item.path}, std::pair{"sha256", &item.sha256}}) {
    auto v = RequiredString(j, key, where);
    if (!v.ok()) return v.error();
    *dest = v.value();
  }
  // A wrong type is refused before CheckItem, with the same words it uses for a bad value.
  if (auto e = j.find("expected"); e != j.end()) {
    if (!e->is_string()) return BadInput("'expected' must be a non-empty string", where, kFix);
    item.expected = e->get<std::string>();
  }
  if (auto e = j.find("expected_rejection"); e != j.end()) {
    if (!e->is_string()) {
      return BadInput("'expected_rejection' must be a known reason code", where,
                      "see docs/formats.md, 'Reason codes'");
    }
    item.expected_rejection = e->get<std::string>();
  }
  return CheckItem(std::move(item), where_base);
}

// JSON whitespace.
bool IsJsonSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// A string token of plain printable ASCII (no escape, no control byte, no UTF-8) at `at`
// (which holds '"'); advances past it. False for anything else: the caller then declines.
bool ScanPlainString(std::string_view s, std::size_t& at, std::string_view& out) {
  if (at >= s.size() || s[at] != '"') return false;
  std::size_t i = at + 1;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"') break;
    if (c == '\\' || c < 0x20 || c >= 0x7f) return false;
    ++i;
  }
  if (i >= s.size()) return false;
  out = s.substr(at + 1, i - at - 1);
  at = i + 1;
  return true;
}

}  // namespace

std::optional<ManifestItem> ScanManifestLine(std::string_view line) {
  std::size_t at = 0;
  auto skip = [&] {
    while (at < line.size() && IsJsonSpace(line[at])) ++at;
  };
  skip();
  if (at >= line.size() || line[at] != '{') return std::nullopt;
  ++at;
  std::optional<std::string_view> id, path, sha256, expected, expected_rejection;
  for (bool first = true;; first = false) {
    skip();
    if (at < line.size() && line[at] == '}' && first) return std::nullopt;  // {}: the parser names it
    std::string_view key, value;
    if (!ScanPlainString(line, at, key)) return std::nullopt;
    skip();
    if (at >= line.size() || line[at] != ':') return std::nullopt;
    ++at;
    skip();
    if (!ScanPlainString(line, at, value)) return std::nullopt;
    std::optional<std::string_view>* slot = key == "id"                   ? &id
                                            : key == "path"               ? &path
                                            : key == "sha256"             ? &sha256
                                            : key == "expected"           ? &expected
                                            : key == "expected_rejection" ? &expected_rejection
                                                                          : nullptr;
    if (!slot || slot->has_value()) return std::nullopt;  // unknown or repeated key: the parser's to judge
    *slot = value;
    skip();
    if (at < line.size() && line[at] == ',') {
      ++at;
      continue;
    }
    if (at < line.size() && line[at] == '}') {
      ++at;
      break;
    }
    return std::nullopt;
  }
  skip();
  if (at != line.size() || !id || !path || !sha256) return std::nullopt;
  ManifestItem item;
  item.id = *id;
  item.path = *path;
  item.sha256 = *sha256;
  if (expected) item.expected = std::string(*expected);
  if (expected_rejection) item.expected_rejection = std::string(*expected_rejection);
  return item;
}

Result<ManifestItem> ParseManifestLine(std::string_view line, const std::string& where) {
  if (auto fast = ScanManifestLine(line)) return CheckItem(std::move(*fast), where);
  auto j = ParseJson(line, where);
  if (!j.ok()) return j.error();
  return ParseItem(j.value(), where);
}

namespace {

// The id of a line that starts {"id":"<id>", without parsing it; empty if it does not.
std::string_view LeadingId(std::string_view line) {
  constexpr std::string_view kPrefix = "{\"id\":\"";
  if (line.substr(0, kPrefix.size()) != kPrefix) return {};
  auto end = line.find('"', kPrefix.size());
  if (end == std::string_view::npos) return {};
  std::string_view id = line.substr(kPrefix.size(), end - kPrefix.size());
  return IsValidItemId(id) ? id : std::string_view();
}

using ItemFn = std::function<Status(ManifestItem&&, const std::string&)>;

// Calls fn(parsed line, "file:line") for each non-blank line not skipped. With `hash`,
// every byte read is hashed: the sha256 of exactly what was validated.
Status StreamJsonLines(LineReader& in, const std::string& source, const ItemFn& fn,
                       const std::function<bool(std::string_view)>& skip = nullptr,
                       Sha256Stream* hash = nullptr) {
  std::string line;
  for (;;) {
    bool complete = false;
    auto more = in.Next(line, &complete);
    if (!more.ok()) return more.error();
    if (!more.value()) return {};
    if (hash) {
      hash->Update(line);
      if (complete) hash->Update("\n");
    }
    if (skip) {
      std::string_view id = LeadingId(line);
      if (!id.empty() && skip(id)) continue;
    }
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::string where = source + ":" + std::to_string(in.line_number());
    auto item = ParseManifestLine(line, where);
    if (!item.ok()) return item.error();
    if (Status st = fn(std::move(item).value(), where); !st.ok()) return st;
  }
}

}  // namespace

bool IsValidItemId(std::string_view id) {
  if (id.empty() || id.size() > 128) return false;
  for (char c : id) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
              c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

Result<Manifest> ParseManifest(std::string_view text, bool jsonl, const std::string& source) {
  Manifest manifest;
  // Views of the ids inside manifest.items. A reallocation would move the strings (a short
  // one's view would dangle), so the set is rebuilt whenever the vector grows: rarely, as the
  // capacity is reserved from an estimate that hostile text cannot inflate (a line holds at
  // least kMinItemBytes, and at most 2^16 items are reserved ahead; beyond, it doubles).
  std::unordered_set<std::string_view> seen;
  auto reserve = [&](std::size_t n) {
    manifest.items.reserve(n);
    seen.clear();
    seen.reserve(n);
    for (const auto& it : manifest.items) seen.insert(it.id);
  };
  auto add_item = [&](Result<ManifestItem> item, const std::string& where) -> Status {
    if (!item.ok()) return item.error();
    if (seen.count(item.value().id)) {
      return BadInput("duplicate id '" + item.value().id + "'", where,
                      "every id must be unique; nothing was run");
    }
    if (manifest.items.size() == manifest.items.capacity())
      reserve(std::max<std::size_t>(16, 2 * manifest.items.size()));
    manifest.items.push_back(std::move(item).value());
    seen.insert(manifest.items.back().id);
    return {};
  };
  auto add = [&](const nlohmann::json& j, const std::string& where) {
    return add_item(ParseItem(j, where), where);
  };
  if (jsonl) {
    // The shortest valid item line: {"id":"a","path":"a","sha256":"<64 hex>"} is 97 bytes.
    constexpr std::size_t kMinItemBytes = 97;
    const auto lines = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1;
    reserve(std::min({lines, text.size() / kMinItemBytes + 1, std::size_t{1} << 16}));
    std::size_t line_no = 0;
    for (std::size_t start = 0; start < text.size();) {
      auto nl = text.find('\n', start);
      std::string_view line = text.substr(start, nl == std::string_view::npos ? nl : nl - start);
      start = nl == std::string_view::npos ? text.size() : nl + 1;
      ++line_no;
      if (line.size() > limits::kManifestLineBytes) {
        return BadInput("line " + std::to_string(line_no) + " is longer than pilot's cap of " +
                            std::to_string(limits::kManifestLineBytes) + " bytes",
                        source, kFix);
      }
      if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
      std::string where = source + ":" + std::to_string(line_no);
      if (Status st = add_item(ParseManifestLine(line, where), where); !st.ok()) return st.error();
    }
    manifest.name = std::filesystem::path(source).stem().string();
  } else {
    auto j = ParseJson(text, source);
    if (!j.ok()) return j.error();
    const auto& doc = j.value();
    if (!doc.is_object() || !doc.contains("items") || !doc["items"].is_array()) {
      return BadInput("a manifest must be an object with an 'items' array", source, kFix);
    }
    for (const auto& [key, _] : doc.items()) {
      if (key != "name" && key != "items") {
        return BadInput("unknown top-level field '" + key + "'", source, "allowed: name, items");
      }
    }
    if (doc.contains("name")) {
      if (!doc["name"].is_string()) return BadInput("'name' must be a string", source, kFix);
      manifest.name = doc["name"].get<std::string>();
    }
    std::size_t index = 0;
    // Not doc["items"].size(): an array of a million zeros must not reserve a million items.
    reserve(std::min<std::size_t>({doc["items"].size(), text.size() / 97 + 1, std::size_t{1} << 16}));
    for (const auto& item : doc["items"]) {
      if (Status st = add(item, source + " item " + std::to_string(index++)); !st.ok()) {
        return st.error();
      }
    }
  }
  if (manifest.items.empty()) return BadInput("the manifest has no items", source, kFix);
  return manifest;
}

Result<Manifest> LoadManifest(FileSystem& fs, const std::filesystem::path& file) {
  auto text = ReadCapped(fs, file, limits::kManifestJsonBytes, "manifest");
  if (!text.ok()) return text.error();
  return ParseManifest(text.value(), file.extension() == ".jsonl", file.string());
}

ManifestSource ManifestSource::OpenPinned(FileSystem& fs, const std::filesystem::path& file,
                                          std::size_t count, std::string sha256) {
  ManifestSource src;
  src.fs_ = &fs;
  src.file_ = file;
  src.jsonl_ = file.extension() == ".jsonl";
  src.count_ = count;
  src.name_ = file.stem().string();
  src.sha256_ = std::move(sha256);
  return src;
}

Result<ManifestSource> ManifestSource::Open(FileSystem& fs, const std::filesystem::path& file,
                                            ManifestIndex* index) {
  ManifestSource src;
  src.fs_ = &fs;
  src.file_ = file;
  src.jsonl_ = file.extension() == ".jsonl";
  if (!src.jsonl_) {
    auto text = ReadCapped(fs, file, limits::kManifestJsonBytes, "manifest");
    if (!text.ok()) return text.error();
    auto m = ParseManifest(text.value(), false, file.string());
    if (!m.ok()) return m.error();
    src.sha256_ = Sha256Hex(text.value());
    src.count_ = m.value().items.size();
    src.name_ = m.value().name;
    src.loaded_ = std::move(m).value();
    if (index) {
      const auto& items = src.loaded_->items;
      index->ids.Reserve(items.size());
      for (std::size_t k = 0; k < items.size(); ++k) {
        index->ids.Insert(items[k].id);
        if (items[k].expected_rejection) index->expected_rejection[k] = *items[k].expected_rejection;
        if (items[k].expected) index->expected[k] = *items[k].expected;
      }
    }
    return src;
  }
  auto in = LineReader::Open(fs, file, limits::kManifestLineBytes);
  if (!in.ok())
    return BadInput("cannot read the manifest: " + in.error().what, file.string(),
                    "check the path (--manifest or params)");
  // Only the ids are kept while validating (compactly): the duplicate check.
  ManifestIndex local;
  ManifestIndex& kept = index ? *index : local;
  IdIndex& ids = kept.ids;
  Sha256Stream hash;
  Status st = StreamJsonLines(
      in.value(), file.string(),
      [&](ManifestItem&& item, const std::string& where) -> Status {
        if (!ids.Insert(item.id)) {
          if (ids.size() >= IdIndex::kMaxIds) return BadInput("too many items", where, kFix);
          return BadInput("duplicate id '" + item.id + "'", where,
                          "every id must be unique; nothing was run");
        }
        if (index && item.expected_rejection)
          kept.expected_rejection[ids.size() - 1] = *item.expected_rejection;
        if (index && item.expected) kept.expected[ids.size() - 1] = *item.expected;
        return {};
      },
      nullptr, &hash);
  if (!st.ok()) return st.error();
  if (ids.empty()) return BadInput("the manifest has no items", file.string(), kFix);
  src.sha256_ = hash.Finish();
  src.count_ = ids.size();
  src.name_ = file.stem().string();
  return src;
}

void ManifestSource::Rebind(const std::filesystem::path& copy) { file_ = copy; }

Status ManifestSource::ForEach(const std::function<Status(const ManifestItem&)>& fn,
                               const std::function<bool(std::string_view)>& skip) const {
  if (loaded_) {
    for (const auto& item : loaded_->items) {
      if (skip && skip(item.id)) continue;
      if (Status st = fn(item); !st.ok()) return st;
    }
    return {};
  }
  auto in = LineReader::Open(*fs_, file_, limits::kManifestLineBytes);
  if (!in.ok()) return in.error();
  return StreamJsonLines(
      in.value(), file_.string(),
      [&](ManifestItem&& item, const std::string&) -> Status {
        if (skip && skip(item.id)) return {};
        return fn(item);
      },
      skip);
}

std::string ManifestToJson(const Manifest& manifest) {
  nlohmann::ordered_json doc;
  doc["name"] = manifest.name;
  doc["items"] = nlohmann::ordered_json::array();
  for (const auto& item : manifest.items) {
    nlohmann::ordered_json j;
    j["id"] = item.id;
    j["path"] = item.path;
    j["sha256"] = item.sha256;
    if (item.expected) j["expected"] = *item.expected;
    if (item.expected_rejection) j["expected_rejection"] = *item.expected_rejection;
    doc["items"].push_back(std::move(j));
  }
  return PrettyJson(doc);
}

}  // namespace pilot

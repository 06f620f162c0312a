#include "pilot/manifest.h"

#include <set>
#include <unordered_set>

#include "pilot/fs.h"
#include "pilot/hash.h"
#include "pilot/json_util.h"
#include "pilot/limits.h"
#include "pilot/reasons.h"

namespace pilot {
namespace {

const char* kFix = "fix the manifest; nothing was run";

Result<std::string> RequiredString(const nlohmann::json& item, const char* key,
                                   const std::string& where) {
  auto it = item.find(key);
  if (it == item.end()) return BadInput(std::string("missing field '") + key + "'", where, kFix);
  if (!it->is_string()) return BadInput(std::string("field '") + key + "' must be a string", where, kFix);
  return it->get<std::string>();
}

Result<ManifestItem> ParseItem(const nlohmann::json& j, const std::string& where_base) {
  if (!j.is_object()) return BadInput("an item must be a JSON object", where_base, kFix);
  std::string where = where_base;
  if (auto id = j.find("id"); id != j.end() && id->is_string()) where += " id " + id->get<std::string>();
  for (const auto& [key, _] : j.items()) {
    if (key != "id" && key != "path" && key != "sha256" && key != "expected" &&
        key != "expected_rejection") {
      return BadInput("unknown field '" + key + "'", where,
                      "allowed: id, path, sha256, expected, expected_rejection");
    }
  }
  ManifestItem item;
  for (auto [key, dest] : {std::pair{"id", &item.id}, std::pair{"path", &item.path},
                           std::pair{"sha256", &item.sha256}}) {
    auto v = RequiredString(j, key, where);
    if (!v.ok()) return v.error();
    *dest = v.value();
  }
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
  if (auto e = j.find("expected"); e != j.end()) {
    if (!e->is_string() || e->get<std::string>().empty()) {
      return BadInput("'expected' must be a non-empty string", where, kFix);
    }
    item.expected = e->get<std::string>();
  }
  if (auto e = j.find("expected_rejection"); e != j.end()) {
    if (!e->is_string() || !reason::IsKnown(e->get<std::string>())) {
      return BadInput("'expected_rejection' must be a known reason code", where,
                      "see the reason codes in the README");
    }
    item.expected_rejection = e->get<std::string>();
  }
  if (item.expected && item.expected_rejection) {
    return BadInput("an item cannot have both 'expected' and 'expected_rejection'", where, kFix);
  }
  return item;
}

// The id of a line that starts {"id":"<id>", without parsing it; empty if it does not.
std::string_view LeadingId(std::string_view line) {
  constexpr std::string_view kPrefix = "{\"id\":\"";
  if (line.substr(0, kPrefix.size()) != kPrefix) return {};
  auto end = line.find('"', kPrefix.size());
  if (end == std::string_view::npos) return {};
  std::string_view id = line.substr(kPrefix.size(), end - kPrefix.size());
  return IsValidItemId(id) ? id : std::string_view();
}

using ItemFn = std::function<Status(const nlohmann::json&, const std::string&)>;

// Calls fn(parsed line, "file:line") for each non-blank line not skipped. With `hash`,
// every byte read is hashed: the sha256 of exactly what was validated.
Status StreamJsonLines(LineReader& in, const std::string& source, const ItemFn& fn,
                       const std::function<bool(std::string_view)>& skip = nullptr, Sha256Stream* hash = nullptr) {
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
    auto j = ParseJson(line, where);
    if (!j.ok()) return j.error();
    if (Status st = fn(j.value(), where); !st.ok()) return st;
  }
}

}  // namespace

bool IsValidItemId(std::string_view id) {
  if (id.empty() || id.size() > 128) return false;
  for (char c : id) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

Result<Manifest> ParseManifest(std::string_view text, bool jsonl, const std::string& source) {
  Manifest manifest;
  std::set<std::string> seen;
  auto add = [&](const nlohmann::json& j, const std::string& where) -> Status {
    auto item = ParseItem(j, where);
    if (!item.ok()) return item.error();
    if (!seen.insert(item.value().id).second) {
      return BadInput("duplicate id '" + item.value().id + "'", where,
                      "every id must be unique; nothing was run");
    }
    manifest.items.push_back(std::move(item).value());
    return {};
  };
  if (jsonl) {
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
      auto j = ParseJson(line, where);
      if (!j.ok()) return j.error();
      if (Status st = add(j.value(), where); !st.ok()) return st.error();
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
    for (const auto& item : doc["items"]) {
      if (Status st = add(item, source + " item " + std::to_string(index++)); !st.ok()) {
        return st.error();
      }
    }
  }
  if (manifest.items.empty()) return BadInput("the manifest has no items", source, kFix);
  return manifest;
}

Result<Manifest> LoadManifest(const std::filesystem::path& file) {
  auto text = ReadCapped(RealFileSystem(), file, limits::kManifestJsonBytes, "manifest");
  if (!text.ok()) return text.error();
  return ParseManifest(text.value(), file.extension() == ".jsonl", file.string());
}

Result<ManifestSource> ManifestSource::Open(const std::filesystem::path& file) {
  ManifestSource src;
  src.file_ = file;
  src.jsonl_ = file.extension() == ".jsonl";
  if (!src.jsonl_) {
    auto text = ReadCapped(RealFileSystem(), file, limits::kManifestJsonBytes, "manifest");
    if (!text.ok()) return text.error();
    auto m = ParseManifest(text.value(), false, file.string());
    if (!m.ok()) return m.error();
    src.sha256_ = Sha256Hex(text.value());
    src.count_ = m.value().items.size();
    src.name_ = m.value().name;
    src.loaded_ = std::move(m).value();
    return src;
  }
  auto in = LineReader::Open(file, limits::kManifestLineBytes);
  if (!in.ok()) return BadInput("cannot read the manifest: " + in.error().what, file.string(), "check the path (--manifest or params)");
  std::unordered_set<std::string> ids;
  Sha256Stream hash;
  Status st = StreamJsonLines(in.value(), file.string(), [&](const nlohmann::json& j, const std::string& where) -> Status {
    auto item = ParseItem(j, where);
    if (!item.ok()) return item.error();
    if (!ids.insert(item.value().id).second) {
      return BadInput("duplicate id '" + item.value().id + "'", where, "every id must be unique; nothing was run");
    }
    return {};
  }, nullptr, &hash);
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
  auto in = LineReader::Open(file_, limits::kManifestLineBytes);
  if (!in.ok()) return in.error();
  return StreamJsonLines(in.value(), file_.string(), [&](const nlohmann::json& j, const std::string& where) -> Status {
    auto item = ParseItem(j, where);
    if (!item.ok()) return item.error();
    if (skip && skip(item.value().id)) return {};
    return fn(item.value());
  }, skip);
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

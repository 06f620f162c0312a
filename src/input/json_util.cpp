#include "pilot/json_util.h"

#include <cmath>
#include <filesystem>
#include <set>
#include <vector>

#include "pilot/credentials.h"
#include "pilot/escape.h"

namespace pilot {
namespace {

using nlohmann::json;

// Thrown from the parser callback to stop parsing; caught in ParseJson.
struct Refusal {
  std::string what;
};

// Tracks where the parser is (for duplicate keys and their path) and how deep.
class Tracker {
 public:
  explicit Tracker(std::size_t max_depth) : max_depth_(max_depth) {}

  // For either kind of document (json, ordered_json): the events are the same.
  template <typename Json>
  bool operator()(int depth, json::parse_event_t event, Json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (static_cast<std::size_t>(depth) >= max_depth_) {
          throw Refusal{"nested deeper than pilot's cap of " + std::to_string(max_depth_) + " levels (at " +
                        Path() + ")"};
        }
        StartElement();
        frames_.push_back(Frame{event == json::parse_event_t::object_start, {}, {}, 0});
        break;
      case json::parse_event_t::key: {
        Frame& f = frames_.back();
        const std::string& key = parsed.template get_ref<const std::string&>();
        if (!f.keys.insert(key).second) {
          f.key = key;
          throw Refusal{"duplicate key '" + Path() + "': a key may appear once in an object"};
        }
        f.key = key;
        break;
      }
      case json::parse_event_t::value:
        StartElement();
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        frames_.pop_back();
        break;
    }
    return true;
  }

  // The JSON path of the element being parsed ("stage.options.min_confidence", "[3]").
  std::string Where() const { return Path(); }

 private:
  struct Frame {
    bool object;
    std::set<std::string> keys;
    std::string key;       // object: the current key
    std::size_t next = 0;  // array: index of the next element
  };

  void StartElement() {
    if (!frames_.empty() && !frames_.back().object) ++frames_.back().next;
  }

  std::string Path() const {
    std::string p;
    for (const Frame& f : frames_) {
      if (f.object) {
        p += (p.empty() ? "" : ".") + KeyForMessage(f.key);
      } else {
        p += "[" + std::to_string(f.next == 0 ? 0 : f.next - 1) + "]";
      }
    }
    return p.empty() ? "the top level" : p;
  }

  std::size_t max_depth_;
  std::vector<Frame> frames_;
};

std::string Position(std::string_view text, std::size_t byte) {
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

}  // namespace

namespace {

// One parse with the checks above, into either kind of document.
template <typename Json>
Result<Json> ParseChecked(std::string_view text, const std::string& source, std::size_t max_depth) {
  Tracker tracker(max_depth);
  try {
    return Json::parse(text.begin(), text.end(), std::ref(tracker));
  } catch (const Refusal& r) {
    return BadInput(r.what, source, "fix the file");
  } catch (const json::parse_error& e) {
    // e.what() quotes the text near the error ("last read: ..."), which may be a secret.
    return BadInput("not valid JSON: syntax error at " + Position(text, e.byte == 0 ? 0 : e.byte - 1), source,
                    "fix the file's syntax");
  } catch (const json::out_of_range& e) {
    // 406: a number past what a double holds (1e400); the element, never the text, is named.
    return BadInput(std::string(e.id == 406 ? "a number too large to hold" : "a value out of range") +
                        ", near " + tracker.Where(),
                    source, "fix the file");
  } catch (const json::exception& e) {
    return BadInput("not valid JSON (error " + std::to_string(e.id) + ")", source, "fix the file");
  }
}

}  // namespace

Result<json> ParseJson(std::string_view text, const std::string& source, std::size_t max_depth) {
  return ParseChecked<json>(text, source, max_depth);
}

Result<nlohmann::ordered_json> ParseOrderedJson(std::string_view text, const std::string& source,
                                                std::size_t max_depth) {
  return ParseChecked<nlohmann::ordered_json>(text, source, max_depth);
}

std::string PrettyJson(const nlohmann::ordered_json& doc) {
  return doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string JsonLine(const nlohmann::ordered_json& doc) {
  return doc.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string KeyForMessage(std::string_view key) {
  bool plain = !key.empty() && key.size() <= 64;
  for (char c : key) {
    plain = plain && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '_' || c == '-' || c == '.');
  }
  if (plain && !ValueLooksLikeCredential(key)) return std::string(key);
  return "<a key of " + std::to_string(key.size()) + " bytes, not shown>";
}

std::string ValueForMessage(std::string_view value, std::size_t max) {
  if (ValueLooksLikeCredential(value)) {
    return "<a value of " + std::to_string(value.size()) + " bytes that looks like a credential, not shown>";
  }
  return ShowUntrusted(value, max);
}

std::optional<std::string> StringAt(const json& j, const char* key) {
  if (!j.is_object()) return std::nullopt;
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

std::optional<double> NumberAt(const json& j, const char* key) {
  if (!j.is_object()) return std::nullopt;
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

std::optional<std::uint64_t> UnsignedAt(const json& j, const char* key) {
  if (!j.is_object()) return std::nullopt;
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_unsigned()) return std::nullopt;
  return it->get<std::uint64_t>();
}

std::string JsonFields::Join(const std::string& parent, const char* key) {
  return parent.empty() ? std::string(key) : parent + "." + key;
}

std::string JsonFields::Where(const std::string& path) const {
  return path.empty() ? file_ : file_ + " key " + path;
}

Error JsonFields::Wrong(const std::string& parent, const char* key, const char* what) const {
  const std::string path = Join(parent, key);
  return BadInput("'" + path + "' is missing or not " + what, Where(path), hint_);
}

Result<const json*> JsonFields::Object(const json& obj, const char* key, const std::string& parent) const {
  auto it = obj.is_object() ? obj.find(key) : obj.end();
  if (it == obj.end() || !it->is_object()) return Wrong(parent, key, "an object");
  return &*it;
}

Result<const json*> JsonFields::Array(const json& obj, const char* key, const std::string& parent) const {
  auto it = obj.is_object() ? obj.find(key) : obj.end();
  if (it == obj.end() || !it->is_array()) return Wrong(parent, key, "a list");
  return &*it;
}

Result<double> JsonFields::Number(const json& obj, const char* key, const std::string& parent) const {
  auto v = NumberAt(obj, key);
  if (!v || !std::isfinite(*v) || *v < 0) return Wrong(parent, key, "a number >= 0");
  return *v;
}

Result<std::optional<double>> JsonFields::NumberOrNull(const json& obj, const char* key,
                                                       const std::string& parent) const {
  auto it = obj.is_object() ? obj.find(key) : obj.end();
  if (it == obj.end() || it->is_null()) return std::optional<double>();
  auto v = Number(obj, key, parent);
  if (!v.ok()) return v.error();
  return std::optional<double>(v.value());
}

Result<std::uint64_t> JsonFields::Unsigned(const json& obj, const char* key,
                                           const std::string& parent) const {
  auto v = UnsignedAt(obj, key);
  if (!v) return Wrong(parent, key, "a whole number");
  return *v;
}

Result<bool> JsonFields::Bool(const json& obj, const char* key, const std::string& parent) const {
  auto it = obj.is_object() ? obj.find(key) : obj.end();
  if (it == obj.end() || !it->is_boolean()) return Wrong(parent, key, "true or false");
  return it->get<bool>();
}

Result<std::string> JsonFields::String(const json& obj, const char* key, const std::string& parent,
                                       std::size_t max_bytes) const {
  auto v = StringAt(obj, key);
  if (!v || v->empty() || v->size() > max_bytes) return Wrong(parent, key, "a string");
  return *v;
}

const json& MemberOrNull(const json& j, const char* key) {
  static const json null;
  if (!j.is_object()) return null;
  auto it = j.find(key);
  return it == j.end() ? null : *it;
}

Error SettingsReader::Wrong(const char* key, const std::string& what) const {
  return BadInput("'" + Key(key) + "' " + what, source_, hint_);
}

SettingsReader SettingsReader::Child(const char* key) const {
  return SettingsReader(MemberOrNull(obj_, key), Key(key), source_, hint_);
}

Status SettingsReader::String(const char* key, std::string& out, bool required) const {
  if (!Has(key)) return required ? Status(Wrong(key, "is required")) : Status();
  const json& v = obj_[key];
  if (!v.is_string() || v.get<std::string>().empty()) return Wrong(key, "must be a non-empty string");
  out = v.get<std::string>();
  return {};
}

Status SettingsReader::Path(const char* key, const std::filesystem::path& base_dir,
                            std::filesystem::path& out) const {
  std::string p;
  PILOT_TRY(String(key, p, true));
  if (p.find('\0') != std::string::npos) return Wrong(key, "must not hold a NUL character");
  out = (base_dir / p).lexically_normal();
  return {};
}

Status SettingsReader::OneOf(const char* key, std::string& out,
                             std::initializer_list<const char*> allowed) const {
  if (!Has(key)) return {};
  PILOT_TRY(String(key, out, true));
  std::string list;
  for (const char* a : allowed) {
    if (out == a) return {};
    list += (list.empty() ? "" : ", ") + std::string(a);
  }
  return Wrong(key, "must be one of " + list);
}

Status SettingsReader::Whole(const char* key, std::uint64_t& out, std::uint64_t lo, std::uint64_t hi) const {
  if (!Has(key)) return {};
  const json& v = obj_[key];
  const std::string range = "between " + std::to_string(lo) + " and " + std::to_string(hi);
  if (!v.is_number()) return Wrong(key, "must be a whole number " + range);
  if (!v.is_number_integer())
    return Wrong(key, "must be a whole number " + range + " (not " + KeyForMessage(v.dump()) + ")");
  if (!v.is_number_unsigned()) return Wrong(key, "must be " + range);
  const std::uint64_t n = v.get<std::uint64_t>();
  if (n < lo || n > hi) return Wrong(key, "must be " + range);
  out = n;
  return {};
}

Status SettingsReader::Number(const char* key, double& out, double lo, double hi, bool open_lo,
                              bool open_hi) const {
  if (!Has(key)) return {};
  const json& v = obj_[key];
  const std::string range =
      std::string(open_lo ? "(" : "[") + json(lo).dump() + ", " + json(hi).dump() + (open_hi ? ")" : "]");
  if (!v.is_number()) return Wrong(key, "must be a number in " + range);
  const double d = v.get<double>();
  if (!std::isfinite(d) || d < lo || d > hi || (open_lo && d == lo) || (open_hi && d == hi)) {
    return Wrong(key, "must be in " + range);
  }
  out = d;
  return {};
}

Status SettingsReader::Optional(const char* key, std::optional<double>& out, double lo, double hi) const {
  if (!Has(key)) return {};
  double v = 0;
  PILOT_TRY(Number(key, v, lo, hi));
  out = v;
  return {};
}

Status CheckKnownKeys(const json& obj, std::initializer_list<const char*> allowed, const std::string& where,
                      const std::string& source, const std::string& hint) {
  if (!obj.is_object()) return BadInput("'" + where + "' must be an object", source, hint);
  for (const auto& [key, _] : obj.items()) {
    bool ok = false;
    std::string list;
    for (const char* a : allowed) {
      ok = ok || key == a;
      list += (list.empty() ? "" : ", ") + std::string(a);
    }
    if (!ok) {
      std::string path = (where.empty() ? "" : where + ".") + KeyForMessage(key);
      return BadInput("unknown key '" + path + "'", source,
                      "a typo must not fall back to a default; allowed here: " + list);
    }
  }
  return {};
}

}  // namespace pilot

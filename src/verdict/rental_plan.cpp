// `pilot plan` (rental_plan.h): the price file, the measurement read from a verified folder,
// the corpus, and the arithmetic of cards x period x lots.
#include "pilot/verdict/rental_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "pilot/escape.h"
#include "pilot/fleet/calibrate.h"
#include "pilot/folder_files.h"
#include "pilot/folder_kind.h"
#include "pilot/hash.h"
#include "pilot/json_util.h"
#include "pilot/limits.h"
#include "pilot/manifest.h"
#include "pilot/paths.h"
#include "pilot/report.h"
#include "pilot/shard.h"
#include "pilot/sweep/sweep_files.h"
#include "pilot/verify.h"

namespace pilot {

namespace fs = std::filesystem;
using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

const char* DeviceClassName(DeviceClass c) {
  switch (c) {
    case DeviceClass::kCpu:
      return "cpu";
    case DeviceClass::kCuda:
      return "cuda";
    case DeviceClass::kRocm:
      return "rocm";
  }
  return "cpu";  // unreachable: -Wswitch lists every class
}

std::optional<DeviceClass> ParseDeviceClass(std::string_view name) {
  if (name == "cpu") return DeviceClass::kCpu;
  if (name == "cuda") return DeviceClass::kCuda;
  if (name == "rocm") return DeviceClass::kRocm;
  return std::nullopt;
}

namespace {

bool IsFinitePositive(double v) { return std::isfinite(v) && v > 0; }

bool IsPrintableText(std::string_view s, std::size_t max) {
  if (s.empty() || s.size() > max || s.front() == ' ' || s.back() == ' ') return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c <= 0x7e; });
}

// A shortened value for a message: printable ASCII only, at most 64 characters.
std::string Shown(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 64)) out += (c >= 0x20 && c <= 0x7e) ? c : '?';
  if (s.size() > 64) out += "...";
  return out;
}

// --- the price file ------------------------------------------------------------------------

const char* const kPriceHint =
    "see config/prices.example.json and docs/ending.md, 'pilot plan', for the format";

Result<CardType> ParseCard(const json& c, const std::string& source, const std::string& at,
                           std::set<std::string>& names) {
  auto bad = [&](const std::string& what, const std::string& key) {
    return BadInput(what, source + ": " + at + (key.empty() ? "" : "." + key), kPriceHint);
  };
  if (!c.is_object()) return bad("a card must be an object", "");
  static const std::set<std::string> kKeys = {"name",      "class", "memory_gb", "cards_per_lot",
                                              "lot_price", "match", "stand_in"};
  for (const auto& [key, value] : c.items()) {
    if (!kKeys.count(key))
      return bad("unknown key '" + KeyForMessage(key) + "' (a typo would silently drop a figure)",
                 KeyForMessage(key));
  }
  for (const char* key : {"name", "class", "memory_gb", "cards_per_lot", "lot_price"}) {
    if (!c.contains(key)) return bad("missing key '" + std::string(key) + "'", key);
  }
  CardType card;
  auto name = StringAt(c, "name");
  if (!name || !IsPrintableText(*name, kMaxCardNameChars)) {
    return bad("'name' must be 1-" + std::to_string(kMaxCardNameChars) + " printable characters", "name");
  }
  if (!names.insert(*name).second) return bad("card '" + *name + "' is listed twice", "name");
  card.name = *name;
  auto cls = StringAt(c, "class");
  auto parsed_class = cls ? ParseDeviceClass(*cls) : std::nullopt;
  if (!parsed_class) return bad("'class' must be \"cuda\", \"rocm\" or \"cpu\"", "class");
  card.device_class = *parsed_class;
  auto memory = NumberAt(c, "memory_gb");
  if (!memory || !IsFinitePositive(*memory) || *memory > 65536) {
    return bad("'memory_gb' must be a number > 0 (GB of one card's memory, at most 65536)", "memory_gb");
  }
  card.memory_gb = *memory;
  const json& per_lot = c["cards_per_lot"];
  if (!per_lot.is_number_integer() || per_lot.get<std::int64_t>() < 1 ||
      per_lot.get<std::int64_t>() > kMaxCardsPerLot) {
    return bad(
        "'cards_per_lot' must be a whole number 1-" + std::to_string(kMaxCardsPerLot) + " (a B200 lot: 2)",
        "cards_per_lot");
  }
  card.cards_per_lot = static_cast<int>(per_lot.get<std::int64_t>());
  const json& prices = c["lot_price"];
  if (!prices.is_object() || prices.empty()) {
    return bad("'lot_price' must be an object of period (\"3\", \"7\", \"30\" days) to the price of one lot",
               "lot_price");
  }
  for (const auto& [period, price] : prices.items()) {
    int days = period == "3" ? 3 : period == "7" ? 7 : period == "30" ? 30 : 0;
    if (days == 0) {
      return bad(
          "period '" + KeyForMessage(period) + "' is not offered: rentals are \"3\", \"7\" or \"30\" days",
          "lot_price." + KeyForMessage(period));
    }
    if (!price.is_number() || !IsFinitePositive(price.get<double>()) || price.get<double>() > 1e12) {
      return bad("the price of one lot must be a number > 0 (at most 1e12)", "lot_price." + period);
    }
    card.lot_price[days] = price.get<double>();
  }
  if (c.contains("match")) {
    const json& m = c["match"];
    if (!m.is_array() || m.empty() || m.size() > kMaxMatches) {
      return bad("'match' must be a list of 1-" + std::to_string(kMaxMatches) +
                     " device names (doctor's, as in \"H100\")",
                 "match");
    }
    for (std::size_t i = 0; i < m.size(); ++i) {
      if (!m[i].is_string() || !IsPrintableText(m[i].get<std::string>(), kMaxCardNameChars)) {
        return bad("each 'match' must be 1-" + std::to_string(kMaxCardNameChars) + " printable characters",
                   "match[" + std::to_string(i) + "]");
      }
      card.match.push_back(m[i].get<std::string>());
    }
  }
  if (c.contains("stand_in")) {
    if (!c["stand_in"].is_boolean()) return bad("'stand_in' must be true or false", "stand_in");
    card.stand_in = c["stand_in"].get<bool>();
  }
  return card;
}

}  // namespace

Result<PriceList> ParsePrices(std::string_view text, const std::string& source) {
  if (text.size() > kPricesBytes) {
    return BadInput("larger than pilot's cap for a price file (" + std::to_string(kPricesBytes) + " bytes)",
                    source);
  }
  auto parsed = ParseJson(text, source, 16);
  if (!parsed.ok()) return parsed.error();
  const json& j = parsed.value();
  auto bad = [&](const std::string& what, const std::string& key) {
    return BadInput(what, key.empty() ? source : source + ": " + key, kPriceHint);
  };
  if (!j.is_object()) return bad("a price file is a JSON object with 'currency' and 'cards'", "");
  static const std::set<std::string> kKeys = {"example", "currency", "note", "cards"};
  for (const auto& [key, value] : j.items()) {
    if (!kKeys.count(key)) return bad("unknown key '" + KeyForMessage(key) + "'", KeyForMessage(key));
  }
  PriceList p;
  if (j.contains("example")) {
    if (!j["example"].is_boolean()) return bad("'example' must be true or false", "example");
    p.example = j["example"].get<bool>();
  }
  auto currency = StringAt(j, "currency");
  if (!currency || !IsPrintableText(*currency, 16)) {
    return bad("'currency' must be 1-16 printable characters (e.g. \"EUR\")", "currency");
  }
  p.currency = *currency;
  if (j.contains("note")) {
    auto note = StringAt(j, "note");
    if (!note || note->size() > kMaxPriceNoteChars || !IsPrintableText(*note, kMaxPriceNoteChars)) {
      return bad(
          "'note' must be printable text of at most " + std::to_string(kMaxPriceNoteChars) + " characters",
          "note");
    }
    p.note = *note;
  }
  if (!j.contains("cards") || !j["cards"].is_array() || j["cards"].empty() ||
      j["cards"].size() > kMaxCardTypes) {
    return bad("'cards' must be a list of 1-" + std::to_string(kMaxCardTypes) + " card types", "cards");
  }
  std::set<std::string> names;
  for (std::size_t i = 0; i < j["cards"].size(); ++i) {
    auto card = ParseCard(j["cards"][i], source, "cards[" + std::to_string(i) + "]", names);
    if (!card.ok()) return card.error();
    p.cards.push_back(std::move(card).value());
  }
  return p;
}

Result<PriceList> LoadPrices(FileSystem& fsys, const fs::path& file) {
  auto text = ReadCapped(fsys, file, kPricesBytes, "price file");
  if (!text.ok()) return text.error();
  auto prices = ParsePrices(text.value(), file.string());
  if (!prices.ok()) return prices.error();
  PriceList p = std::move(prices).value();
  p.file = file.string();
  p.sha256 = Sha256Hex(text.value());
  return p;
}

// --- the inputs' length mix --------------------------------------------------------------------

namespace {

LengthMix MixOf(FileSystem& fsys, const ManifestSource& source, const fs::path& root) {
  LengthMix mix;
  mix.items = source.size();
  auto resolved = fsys.Resolve(root);
  if (!resolved.ok()) {
    mix.missing = std::min(mix.items, kMaxSizedInputs);
    return mix;
  }
  std::size_t seen = 0;
  const Status walked = source.ForEach([&](const ManifestItem& item) -> Status {
    if (seen++ >= kMaxSizedInputs) return BadInput("enough", "");  // stops the walk: a sample is enough
    ConfinedPath p = ConfinePath(fsys, resolved.value(), item.path);
    auto st = p.inside ? fsys.Stat(p.resolved) : Result<FileStat>(BadInput("outside", item.path));
    if (st.ok() && st.value().exists && st.value().regular) {
      ++mix.sized;
      mix.bytes += st.value().size;
    } else {
      ++mix.missing;
    }
    return Status();
  });
  (void)walked;  // an early stop or an unreadable line leaves a partial (still labelled) mix
  return mix;
}

}  // namespace

LengthMix MeasureInputs(FileSystem& fsys, const fs::path& manifest, const fs::path& root) {
  auto source = ManifestSource::Open(fsys, manifest);
  if (!source.ok()) return LengthMix{};
  return MixOf(fsys, source.value(), root);
}

Result<Corpus> ReadCorpusManifest(FileSystem& fsys, const fs::path& manifest) {
  auto source = ManifestSource::Open(fsys, manifest);
  if (!source.ok()) return source.error();
  Corpus c;
  c.manifest = manifest.string();
  c.items = source.value().size();
  if (c.items == 0) return BadInput("the corpus manifest holds no item", manifest.string());
  fs::path root = manifest.parent_path();
  if (root.empty()) root = ".";
  c.mix = MixOf(fsys, source.value(), root);
  return c;
}

// --- the measurement ---------------------------------------------------------------------------

namespace {

const char* const kDocHint =
    "the folder verifies, so the file was written so or edited and re-hashed: plan from a folder written by "
    "this pilot";

// Typed reads of a folder's documents; every error names the file and the key.
class Docs {
 public:
  Docs(const std::string& folder, const std::map<std::string, json>& docs) : folder_(folder), docs_(docs) {}

  Result<const json*> Get(const std::string& rel) const {
    auto it = docs_.find(rel);
    if (it == docs_.end()) return BadInput("missing", Where(rel, ""));
    if (!it->second.is_object()) return BadInput("not a JSON object", Where(rel, ""));
    return &it->second;
  }
  const json* Find(const std::string& rel) const {
    auto it = docs_.find(rel);
    return it == docs_.end() || !it->second.is_object() ? nullptr : &it->second;
  }
  // obj[key], typed and checked by the one reader of untrusted fields (JsonFields, json_util.h):
  // errors name the file and the key path.
  Result<const json*> Object(const json& obj, const char* key, const std::string& rel,
                             const std::string& path) const {
    return Fields(rel).Object(obj, key, path);
  }
  Result<const json*> Array(const json& obj, const char* key, const std::string& rel,
                            const std::string& path) const {
    return Fields(rel).Array(obj, key, path);
  }
  Result<double> Number(const json& obj, const char* key, const std::string& rel,
                        const std::string& path) const {
    return Fields(rel).Number(obj, key, path);
  }
  // A number or null (absent is null too).
  Result<std::optional<double>> NumberOrNull(const json& obj, const char* key, const std::string& rel,
                                             const std::string& path) const {
    return Fields(rel).NumberOrNull(obj, key, path);
  }
  Result<std::uint64_t> Unsigned(const json& obj, const char* key, const std::string& rel,
                                 const std::string& path) const {
    return Fields(rel).Unsigned(obj, key, path);
  }
  Result<std::string> String(const json& obj, const char* key, const std::string& rel,
                             const std::string& path) const {
    return Fields(rel).String(obj, key, path);
  }
  JsonFields Fields(const std::string& rel) const { return JsonFields(Where(rel, ""), kDocHint); }
  std::string Where(const std::string& rel, const std::string& key) const {
    std::string w = (fs::path(folder_) / rel).string();
    return key.empty() ? w : w + " key " + key;
  }

 private:
  std::string folder_;
  const std::map<std::string, json>& docs_;
};

// "cpu", "cuda", "cuda:N" (ROCm builds of libtorch name their devices cuda too: the
// environment's rocm_available tells), "rocm", "rocm:N".
Result<DeviceClass> ClassOfDevice(const std::string& device, const json* environment, const Docs& docs,
                                  const std::string& rel) {
  if (device == "cpu") return DeviceClass::kCpu;
  const std::string base = device.substr(0, device.find(':'));
  // "cuda" or "cuda:N" exactly: the device is printed and recorded, so nothing else passes.
  const std::string index = device.size() > base.size() ? device.substr(base.size() + 1) : std::string("0");
  if (index.empty() || index.size() > 4 || index.find_first_not_of("0123456789") != std::string::npos ||
      (device.size() > base.size() && device[base.size()] != ':')) {
    return BadInput("device '" + Shown(device) + "' is not one pilot knows (cpu, cuda, cuda:N, rocm, rocm:N)",
                    docs.Where(rel, "plan.device"));
  }
  if (base == "rocm") return DeviceClass::kRocm;
  if (base == "cuda") {
    bool rocm = false;
    if (environment) {
      auto lib = environment->find("libtorch");
      if (lib != environment->end() && lib->is_object()) {
        auto r = lib->find("rocm_available");
        rocm = r != lib->end() && r->is_boolean() && r->get<bool>();
      }
    }
    return rocm ? DeviceClass::kRocm : DeviceClass::kCuda;
  }
  return BadInput("device '" + Shown(device) + "' is not one pilot knows (cpu, cuda, rocm)",
                  docs.Where(rel, "plan.device"));
}

Status FromReport(const Docs& docs, Measurement& m) {
  const std::string rel = kReportJson;
  auto doc = docs.Get(rel);
  if (!doc.ok()) return doc.error();
  auto report = RecordedReportFromJson(*doc.value(), docs.Where(rel, ""), kDocHint);
  if (!report.ok()) return report.error();
  const RecordedReport& r = report.value();
  m.items = r.total;
  if (r.tokens) m.recorded_tokens = r.tokens->total;
  if (r.completion_tokens && m.items > 0)
    m.completion_tokens_per_item = static_cast<double>(*r.completion_tokens) / static_cast<double>(m.items);
  if (IsJoinedKind(m.folder_kind)) {
    // One worker per shard: the shards' rates summed, over the number of shards.
    if (!r.shards || *r.shards == 0 || *r.shards > kMaxShards) {
      return BadInput("'shards.count' must be 1-" + std::to_string(kMaxShards),
                      docs.Where(rel, "shards.count"));
    }
    m.items_per_s_per_card = r.shard_rate_sum / static_cast<double>(*r.shards);
    m.throughput_basis = "the " + std::to_string(*r.shards) +
                         " shards' items/s summed over the number of shards (one worker each), end to end";
  } else {
    m.items_per_s_per_card = r.items_per_second;
    m.throughput_basis = "the run's items/s, one worker, end to end (reading, the model, writing)";
  }
  if (m.device_class != DeviceClass::kCpu && r.device_peak_mb) {
    m.peak_memory_mb = *r.device_peak_mb;
    m.memory_basis = "device";
  } else {
    m.peak_memory_mb = r.peak_rss_mb;
    m.memory_basis = "rss";
  }
  return Status();
}

// A run or shard folder: data/run.json's plan.device.
Status DeviceOfRun(const Docs& docs, Measurement& m) {
  auto run = docs.Get(kRunRecord);
  if (!run.ok()) return run.error();
  auto plan = docs.Object(*run.value(), "plan", kRunRecord, "");
  if (!plan.ok()) return plan.error();
  auto device = docs.String(*plan.value(), "device", kRunRecord, "plan");
  if (!device.ok()) return device.error();
  m.device = device.value();
  auto cls = ClassOfDevice(m.device, docs.Find(kEnvironmentFile), docs, kRunRecord);
  if (!cls.ok()) return cls.error();
  m.device_class = cls.value();
  return Status();
}

// A merged folder: each shard's run.json under data/shards/<shard>/ names its device; all
// must be of one class.
Status MergedDevice(const Docs& docs, const std::map<std::string, json>& all, Measurement& m) {
  std::set<std::string> devices;
  std::optional<DeviceClass> cls;
  for (const auto& [rel, doc] : all) {
    const std::string prefix = std::string(kShardsFolder) + "/";
    const std::string suffix = std::string("/") + kMergedShardRecord;
    if (rel.rfind(prefix, 0) != 0 || rel.size() <= prefix.size() + suffix.size() ||
        rel.compare(rel.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    auto run = docs.Get(rel);
    if (!run.ok()) return run.error();
    auto plan = docs.Object(*run.value(), "plan", rel, "");
    if (!plan.ok()) return plan.error();
    auto device = docs.String(*plan.value(), "device", rel, "plan");
    if (!device.ok()) return device.error();
    const std::string env_rel = rel.substr(0, rel.size() - suffix.size()) + "/" + kMergedShardEnvironment;
    auto c = ClassOfDevice(device.value(), docs.Find(env_rel), docs, rel);
    if (!c.ok()) return c.error();
    if (cls && *cls != c.value()) {
      return BadInput("the shards ran on different classes of device (" + std::string(DeviceClassName(*cls)) +
                          ", " + DeviceClassName(c.value()) + "): one rate per card cannot be read from them",
                      docs.Where(rel, "plan.device"), "plan from a folder measured on one class of device");
    }
    cls = c.value();
    devices.insert(device.value());
  }
  if (!cls) return BadInput("no shard's run.json found under data/shards/", docs.Where(kShardsFolder, ""));
  m.device_class = *cls;
  for (const auto& d : devices) m.device += (m.device.empty() ? "" : ", ") + d;
  if (m.device.size() > 200)
    m.device = std::string(DeviceClassName(*cls)) + " (" + std::to_string(devices.size()) + " devices)";
  return Status();
}

Status FromSweep(const Docs& docs, Measurement& m) {
  const std::string rel = kSweepSummary;
  auto sweep = docs.Get(rel);
  if (!sweep.ok()) return sweep.error();
  const json& s = *sweep.value();
  auto on = docs.Object(s, "measured_on", rel, "");
  if (!on.ok()) return on.error();
  auto device = docs.String(*on.value(), "device", rel, "measured_on");
  if (!device.ok()) return device.error();
  m.device = device.value();
  auto cls = ClassOfDevice(m.device, docs.Find(kEnvironmentFile), docs, rel);
  if (!cls.ok()) return cls.error();
  m.device_class = cls.value();
  auto groups = docs.Array(s, "groups", rel, "");
  if (!groups.ok()) return groups.error();
  auto recs = docs.Array(s, "recommendation", rel, "");
  if (!recs.ok()) return recs.error();
  auto cells = docs.Array(s, "cells", rel, "");
  if (!cells.ok()) return cells.error();
  std::map<std::uint64_t, std::uint64_t> group_items;
  std::size_t sampled = 0;
  for (std::size_t i = 0; i < groups.value()->size(); ++i) {
    const json& g = (*groups.value())[i];
    const std::string at = "groups[" + std::to_string(i) + "]";
    auto number = docs.Unsigned(g, "group", rel, at);
    if (!number.ok()) return number.error();
    auto items = docs.Unsigned(g, "items", rel, at);
    if (!items.ok()) return items.error();
    auto n = docs.Unsigned(g, "sampled", rel, at);
    if (!n.ok()) return n.error();
    group_items[number.value()] = items.value();
    sampled += static_cast<std::size_t>(n.value());
  }
  // Time over the groups: each group's items at its recommended size's rate (weighted by
  // the group's item count), so a slow group of long items weighs what it costs.
  double seconds = 0, weight = 0, peak = 0;
  for (std::size_t i = 0; i < recs.value()->size(); ++i) {
    const json& r = (*recs.value())[i];
    const std::string at = "recommendation[" + std::to_string(i) + "]";
    auto number = docs.Unsigned(r, "group", rel, at);
    if (!number.ok()) return number.error();
    auto it = r.find("batch_size");
    if (it == r.end() || it->is_null()) {
      return BadInput(
          "group " + std::to_string(number.value()) + " has no recommended batch size (no size worked)",
          docs.Where(rel, at + ".batch_size"), "fix what the sweep found in that group, then sweep again");
    }
    auto batch = docs.Unsigned(r, "batch_size", rel, at);
    if (!batch.ok()) return batch.error();
    auto memory = docs.Number(r, "peak_memory_mb", rel, at);
    if (!memory.ok()) return memory.error();
    auto items = group_items.find(number.value());
    if (items == group_items.end()) {
      return BadInput("group " + std::to_string(number.value()) + " is not in 'groups'",
                      docs.Where(rel, at + ".group"));
    }
    std::optional<double> rate;
    for (std::size_t k = 0; k < cells.value()->size(); ++k) {
      const json& c = (*cells.value())[k];
      if (UnsignedAt(c, "group") == number.value() && UnsignedAt(c, "batch_size") == batch.value()) {
        auto v = docs.Number(c, "items_per_second", rel, "cells[" + std::to_string(k) + "]");
        if (!v.ok()) return v.error();
        rate = v.value();
        break;
      }
    }
    if (!rate || !IsFinitePositive(*rate)) {
      return BadInput("no measured items/s for group " + std::to_string(number.value()) +
                          " at its recommended batch " + std::to_string(batch.value()),
                      docs.Where(rel, "cells"));
    }
    const double w = static_cast<double>(std::max<std::uint64_t>(items->second, 1));
    seconds += w / *rate;
    weight += w;
    peak = std::max(peak, memory.value());
  }
  if (weight <= 0) return BadInput("'recommendation' is empty", docs.Where(rel, "recommendation"));
  m.items = sampled;
  m.items_per_s_per_card = weight / seconds;
  m.peak_memory_mb = peak;
  m.memory_basis = m.device_class == DeviceClass::kCpu ? "rss" : "device";
  m.throughput_basis =
      "the sweep's recommended batch size per length group, weighted by each group's item count; "
      "a sweep times the model alone (no reading, hashing or writing)";
  return Status();
}

}  // namespace

Result<Measurement> MeasurementFromDocuments(const std::string& folder, const std::string& folder_kind,
                                             const std::map<std::string, json>& documents) {
  Docs docs(folder, documents);
  Measurement m;
  m.folder = folder;
  m.folder_kind = folder_kind;
  if (auto run = documents.find(kRunRecord); run != documents.end()) {
    if (auto sha = StringAt(run->second, "manifest_sha256"); sha && IsSha256Hex(*sha))
      m.manifest_sha256 = *sha;
  }
  if (folder_kind == kFolderKindSweep) {
    PILOT_TRY(FromSweep(docs, m));
  } else if (HoldsRunResults(folder_kind)) {
    if (IsJoinedKind(folder_kind)) {
      PILOT_TRY(MergedDevice(docs, documents, m));
    } else {
      PILOT_TRY(DeviceOfRun(docs, m));
    }
    PILOT_TRY(FromReport(docs, m));
  } else {
    return BadInput("a folder of kind '" + Shown(folder_kind) + "' holds no measurement to plan from", folder,
                    "give a run, shard, merged or sweep folder");
  }
  if (!IsFinitePositive(m.items_per_s_per_card)) {
    return BadInput("the folder measured no throughput (items/s is 0)", folder,
                    "plan from a run that processed items (accepted or rejected)");
  }
  return m;
}

namespace {

// Reads one of the folder's JSON documents into `docs` (capped, depth-checked). A missing
// optional one is skipped.
Status ReadDoc(FileSystem& fsys, const fs::path& dir, const std::string& rel, std::uint64_t cap,
               bool optional, std::map<std::string, json>& docs) {
  const fs::path file = dir / rel;
  if (optional) {
    auto st = fsys.LinkStat(file);
    if (!st.ok() || !st.value().exists) return Status();
  }
  auto text = ReadCapped(fsys, file, cap, rel);
  if (!text.ok()) return text.error();
  auto parsed = ParseJson(text.value(), file.string());
  if (!parsed.ok()) return parsed.error();
  docs[rel] = std::move(parsed).value();
  return Status();
}

}  // namespace

Status MeasureOutputs(FileSystem& fsys, const fs::path& dir, Measurement& m) {
  m.output_bytes.reset();
  m.output_files.clear();
  if (!HoldsRunResults(m.folder_kind)) return Status();
  std::vector<std::string> files(std::begin(kOutputFiles), std::end(kOutputFiles));
  if (IsJoinedKind(m.folder_kind)) {
    auto entries = fsys.ListDirectory(dir / kShardsFolder);
    if (!entries.ok()) return entries.error();
    std::size_t n = 0;
    for (const DirEntry& e : entries.value()) {
      if (!e.stat.directory || e.stat.symlink) continue;
      if (++n > kMaxShards)
        return BadInput("more shard folders than pilot's cap", (dir / kShardsFolder).string());
      files.push_back(std::string(kShardsFolder) + "/" + e.name + "/" + kMergedShardJournal);
    }
  }
  std::uint64_t bytes = 0;
  for (const std::string& rel : files) {
    auto st = fsys.LinkStat(dir / rel);
    if (!st.ok()) return st.error();
    if (!st.value().exists || !st.value().regular || st.value().symlink) continue;
    bytes += st.value().size;
    m.output_files.push_back(rel);
  }
  m.output_bytes = bytes;
  return Status();
}

Result<Measurement> ReadMeasurement(FileSystem& fsys, const fs::path& dir,
                                    const std::optional<std::string>& expect) {
  // A link in the folder's place is "not a folder": the folder itself is given, never a link.
  auto kind = OpenPilotFolder(fsys, dir, "plan from", "folder",
                              "give a finished run, merged, sweep or calibration folder");
  if (!kind.ok()) return kind.error();
  VerifyOptions options;
  options.expect_fingerprint = expect;
  auto verified = VerifyFolder(fsys, dir, options);
  if (!verified.ok()) return verified.error();
  const VerifyResult& v = verified.value();
  if (!v.ok()) {
    std::string first;
    for (std::size_t i = 0; i < v.findings.size() && i < 3; ++i) {
      const Finding& f = v.findings[i];
      first += (i ? "; " : "") + ("[" + f.check + "] " + Shown(f.where) + ": " + Shown(f.what));
    }
    return BadInput(
        "the folder fails verification with " + std::to_string(v.findings.size()) + " finding(s): " + first,
        dir.string(),
        "run `pilot verify " + dir.string() + "` for every finding; plan from a folder that verifies");
  }
  // A calibration is measured by the pilot inside it (on the card its doctor names), its fit
  // by the higher of that pilot's peak and its sweep's at the recommended sizes.
  std::optional<CalibrationRecord> calibration;
  fs::path measured = dir;
  std::string k = kind.value().kind;
  if (k == kFolderKindCalibration) {
    auto record = ReadCalibrationRecord(fsys, dir);
    if (!record.ok()) return record.error();
    calibration = record.value();
    measured = dir / kCalibrationPilot;
    k = kFolderKindRun;
  }
  std::map<std::string, json> docs;
  PILOT_TRY(ReadDoc(fsys, measured, kRunRecord, limits::kRunRecordBytes, false, docs));
  PILOT_TRY(ReadDoc(fsys, measured, kEnvironmentFile, limits::kRunRecordBytes, true, docs));
  if (k == kFolderKindSweep) {
    PILOT_TRY(ReadDoc(fsys, measured, kSweepSummary, limits::kReportBytes, false, docs));
  } else {
    PILOT_TRY(ReadDoc(fsys, measured, kReportJson, limits::kReportBytes, false, docs));
  }
  if (IsJoinedKind(k)) {
    auto entries = fsys.ListDirectory(dir / kShardsFolder);
    if (!entries.ok()) return entries.error();
    std::size_t n = 0;
    for (const DirEntry& e : entries.value()) {
      if (!e.stat.directory || e.stat.symlink) continue;
      if (++n > kMaxShards)
        return BadInput("more shard folders than pilot's cap", (dir / kShardsFolder).string());
      PILOT_TRY(ReadDoc(fsys, dir, std::string(kShardsFolder) + "/" + e.name + "/" + kMergedShardRecord,
                        limits::kRunRecordBytes, false, docs));
      PILOT_TRY(ReadDoc(fsys, dir, std::string(kShardsFolder) + "/" + e.name + "/" + kMergedShardEnvironment,
                        limits::kRunRecordBytes, true, docs));
    }
  }
  auto m = MeasurementFromDocuments(measured.string(), k, docs);
  if (!m.ok()) return m.error();
  Measurement out = std::move(m).value();
  out.fingerprint = v.fingerprint;
  // The inputs the measurement ran on: the folder's manifest copy, read from the root it recorded.
  const json& run = docs[kRunRecord];
  auto copy = StringAt(run, "manifest_copy");
  std::optional<std::string> root;
  for (const char* section : {"plan", "request"}) {
    if (!root && run.is_object() && run.contains(section)) root = StringAt(run[section], "inputs_root");
  }
  PILOT_TRY(MeasureOutputs(fsys, measured, out));
  if (copy && (*copy == kManifestCopyJson || *copy == kManifestCopyJsonl) && root) {
    out.mix = MeasureInputs(fsys, measured / *copy, *root);
    out.inputs_manifest = measured / *copy;
    out.inputs_root = *root;
  }
  if (out.mix.items == 0) out.mix.items = out.items;
  if (calibration) {
    std::map<std::string, json> sweep_docs;
    const fs::path sweep = dir / kCalibrationSweep;
    PILOT_TRY(ReadDoc(fsys, sweep, kRunRecord, limits::kRunRecordBytes, false, sweep_docs));
    PILOT_TRY(ReadDoc(fsys, sweep, kSweepSummary, limits::kReportBytes, false, sweep_docs));
    auto swept = MeasurementFromDocuments(sweep.string(), kFolderKindSweep, sweep_docs);
    if (!swept.ok()) return swept.error();
    if (swept.value().memory_basis == out.memory_basis && swept.value().peak_memory_mb > out.peak_memory_mb) {
      out.peak_memory_mb = swept.value().peak_memory_mb;
      out.peak_note = "the calibration's sweep at its recommended sizes (above its pilot's)";
    }
    out.folder = dir.string();
    out.folder_kind = kFolderKindCalibration;
    out.device_name = calibration->device_name;
    out.pilot_fingerprint = calibration->pilot_fingerprint;
    out.throughput_basis = "the calibration's pilot on " +
                           (out.device_name.empty() ? out.device : out.device_name) + ": " +
                           out.throughput_basis;
  }
  return out;
}

// --- the arithmetic --------------------------------------------------------------------------

namespace {

bool Same(double a, double b) {
  return std::fabs(a - b) <= 1e-9 * std::max({1.0, std::fabs(a), std::fabs(b)});
}

}  // namespace

namespace {

// The request's figures, and a measurement that projects to every card listed: the cards of
// another class than the measurement's (which take --assume-scaling).
Result<std::vector<std::string>> CheckPlanRequest(const PlanRequest& request) {
  const Measurement& b = request.basis;
  if (request.corpus.items == 0) return BadInput("the corpus has no item", "--corpus-items", "give N >= 1");
  if (!std::isfinite(request.allowance_hours) || request.allowance_hours < 0 ||
      request.allowance_hours > 10000) {
    return BadInput("the allowance must be 0-10000 hours", "--allowance-hours");
  }
  if (!std::isfinite(request.headroom) || request.headroom < 0 || request.headroom > 0.9) {
    return BadInput("the headroom must be a share 0-0.9 of a card's memory", "--headroom",
                    "e.g. 0.1 keeps 10% free");
  }
  if (!std::isfinite(request.time_resolution_hours) || request.time_resolution_hours < 0 ||
      request.time_resolution_hours > kMaxTimeResolutionHours) {
    return BadInput("the time resolution must be 0-24 hours", "--time-resolution",
                    "e.g. 0.1: plans needing within 6 minutes of the quickest are equally fast");
  }
  if (!IsFinitePositive(request.copy_off_mb_per_s) || request.copy_off_mb_per_s > kMaxCopyOffMBPerS) {
    return BadInput("the copy-off rate must be a number of MB/s > 0 (at most 1e6)", "--copy-off-mb-per-s",
                    "e.g. 100 for about 1 Gbit/s");
  }
  if (request.assume_scaling &&
      (!IsFinitePositive(*request.assume_scaling) || *request.assume_scaling > 1e6)) {
    return BadInput("the scaling factor must be a number > 0 (at most 1e6)", "--assume-scaling");
  }
  if (!IsFinitePositive(b.items_per_s_per_card) || !std::isfinite(b.peak_memory_mb) || b.peak_memory_mb < 0) {
    return BadInput("the measurement has no usable items/s or peak memory", b.folder);
  }
  if (request.prices.cards.empty()) return BadInput("the price file lists no card", request.prices.file);
  if (request.tokens) {
    const TokenProjection& t = *request.tokens;
    if (!t.pilot.known() || !t.corpus.known() || !IsFinitePositive(t.pilot.mean_tokens()) ||
        !IsFinitePositive(t.factor())) {
      return BadInput("a projection by tokens needs both the pilot's and the corpus' inputs tokenized",
                      t.tokenizer_file);
    }
    if (t.factor() > 1e6) {
      return BadInput("the corpus' items average " + FixedDecimals(t.corpus.mean_tokens(), 1) +
                          " tokens, the pilot's " + FixedDecimals(t.pilot.mean_tokens(), 4) +
                          ": more than a million times as many is no projection",
                      t.tokenizer_file, "pilot on a sample of the corpus");
    }
  }

  std::vector<std::string> other_class;
  for (const CardType& c : request.prices.cards) {
    if (c.device_class != b.device_class)
      other_class.push_back(c.name + " (" + DeviceClassName(c.device_class) + ")");
  }
  if (!other_class.empty() && !request.assume_scaling) {
    std::string names;
    for (std::size_t i = 0; i < other_class.size() && i < 8; ++i) names += (i ? ", " : "") + other_class[i];
    if (other_class.size() > 8) names += ", and " + std::to_string(other_class.size() - 8) + " more";
    return BadInput(
        "the measurement was made on " + std::string(DeviceClassName(b.device_class)) + " (" +
            Shown(b.device) + "); it does not project to cards of another class: " + names,
        "--from " + b.folder + " / --prices " + request.prices.file,
        "measure on one such card (pilot run --device cuda|rocm), or pass --assume-scaling F to take F x "
        "the measured items/s per card as an assumption");
  }
  return other_class;
}

// Whether the measured peak fits one card of type `c`, and why (unknown when it was measured
// on another kind of memory).
CardVerdict JudgeCard(const CardType& c, const PlanRequest& request) {
  const Measurement& b = request.basis;
  CardVerdict v;
  v.card = c.name;
  v.device_class = DeviceClassName(c.device_class);
  v.stand_in = c.stand_in;
  v.measured_card = c.device_class == b.device_class && CardMatches(c, b.device_name);
  const std::string on_card = v.measured_card ? "; measured on this card (" + b.device_name + ")" : "";
  v.usable_mb = c.memory_gb * 1024.0 * (1.0 - request.headroom);
  const bool card_gpu = c.device_class != DeviceClass::kCpu;
  const bool judged = (b.memory_basis == "device" && card_gpu) || (b.memory_basis == "rss" && !card_gpu);
  const std::string peak = FixedDecimals(b.peak_memory_mb, 1) + " MB";
  const std::string usable = FixedDecimals(v.usable_mb, 0) + " MB usable of " +
                             FixedDecimals(c.memory_gb, 0) + " GB (" +
                             FixedDecimals(request.headroom * 100, 0) + "% kept free)";
  if (!judged) {
    v.fit = "unknown";
    v.note = b.memory_basis == "rss"
                 ? "the peak (" + peak +
                       ") is resident memory on the CPU, which says nothing about a card's memory; "
                       "measure on one such card to know"
                 : "the peak (" + peak + ") is a GPU allocator's, which says nothing about host memory";
  } else if (b.peak_memory_mb <= v.usable_mb) {
    v.fit = "yes";
    v.note = "peak " + peak + " <= " + usable;
    if (c.device_class != b.device_class)
      v.note += "; measured on " + std::string(DeviceClassName(b.device_class));
  } else {
    v.fit = "no";
    v.note = "needs model parallelism; not covered: peak " + peak + " > " + usable +
             ", and several cards do not pool their memory";
  }
  v.note += on_card;
  return v;
}

// A card type's plans: each period it is offered for, at 1..kMaxLots lots.
void AddPlanRows(const CardType& c, const CardVerdict& v, const PlanRequest& request, RentalPlan& plan) {
  const double copy_off_hours = plan.output.copy_off_hours;
  const Measurement& b = request.basis;
  // By tokens: the corpus weighs its items x its mean tokens per item over the pilot's.
  const double items =
      static_cast<double>(request.corpus.items) * (request.tokens ? request.tokens->factor() : 1.0);
  const bool assumed = c.device_class != b.device_class;
  const double rate = b.items_per_s_per_card * (assumed ? *request.assume_scaling : 1.0);
  const double corpus_items = static_cast<double>(request.corpus.items);
  std::optional<double> corpus_tokens;
  if (request.tokens) corpus_tokens = corpus_items * request.tokens->corpus_mean_tokens();
  for (int days : kRentalPeriodsDays) {
    auto price = c.lot_price.find(days);
    if (price == c.lot_price.end()) continue;  // not offered
    for (int lots = 1; lots <= kMaxLots; ++lots) {
      PlanRow r;
      r.card = c.name;
      r.period_days = days;
      r.lots = lots;
      r.cards = lots * c.cards_per_lot;
      r.fit = v.fit;
      r.rate_basis = assumed ? "assumed" : "measured";
      r.items_per_s_per_card = rate;
      r.compute_hours = items / (rate * r.cards) / 3600.0;
      r.copy_off_hours = copy_off_hours;
      r.needed_hours = r.compute_hours + r.copy_off_hours + request.allowance_hours;
      r.period_suffices = r.needed_hours <= days * 24.0;
      r.cost = price->second * lots;  // a lot is priced once, whatever its card count
      r.cost_per_million_items = r.cost * 1e6 / corpus_items;
      if (corpus_tokens) r.cost_per_million_tokens = r.cost * 1e6 / *corpus_tokens;
      r.fits = r.period_suffices;
      plan.rows.push_back(r);
    }
  }
}

// A projection by tokens: what it rests on.
void AddTokenWarnings(const PlanRequest& request, const Measurement& b, std::vector<std::string>& w) {
  const TokenProjection& t = *request.tokens;
  const double factor = t.factor();
  if (t.completion_per_item > 0) {
    w.push_back("a generator: each item weighs its prompt tokens plus the pilot's " +
                FixedDecimals(t.completion_per_item, 1) +
                " completion tokens per item (the corpus' completions taken to be as long as the pilot's; "
                "generation.max_new_tokens bounds them); the completions' storage is in the output bytes per "
                "item (results.jsonl holds them)");
  }
  if (factor > 1.5 || factor < 1 / 1.5) {
    w.push_back("the corpus' items average " + FixedDecimals(t.corpus.mean_tokens(), 1) +
                " tokens, the pilot's " + FixedDecimals(t.pilot.mean_tokens(), 1) + " (x" +
                FixedDecimals(factor, 2) +
                "): the projection takes time as proportional to tokens, and attention's cost grows faster "
                "than that with length; sweep or pilot on a sample of the corpus");
  }
  if (t.corpus.sampled < t.corpus.items) {
    w.push_back("the corpus' tokens are a sample: " + std::to_string(t.corpus.sampled) + " of " +
                std::to_string(t.corpus.items) + " items (every " + std::to_string(t.corpus.stride) +
                "th), tokenized");
  }
  for (const auto& [who, mix] : {std::pair{"corpus'", &t.corpus}, std::pair{"pilot's", &t.pilot}}) {
    if (mix->unread) {
      w.push_back(
          std::to_string(mix->unread) + " of the " + std::string(who) + " " + std::to_string(mix->sampled) +
          " tokenized items could not be read or encoded (missing, outside its folder, over max_bytes, "
          "not the manifest's sha256, empty, not UTF-8): each counts 0 tokens, as a run rejects it before "
          "the model");
    }
    if (mix->over_max_length) {
      w.push_back(std::to_string(mix->over_max_length) + " of the " + std::string(who) + " " +
                  std::to_string(mix->sampled) + " tokenized items are over max_length " +
                  std::to_string(t.max_length) + ": each counts " + std::to_string(t.max_length) + " tokens" +
                  (t.truncation == "reject"
                       ? " (truncation reject refuses them: an over-count, on the safe side)"
                       : " (truncation truncate cuts them there)"));
    }
  }
  if (b.recorded_tokens && t.pilot.sampled == t.pilot.items && t.pilot.too_long_to_read == 0 &&
      *b.recorded_tokens != t.pilot.raw_tokens) {
    w.push_back("the pilot's inputs tokenize to " + std::to_string(t.pilot.raw_tokens) +
                " tokens now; the run " + "counted " + std::to_string(*b.recorded_tokens) +
                " (report.json tokens.total): its inputs changed since it ran");
  }
}

// What the plan's reader must know: made-up prices, assumptions, unknown fits, and a corpus
// unlike the pilot.
void AddPlanWarnings(const PlanRequest& request, const std::vector<std::string>& other_class,
                     RentalPlan& plan) {
  const Measurement& b = request.basis;
  std::vector<std::string> unknown_fit, parallel;
  for (const CardVerdict& v : plan.cards) {
    if (v.fit == "unknown") unknown_fit.push_back(v.card);
    if (v.fit == "no") parallel.push_back(v.card);
  }
  auto& w = plan.warnings;
  if (request.prices.example) {
    w.push_back("the price file " + request.prices.file +
                " says it is an EXAMPLE with MADE-UP prices: every cost in this plan is fiction; write your "
                "own price file");
  }
  if (request.assume_scaling && !other_class.empty()) {
    w.push_back("ASSUMPTION: items/s on cards of another class than the measurement (" +
                std::string(DeviceClassName(b.device_class)) + ") are the measured rate x " +
                FixedDecimals(*request.assume_scaling, 3) + " (--assume-scaling), not a measurement");
  }
  if (!unknown_fit.empty()) {
    w.push_back(
        "fit unknown on " + std::to_string(unknown_fit.size()) +
        " card type(s): the peak was measured on another kind of memory; such plans are listed, labelled "
        "fit=unknown");
  }
  for (const auto& name : parallel)
    w.push_back(name + ": needs model parallelism; not covered (no plan listed)");
  if (b.folder_kind == kFolderKindSweep) {
    w.push_back(
        "the rate comes from a sweep, which times the model alone: reading, hashing and writing are not in "
        "it");
  }
  for (const CardVerdict& v : plan.cards) {
    if (v.stand_in) {
      w.push_back(v.card +
                  " is a STAND-IN row (the price file says so): its plans show the procedure, not a "
                  "rental");
    }
  }
  if (!b.device_name.empty() && std::none_of(plan.cards.begin(), plan.cards.end(),
                                             [](const CardVerdict& v) { return v.measured_card; })) {
    w.push_back("no card of the price file names the calibrated device '" + b.device_name +
                "' (a card's 'match'): every plan's rate is that device's, taken for another card");
  }
  if (!plan.output.corpus_bytes) {
    w.push_back(
        "the outputs' size is unknown (a sweep keeps no outputs): the needed hours leave out copying them "
        "off; plan from a run folder to count it");
  }
  if (request.tokens) {
    AddTokenWarnings(request, b, w);
  } else {
    if (!request.by_items_why.empty()) w.push_back("the plan projects by items: " + request.by_items_why);
    const LengthMix& pm = b.mix;
    const LengthMix& cm = request.corpus.mix;
    if (pm.known() && cm.known()) {
      const double ratio = cm.mean_bytes() / std::max(pm.mean_bytes(), 1.0);
      if (ratio > 1.5 || ratio < 1 / 1.5) {
        w.push_back("the corpus' inputs average " + FixedDecimals(cm.mean_bytes(), 0) +
                    " bytes, the pilot's " + FixedDecimals(pm.mean_bytes(), 0) + " (x" +
                    FixedDecimals(ratio, 2) +
                    "): the projection scales by item count only; sweep or pilot on a sample of the corpus");
      }
    } else if (!cm.known()) {
      w.push_back(
          "the corpus' length mix is unknown (give --corpus-manifest with its inputs present): the "
          "projection "
          "assumes the corpus' items are like the pilot's");
    }
  }
  if (!plan.any_fits()) w.push_back("no plan fits: no card type, period and lot count covers the corpus");
}

}  // namespace

Result<RentalPlan> BuildRentalPlan(const PlanRequest& request) {
  auto other_class = CheckPlanRequest(request);
  if (!other_class.ok()) return other_class.error();
  RentalPlan plan;
  plan.request = request;
  plan.output = ProjectOutputs(request);
  for (const CardType& c : request.prices.cards) {
    CardVerdict v = JudgeCard(c, request);
    plan.cards.push_back(v);
    if (v.fit != "no") AddPlanRows(c, v, request, plan);
  }
  const PlanPicks picks = PickPlans(plan);
  plan.cheapest = picks.cheapest;
  plan.fastest = picks.fastest;
  AddPlanWarnings(request, other_class.value(), plan);
  return plan;
}

bool CardMatches(const CardType& card, const std::string& device_name) {
  auto lower = [](std::string s) {
    for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return s;
  };
  const std::string name = lower(device_name);
  if (name.empty()) return false;
  return std::any_of(card.match.begin(), card.match.end(),
                     [&](const std::string& m) { return name.find(lower(m)) != std::string::npos; });
}

OutputProjection ProjectOutputs(const PlanRequest& request) {
  OutputProjection o;
  const Measurement& b = request.basis;
  if (!b.output_bytes || b.items == 0) return o;
  o.bytes_per_item = static_cast<double>(*b.output_bytes) / static_cast<double>(b.items);
  o.corpus_bytes = *o.bytes_per_item * static_cast<double>(request.corpus.items);
  o.copy_off_hours = *o.corpus_bytes / (request.copy_off_mb_per_s * 1e6) / 3600.0;
  return o;
}

// Each pick in two steps, so that the rule is the same for every row (a pairwise "equal within
// rounding" drifts along a chain of near-equal rows): first the best figure over the rows that
// fit, then, among the rows within rounding (Same) or the resolution of it, the one that wins on
// the next keys.
PlanPicks PickPlans(const RentalPlan& plan, const std::string& card) {
  auto candidate = [&](const PlanRow& r) { return r.fits && (card.empty() || r.card == card); };
  std::optional<double> min_cost, min_hours;
  for (const PlanRow& r : plan.rows) {
    if (!candidate(r)) continue;
    if (!min_cost || r.cost < *min_cost) min_cost = r.cost;
    if (!min_hours || r.needed_hours < *min_hours) min_hours = r.needed_hours;
  }
  PlanPicks picks;
  if (!min_cost) return picks;
  const double resolution = plan.request.time_resolution_hours;
  for (std::size_t i = 0; i < plan.rows.size(); ++i) {
    const PlanRow& r = plan.rows[i];
    if (!candidate(r)) continue;
    if (Same(r.cost, *min_cost)) {
      const PlanRow* c = picks.cheapest ? &plan.rows[*picks.cheapest] : nullptr;
      if (!c || (r.cards != c->cards ? r.cards < c->cards : r.period_days < c->period_days))
        picks.cheapest = i;
    }
    if (r.needed_hours <= *min_hours + resolution || Same(r.needed_hours, *min_hours)) {
      const PlanRow* f = picks.fastest ? &plan.rows[*picks.fastest] : nullptr;
      if (!f || (!Same(r.cost, f->cost)            ? r.cost < f->cost
                 : r.cards != f->cards             ? r.cards < f->cards
                 : r.period_days != f->period_days ? r.period_days < f->period_days
                                                   : r.needed_hours < f->needed_hours)) {
        picks.fastest = i;
      }
    }
  }
  return picks;
}

std::string PickRule(double time_resolution_hours) {
  return "cheapest: the lowest cost, then fewer cards, then the shorter period; fastest: of the plans "
         "needing at most the quickest's hours + " +
         FixedDecimals(time_resolution_hours, 2) +
         " h (closer needs are not told apart), the cheapest, then fewer cards, then the shorter period";
}

// --- the document ----------------------------------------------------------------------------

namespace {

ojson MixToJson(const LengthMix& m) {
  ojson j;
  j["items"] = m.items;
  j["known"] = m.known();
  j["sized"] = m.sized;
  j["missing"] = m.missing;
  j["bytes"] = m.bytes;
  j["mean_bytes"] = m.known() ? ojson(m.mean_bytes()) : ojson();
  return j;
}

ojson TokenMixToJson(const TokenMix& m) {
  ojson j;
  j["items"] = m.items;
  j["sampled"] = m.sampled;
  j["stride"] = m.stride;
  j["encoded"] = m.encoded;
  j["unread"] = m.unread;
  j["over_max_length"] = m.over_max_length;
  j["too_long_to_read"] = m.too_long_to_read;
  j["tokens"] = m.tokens;
  j["raw_tokens"] = m.raw_tokens;
  j["mean_tokens"] = m.mean_tokens();
  return j;
}

const char* const kCaveats[] = {
    "several cards do not spread one program nor pool their memory: each card runs its own worker over its "
    "own "
    "shard (pilot run --shard I/N on each card, or --workers K on one host), and the model must fit one card",
    "the pilot's items check the procedure; they do not mechanically predict the campaign's time: measure "
    "again on "
    "the rented card before committing to a long period",
    "cost = lot price x lots: a lot of several cards (a B200 lot is 2) is priced once, never again per card",
};

}  // namespace

ojson PlanRowToJson(const PlanRow& r) {
  ojson j;
  j["card"] = r.card;
  j["period_days"] = r.period_days;
  j["lots"] = r.lots;
  j["cards"] = r.cards;
  j["fit"] = r.fit;
  j["rate_basis"] = r.rate_basis;
  j["items_per_s_per_card"] = r.items_per_s_per_card;
  j["compute_hours"] = r.compute_hours;
  j["copy_off_hours"] = r.copy_off_hours;
  j["needed_hours"] = r.needed_hours;
  j["period_suffices"] = r.period_suffices;
  j["cost"] = r.cost;
  j["cost_per_million_items"] = r.cost_per_million_items;
  j["cost_per_million_tokens"] = r.cost_per_million_tokens ? ojson(*r.cost_per_million_tokens) : ojson();
  j["fits"] = r.fits;
  return j;
}

ojson RentalPlanToJson(const RentalPlan& plan) {
  const PlanRequest& q = plan.request;
  const Measurement& b = q.basis;
  ojson j;
  j["kind"] = kPlanDocumentKind;
  j["format_version"] = kPlanFormatVersion;
  ojson basis;
  basis["folder"] = b.folder;
  basis["folder_kind"] = b.folder_kind;
  basis["fingerprint"] = b.fingerprint.empty() ? ojson() : ojson(b.fingerprint);
  basis["manifest_sha256"] = b.manifest_sha256.empty() ? ojson() : ojson(b.manifest_sha256);
  basis["device"] = b.device;
  basis["device_class"] = DeviceClassName(b.device_class);
  basis["items"] = b.items;
  basis["items_per_s_per_card"] = b.items_per_s_per_card;
  basis["throughput_basis"] = b.throughput_basis;
  basis["peak_memory_mb"] = b.peak_memory_mb;
  basis["memory_basis"] = b.memory_basis;
  basis["peak_note"] = b.peak_note.empty() ? ojson() : ojson(b.peak_note);
  basis["device_name"] = b.device_name.empty() ? ojson() : ojson(b.device_name);
  basis["calibration_pilot_fingerprint"] = b.pilot_fingerprint.empty() ? ojson() : ojson(b.pilot_fingerprint);
  basis["assume_scaling"] = q.assume_scaling ? ojson(*q.assume_scaling) : ojson();
  basis["length_mix"] = MixToJson(b.mix);
  j["basis"] = basis;
  ojson corpus;
  corpus["items"] = q.corpus.items;
  corpus["manifest"] = q.corpus.manifest.empty() ? ojson() : ojson(q.corpus.manifest);
  corpus["length_mix"] = MixToJson(q.corpus.mix);
  corpus["mean_bytes_vs_pilot"] = b.mix.known() && q.corpus.mix.known()
                                      ? ojson(q.corpus.mix.mean_bytes() / std::max(b.mix.mean_bytes(), 1.0))
                                      : ojson();
  j["corpus"] = corpus;
  ojson projection;
  if (q.tokens) {
    const TokenProjection& t = *q.tokens;
    projection["by"] = "tokens";
    projection["factor"] = t.factor();
    projection["rule"] =
        "compute hours = corpus items x (corpus mean tokens / pilot mean tokens) / (items/s per card x "
        "cards) / "
        "3600; an item counts its tokens up to max_length, and 0 when a run would reject it before the model";
    projection["tokenizer"] = {{"file", t.tokenizer_file},
                               {"sha256", t.sha256},
                               {"max_length", t.max_length},
                               {"truncation", t.truncation}};
    projection["pilot"] = TokenMixToJson(t.pilot);
    projection["corpus"] = TokenMixToJson(t.corpus);
    if (t.completion_per_item > 0) {
      projection["completion_tokens_per_item"] = t.completion_per_item;
      projection["rule"] =
          "a generator: compute hours = corpus items x ((corpus mean prompt tokens + C) / (pilot mean prompt "
          "tokens + C)) / (items/s per card x cards) / 3600, C the pilot's completion tokens per item; the "
          "corpus' completions are taken to be as long as the pilot's";
    }
  } else {
    projection["by"] = "items";
    projection["factor"] = 1.0;
    projection["why"] = q.by_items_why.empty() ? ojson() : ojson(q.by_items_why);
  }
  j["projection"] = projection;
  ojson output;
  output["measured_bytes"] = b.output_bytes ? ojson(*b.output_bytes) : ojson();
  output["measured_items"] = b.items;
  output["files"] = b.output_files;
  output["bytes_per_item"] = plan.output.bytes_per_item ? ojson(*plan.output.bytes_per_item) : ojson();
  output["corpus_bytes"] = plan.output.corpus_bytes ? ojson(*plan.output.corpus_bytes) : ojson();
  output["copy_off_mb_per_s"] = q.copy_off_mb_per_s;
  output["copy_off_hours"] = plan.output.copy_off_hours;
  output["rule"] =
      "corpus bytes = measured bytes / measured items x corpus items, as stored (results, journal, vectors); "
      "copy-off hours = corpus bytes / (MB/s x 1e6) / 3600, in every row's needed hours";
  j["output"] = output;
  j["allowance_hours"] = q.allowance_hours;
  j["headroom"] = q.headroom;
  j["time_resolution_hours"] = q.time_resolution_hours;
  j["pick_rule"] = PickRule(q.time_resolution_hours);
  j["prices"] = {{"file", q.prices.file},
                 {"sha256", q.prices.sha256},
                 {"example", q.prices.example},
                 {"currency", q.prices.currency},
                 {"note", q.prices.note}};
  auto rows = ojson::array();
  for (const PlanRow& r : plan.rows) rows.push_back(PlanRowToJson(r));
  j["plans"] = rows;
  auto cards = ojson::array();
  for (const CardVerdict& c : plan.cards) {
    cards.push_back({{"card", c.card},
                     {"class", c.device_class},
                     {"fit", c.fit},
                     {"usable_mb", c.usable_mb},
                     {"note", c.note},
                     {"measured_card", c.measured_card},
                     {"stand_in", c.stand_in}});
  }
  j["cards"] = cards;
  j["cheapest"] = plan.cheapest ? PlanRowToJson(plan.rows[*plan.cheapest]) : ojson();
  j["fastest"] = plan.fastest ? PlanRowToJson(plan.rows[*plan.fastest]) : ojson();
  j["verdict"] = plan.any_fits() ? "fits" : "none_fits";
  j["warnings"] = plan.warnings;
  auto caveats = ojson::array();
  for (const char* c : kCaveats) caveats.push_back(c);
  j["caveats"] = caveats;
  return j;
}

}  // namespace pilot

#include "pilot/verdict/compare.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <set>

#include "pilot/destination.h"
#include "pilot/escape.h"
#include "pilot/folder_files.h"
#include "pilot/folder_kind.h"
#include "pilot/hash.h"
#include "pilot/json_file.h"
#include "pilot/json_util.h"
#include "pilot/limits.h"
#include "pilot/paths.h"
#include "pilot/report.h"
#include "pilot/results.h"
#include "pilot/run_record.h"
#include "pilot/utf8.h"
#include "pilot/vectors.h"

namespace pilot {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {

// A JSON document's leaves as "a.b.c" -> value (arrays whole, as values).
void Flatten(const nlohmann::json& j, const std::string& prefix, std::map<std::string, nlohmann::json>& out) {
  if (j.is_object()) {
    for (const auto& [key, value] : j.items()) Flatten(value, prefix.empty() ? key : prefix + "." + key, out);
    return;
  }
  out[prefix] = j;
}

// A value of an untrusted document for a message or a page: control bytes escaped, bounded.
std::string Shown(const nlohmann::json& v) {
  if (v.is_null()) return "(absent)";
  if (v.is_string()) return EscapeTerminal(TruncateUtf8(v.get<std::string>(), 200));
  std::string s = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return s.size() > 200 ? s.substr(0, 200) + "…" : s;
}

nlohmann::json Path(const nlohmann::json& j, const std::vector<const char*>& keys) {
  const nlohmann::json* at = &j;
  for (const char* k : keys) at = &MemberOrNull(*at, k);
  return *at;
}

// A recorded setting as JSON: null when the record does not give it.
template <typename T>
nlohmann::json Optional(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json();
}

// The dtype a run's model held: as recorded once loaded (and converted). Without that record
// (a .pt2 package, whose dtype is compiled in and not read; a record from before held dtypes
// were recorded) the option, where "as saved" is float32 as it was before "as saved" existed,
// and a record from before dtypes were recorded ran in float32.
std::string DtypeOf(const RunRecord& r) {
  if (r.settings.held_dtype) return *r.settings.held_dtype;
  const std::string option = r.settings.dtype.value_or("float32");
  return option == "as saved" ? "float32" : option;
}

// One side of the comparison: what its folder records.
struct Side {
  fs::path dir;
  RunRecord record;
  nlohmann::json params, environment;
  RecordedReport report;
  std::string fingerprint;
  // Embeddings: vectors.npy, opened once.
  std::unique_ptr<ReadableFile> vectors;
  NpyShape shape;
};

Status LoadSide(FileSystem& fsys, const fs::path& dir, Side& side) {
  side.dir = dir;
  auto kind =
      OpenPilotFolder(fsys, dir, "compare", "run folder", "give two finished run (or merged) folders");
  if (!kind.ok()) return kind.error();
  const std::string& k = kind.value().kind;
  if (!IsWholeRunKind(k)) {
    return BadInput(
        "a " + k + " folder, not a run: compare takes finished run or merged folders", dir.string(),
        IsPartitionKind(k) ? "merge the shards first (pilot merge), then compare the merged folder"
                           : "give the folders `pilot run` (or `pilot merge`) wrote");
  }
  auto text = ReadInsideFolder(fsys, dir, kRunRecord, limits::kRunRecordBytes);
  if (!text.ok()) return text.error();
  auto record = ParseRunRecord(text.value(), (dir / kRunRecord).string());
  if (!record.ok()) return record.error();
  side.record = std::move(record.value());
  if (side.record.state != "finished") {
    return BadInput("the run is unfinished", dir.string(), "finish it first: pilot resume " + dir.string());
  }
  return {};
}

Status LoadRest(FileSystem& fsys, Side& side) {
  const fs::path& dir = side.dir;
  auto params = ReadJsonFile(fsys, dir / kParamsCopy, limits::kParamsBytes, "parameter file");
  if (!params.ok()) return params.error();
  side.params = std::move(params.value());
  auto report = ReadRecordedReport(fsys, dir,
                                   "the folder verified, so its report was edited and re-hashed: "
                                   "compare folders written by pilot");
  if (!report.ok()) return report.error();
  side.report = std::move(report).value();
  // A merged folder's environment is each shard's: the first shard's stands for them (every
  // shard ran the same parameters and model; their hosts are listed in the merged report).
  fs::path env = dir / kEnvironmentFile;
  if (IsJoinedKind(side.record.folder_kind) && side.record.merged_shards > 0) {
    env = dir / MergedShardFolder(ShardSpec{0, side.record.merged_shards}) / kMergedShardEnvironment;
  }
  if (IsJoinedKind(side.record.folder_kind)) {
    // The merged record leaves the device to each shard's record: the set of them.
    std::set<std::string> devices;
    for (std::uint32_t i = 0; i < side.record.merged_shards; ++i) {
      const std::string shard_run =
          MergedShardFolder(ShardSpec{i, side.record.merged_shards}) + "/" + kMergedShardRecord;
      auto shard_text = ReadInsideFolder(fsys, dir, shard_run, limits::kRunRecordBytes);
      if (!shard_text.ok()) return shard_text.error();
      auto shard = ParseRunRecord(shard_text.value(), (dir / shard_run).string());
      if (!shard.ok()) return shard.error();
      devices.insert(Shown(Optional(shard.value().settings.device)));
    }
    std::string joined;
    for (const auto& d : devices) joined += (joined.empty() ? "" : ", ") + d;
    side.record.settings.device = devices.size() == 1 ? joined : "mixed: " + joined;
  }
  auto environment = ReadJsonFile(fsys, env, limits::kRunRecordBytes, "environment record");
  if (!environment.ok()) return environment.error();
  side.environment = std::move(environment.value());
  if (side.record.output->vectors) {
    auto in = fsys.OpenRead(dir / kVectorsNpy, false);
    if (!in.ok()) return in.error();
    side.vectors = std::move(in.value());
    std::string prefix(
        static_cast<std::size_t>(std::min<std::uint64_t>(side.vectors->size(), limits::kNpyHeaderBytes)),
        '\0');
    PILOT_TRY(ReadExactAt(*side.vectors, 0, prefix.data(), prefix.size()));
    auto shape = ParseNpyHeader(prefix, (dir / kVectorsNpy).string());
    if (!shape.ok()) return shape.error();
    side.shape = shape.value();
  }
  return {};
}

Result<std::vector<float>> ReadRow(Side& side, std::uint64_t row, const std::string& id) {
  const std::string where = (side.dir / kVectorsNpy).string();
  if (row >= side.shape.rows || side.shape.cols == 0 || side.shape.cols > limits::kEmbeddingDim) {
    return BadInput("the row of '" + id + "' is outside vectors.npy", where);
  }
  std::string stored(static_cast<std::size_t>(side.shape.row_bytes()), '\0');
  PILOT_TRY(
      ReadExactAt(*side.vectors, side.shape.data_offset + row * stored.size(), stored.data(), stored.size()));
  return StoredToFloats(stored, side.shape.dtype);
}

// What changed between the two runs: their parameters, the effective plan the run recorded,
// the model, the software and the environment received. Locations (where the manifest or
// the model lay) are not changes: their contents are pinned by sha256.
ojson Changes(const Side& a, const Side& b) {
  struct Change {
    nlohmann::json va, vb;
    std::string source;
  };
  std::map<std::string, Change> changes;
  std::map<std::string, nlohmann::json> pa, pb;
  Flatten(a.params, "", pa);
  Flatten(b.params, "", pb);
  std::map<std::string, bool> keys;
  for (const auto& [k, v] : pa) keys[k] = true;
  for (const auto& [k, v] : pb) keys[k] = true;
  for (const auto& [k, unused] : keys) {
    if (k == "description" || k == "manifest" || k == "stage.model" || k == "stage.model_sha256" ||
        k == "stage.tokenizer.file" || k == "batch_plan") {
      continue;
    }
    auto ia = pa.find(k);
    auto ib = pb.find(k);
    nlohmann::json va = ia == pa.end() ? nlohmann::json() : ia->second;
    nlohmann::json vb = ib == pb.end() ? nlohmann::json() : ib->second;
    if (va != vb) changes[KeyForMessage(k)] = {va, vb, "params.json"};
  }
  // The tokenizer's file is pinned by its sha256: another file is "the tokenizer changed";
  // its settings (max_length, truncation, padding) show as themselves.
  if (auto t = changes.find("stage.tokenizer.sha256"); t != changes.end()) {
    changes["tokenizer"] = t->second;
    changes.erase(t);
  }
  // The effective values, as the run resolved them, replace what the parameters asked for:
  // `auto` and `cpu` on a machine without a GPU are the same run.
  auto effective = [&](const std::string& name, const nlohmann::json& va, const nlohmann::json& vb,
                       const char* source) {
    if (va == vb) {
      changes.erase(name);
    } else {
      changes[name] = {va, vb, source};
    }
  };
  const RecordedSettings& sa = a.record.settings;
  const RecordedSettings& sb = b.record.settings;
  // The dtype is the one the model held, whether the option converted it or it was saved so:
  // an option that changes nothing (float32 on a float32 model) is no change.
  changes.erase("stage.options.dtype");
  effective("dtype", DtypeOf(a.record), DtypeOf(b.record), "run.json plan");
  effective("device", Optional(sa.device), Optional(sb.device), "run.json plan");
  effective("batch_size", Optional(sa.batch_size), Optional(sb.batch_size), "run.json plan");
  effective("threads", Optional(sa.threads), Optional(sb.threads), "run.json plan");
  effective("seed", Optional(sa.seed), Optional(sb.seed), "run.json plan");
  effective("limits.max_bytes", Optional(sa.max_bytes), Optional(sb.max_bytes), "run.json plan");
  effective("batch_plan", sa.batch_plan, sb.batch_plan, "run.json plan");
  if (a.record.model_sha256 != b.record.model_sha256) {
    changes["model"] = {a.record.model_sha256, b.record.model_sha256, "run.json model_sha256"};
  }
  auto layout = [](const Side& s) {
    return IsJoinedKind(s.record.folder_kind)
               ? "merged from " + std::to_string(s.record.merged_shards) + " shards"
               : std::string("one run");
  };
  if (layout(a) != layout(b)) changes["sharding"] = {layout(a), layout(b), "run.json folder_kind"};
  auto software = [](const Side& s) {
    return Shown(Optional(s.record.pilot_version)) + " (" + Shown(Optional(s.record.source_revision)) + ")";
  };
  if (software(a) != software(b)) changes["pilot"] = {software(a), software(b), "run.json pilot_version"};
  for (const auto& [name, path] : std::vector<std::pair<const char*, std::vector<const char*>>>{
           {"environment.libtorch", {"libtorch", "libtorch_version"}},
           {"environment.libtorch_build", {"libtorch", "build_flavour"}},
           {"environment.gpus", {"libtorch", "gpus"}},
           {"environment.os", {"host", "os"}},
           {"environment.cpu_model", {"host", "cpu_model"}},
           {"environment.cpu_count", {"host", "cpu_count"}}}) {
    nlohmann::json va = Path(a.environment, path), vb = Path(b.environment, path);
    if (va != vb) changes[name] = {va, vb, fs::path(kEnvironmentFile).filename().string()};
  }
  ojson list = ojson::array();
  for (const auto& [name, c] : changes) {
    list.push_back({{"name", name}, {"a", Shown(c.va)}, {"b", Shown(c.vb)}, {"source", c.source}});
  }
  return list;
}

ojson Ratio(std::optional<double> a, std::optional<double> b) {
  ojson r = {{"a", a ? ojson(*a) : ojson()}, {"b", b ? ojson(*b) : ojson()}, {"b_over_a", nullptr}};
  if (a && b && *a > 0) r["b_over_a"] = *b / *a;
  return r;
}

// Both runs' outcomes for one id after another, tallied: what agrees, what differs and how
// (status, reason, or the output kind's own: category, confidence, vector), the first
// differences listed.
class ItemComparison {
 public:
  ItemComparison(Side& a, Side& b, const CompareOptions& options) : options_(options) {
    ComparisonInputs inputs;
    inputs.tolerance = options.tolerance;
    inputs.where = b.dir.string();
    inputs.row = [&a, &b](bool side_b, std::uint64_t row, const std::string& id) {
      return ReadRow(side_b ? b : a, row, id);
    };
    outputs_ = a.record.output->compare(inputs);
  }

  // One id's two records (the same id, verified).
  Status Add(const ResultRecord& x, const ResultRecord& y) {
    ++total;
    std::optional<OutputDifference> diff;
    if (x.accepted != y.accepted) {
      auto shown = [&](const ResultRecord& r) {
        return r.accepted ? "accepted " + outputs_->Shown(r) : "rejected " + r.reason;
      };
      diff = OutputDifference{"status", shown(x), shown(y)};
    } else if (!x.accepted) {
      ++same_status;
      if (x.reason != y.reason) {
        diff = OutputDifference{"reason", x.reason, y.reason};
      } else {
        ++same_outcome;
      }
    } else {
      ++same_status;
      ++both_accepted;
      bool same = false;
      auto compared = outputs_->Compare(x, y, same);
      if (!compared.ok()) return compared.error();
      if (same) ++same_outcome;
      diff = std::move(compared).value();
    }
    if (!diff) {
      ++agree;
      return {};
    }
    ++differ;
    ++by_what[diff->what];
    if (listed.size() < options_.max_listed)
      listed.push_back({{"id", x.id}, {"what", diff->what}, {"a", diff->a}, {"b", diff->b}});
    return {};
  }

  ojson ItemsJson() const {
    ojson items = {{"total", total},
                   {"agree", agree},
                   {"differ", differ},
                   {"same_status", same_status},
                   {"same_category_or_reason", same_outcome},
                   {"both_accepted", both_accepted}};
    outputs_->Figures(both_accepted, same_outcome, items);
    items["agreement"] = total > 0 ? ojson(static_cast<double>(agree) / static_cast<double>(total)) : ojson();
    ojson kinds = ojson::object();
    for (const auto& [w, n] : by_what) kinds[w] = n;
    items["differences_by_kind"] = kinds;
    return items;
  }

  std::size_t differ = 0;
  ojson listed = ojson::array();

 private:
  const CompareOptions& options_;
  std::unique_ptr<OutputComparison> outputs_;  // the output kind's
  std::size_t total = 0, agree = 0, same_status = 0, same_outcome = 0, both_accepted = 0;
  std::map<std::string, std::size_t> by_what;
};

// Both results.jsonl hold one line per manifest id in manifest order (verified): read side by
// side, in constant memory.
Status CompareItems(FileSystem& fsys, const Side& a, const Side& b, ItemComparison& items) {
  auto ra = LineReader::Open(fsys, a.dir / kResults, limits::kResultLineBytes, false);
  if (!ra.ok()) return ra.error();
  auto rb = LineReader::Open(fsys, b.dir / kResults, limits::kResultLineBytes, false);
  if (!rb.ok()) return rb.error();
  auto parse = [](const std::string& line, const Side& s, std::size_t n) -> Result<ResultRecord> {
    if (auto r = ScanResultRecord(line, false)) return *r;
    return ParseResultRecord(line, (s.dir / kResults).string() + ":" + std::to_string(n));
  };
  std::string la, lb;
  for (;;) {
    auto na = ra.value().Next(la);
    if (!na.ok()) return na.error();
    auto nb = rb.value().Next(lb);
    if (!nb.ok()) return nb.error();
    if (!na.value() || !nb.value()) {
      if (na.value() != nb.value()) {
        return BadInput("the two results.jsonl hold different numbers of records", b.dir.string());
      }
      return {};
    }
    auto xa = parse(la, a, ra.value().line_number());
    if (!xa.ok()) return xa.error();
    auto xb = parse(lb, b, rb.value().line_number());
    if (!xb.ok()) return xb.error();
    const ResultRecord &x = xa.value(), &y = xb.value();
    if (x.id != y.id) {
      return BadInput("line " + std::to_string(ra.value().line_number()) + " holds '" + x.id +
                          "' in one run and '" + y.id + "' in the other",
                      b.dir.string(), "both runs verified: this folder's results are not in manifest order");
    }
    PILOT_TRY(items.Add(x, y));
  }
}

ojson SideJson(const Side& s) {
  return ojson{{"folder", s.dir.string()},
               {"run_id", s.record.run_id},
               {"folder_kind", s.record.folder_kind},
               {"fingerprint", s.fingerprint},
               {"device", Shown(Optional(s.record.settings.device))},
               {"dtype", Shown(DtypeOf(s.record))}};
}

// The two reports' quality side by side.
ojson QualityJson(const Side& a, const Side& b) {
  ojson quality;
  const std::optional<double> acc_a = a.report.accuracy, acc_b = b.report.accuracy;
  quality["accuracy_a"] = acc_a ? ojson(*acc_a) : ojson();
  quality["accuracy_b"] = acc_b ? ojson(*acc_b) : ojson();
  quality["accuracy_delta"] = acc_a && acc_b ? ojson(*acc_b - *acc_a) : ojson();
  quality["labelled"] = a.report.labelled;
  quality["expected_rejections_met_a"] = a.report.expected_rejections_met;
  quality["expected_rejections_met_b"] = b.report.expected_rejections_met;
  quality["accepted_a"] = a.report.accepted;
  quality["accepted_b"] = b.report.accepted;
  quality["verdict_a"] = a.report.verdict;
  quality["verdict_b"] = b.report.verdict;

  return quality;
}

// The two reports' figures as ratios B / A.
ojson PerformanceJson(const Side& a, const Side& b) {
  ojson perf;
  perf["throughput_items_per_s"] = Ratio(a.report.items_per_second, b.report.items_per_second);
  perf["latency_p50_ms"] = Ratio(a.report.p50_ms, b.report.p50_ms);
  perf["latency_p95_ms"] = Ratio(a.report.p95_ms, b.report.p95_ms);
  perf["peak_rss_mb"] = Ratio(a.report.peak_rss_mb, b.report.peak_rss_mb);
  perf["device_peak_memory_mb"] = Ratio(a.report.device_peak_mb, b.report.device_peak_mb);
  perf["note"] =
      "ratios are B / A, each measured in its own run: on a shared machine repeat a run before reading a "
      "small "
      "ratio as a change";

  return perf;
}

// What changed between the runs (parameters, model, software, environment), its one-line
// summary and the warning when more than one thing changed.
void AddChanges(const Side& a, const Side& b, ojson& doc) {
  ojson changes = Changes(a, b);
  std::string summary;
  ojson warnings = ojson::array();
  if (changes.empty()) {
    summary = "nothing changed in the parameters, model, software or environment: a repeat of the same run";
  } else if (changes.size() == 1) {
    summary = "only " + changes[0]["name"].get<std::string>() + " changed (" +
              changes[0]["a"].get<std::string>() + " -> " + changes[0]["b"].get<std::string>() + ")";
  } else {
    std::string names;
    for (const auto& c : changes) names += (names.empty() ? "" : ", ") + c["name"].get<std::string>();
    summary = "several things changed: " + names;
    warnings.push_back(
        "several things changed at once (" + names +
        "): the guide's rule is one change at a time, each with an equivalent quality check, so a "
        "difference here cannot be put down to any one of them");
  }
  doc["changes"] = changes;
  doc["change_summary"] = summary;
  doc["one_change"] = changes.size() <= 1;
  doc["warnings"] = warnings;
}

}  // namespace

Result<CompareOutcome> CompareRuns(FileSystem& fsys, const fs::path& a_dir, const fs::path& b_dir,
                                   const CompareOptions& options) {
  if (!std::isfinite(options.tolerance) || options.tolerance < 0) {
    return BadInput("the tolerance must be a finite number >= 0", "--tolerance");
  }
  Side a, b;
  PILOT_TRY(LoadSide(fsys, a_dir, a));
  PILOT_TRY(LoadSide(fsys, b_dir, b));
  if (a.record.manifest_sha256 != b.record.manifest_sha256) {
    return BadInput("the two runs used different manifests: " + a_dir.string() + " has sha256 " +
                        a.record.manifest_sha256 + ", " + b_dir.string() + " has " + b.record.manifest_sha256,
                    b_dir.string(),
                    "compare runs over the same immutable manifest (item agreement needs the same ids)");
  }
  if (a.record.output != b.record.output) {
    return BadInput(std::string("the runs' stages produce different outputs (") + a.record.output->name +
                        " vs " + b.record.output->name + "): their items cannot agree",
                    b_dir.string(), "compare runs of the same stage output kind");
  }
  CompareOutcome out;
  for (Side* s : {&a, &b}) {
    VerifyOptions vo;
    auto verified = VerifyFolder(fsys, s->dir, vo);
    if (!verified.ok()) return verified.error();
    if (!verified.value().ok()) out.failed_verification.emplace_back(s->dir.string(), verified.value());
    s->fingerprint = verified.value().fingerprint;
  }
  if (!out.failed_verification.empty()) return out;
  PILOT_TRY(LoadRest(fsys, a));
  PILOT_TRY(LoadRest(fsys, b));

  ItemComparison items(a, b, options);
  PILOT_TRY(CompareItems(fsys, a, b, items));

  ojson doc;
  doc["kind"] = "pilot-compare";
  doc["format_version"] = 1;
  doc["a"] = SideJson(a);
  doc["b"] = SideJson(b);
  doc["manifest_sha256"] = a.record.manifest_sha256;
  doc["output_kind"] = a.record.output->name;
  doc["tolerance"] = options.tolerance;
  doc["items"] = items.ItemsJson();
  doc["differences"] = items.listed;
  doc["differences_listed"] = items.listed.size();
  doc["quality"] = QualityJson(a, b);
  doc["performance"] = PerformanceJson(a, b);
  AddChanges(a, b, doc);
  out.within_tolerance = items.differ == 0;
  doc["within_tolerance"] = out.within_tolerance;
  doc["verdict"] = out.within_tolerance ? "agree" : "differ";
  out.document = std::move(doc);
  return out;
}

std::string CompareMarkdown(const ojson& d) {
  auto s = [](const ojson& v) {
    return Shown(nlohmann::json::parse(v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
  };
  auto cell = [](const std::string& raw) { return EscapeMarkdown(raw); };
  std::string md = "# pilot compare\n\n";
  // Folders as escaped text, never in a code span: a backslash escape does not work inside one,
  // so a backtick in a path would end the span early.
  md += "- A: " + cell(s(d["a"]["folder"])) + " (run " + cell(s(d["a"]["run_id"])) + ", " +
        cell(s(d["a"]["device"])) + ", " + cell(s(d["a"]["dtype"])) + ")\n";
  md += "- B: " + cell(s(d["b"]["folder"])) + " (run " + cell(s(d["b"]["run_id"])) + ", " +
        cell(s(d["b"]["device"])) + ", " + cell(s(d["b"]["dtype"])) + ")\n";
  md += "- manifest sha256 (both): `" + s(d["manifest_sha256"]) + "`\n";
  md += "- verdict: **" + s(d["verdict"]) + "** (tolerance " + s(d["tolerance"]) + ")\n\n";
  md += "## What changed\n\n" + cell(s(d["change_summary"])) + "\n\n";
  if (!d["changes"].empty()) {
    md += "| what | A | B | from |\n|---|---|---|---|\n";
    for (const auto& c : d["changes"]) {
      md += "| " + cell(s(c["name"])) + " | " + cell(s(c["a"])) + " | " + cell(s(c["b"])) + " | " +
            s(c["source"]) + " |\n";
    }
    md += "\n";
  }
  for (const auto& w : d["warnings"]) md += "> **Warning:** " + cell(s(w)) + "\n\n";
  const ojson& it = d["items"];
  md += "## Items\n\n| | |\n|---|---|\n";
  for (const char* k : {"total", "agree", "differ", "same_status", "same_category_or_reason", "agreement",
                        "max_confidence_difference", "mean_confidence_difference", "max_vector_difference",
                        "min_cosine", "mean_cosine"}) {
    if (it.contains(k)) md += std::string("| ") + k + " | " + s(it[k]) + " |\n";
  }
  md += "\n";
  if (!d["differences"].empty()) {
    md += "| id | differs in | A | B |\n|---|---|---|---|\n";
    for (const auto& x : d["differences"]) {
      md += "| " + cell(s(x["id"])) + " | " + s(x["what"]) + " | " + cell(s(x["a"])) + " | " +
            cell(s(x["b"])) + " |\n";
    }
    if (d["differences_listed"] != it["differ"])
      md += "\n(" + s(d["differences_listed"]) + " listed of " + s(it["differ"]) + ")\n";
    md += "\n";
  }
  md += "## Quality\n\n| | A | B |\n|---|---|---|\n";
  const ojson& q = d["quality"];
  md += "| accuracy on labelled items | " + cell(s(q["accuracy_a"])) + " | " + cell(s(q["accuracy_b"])) +
        " |\n";
  md += "| expected rejections met | " + cell(s(q["expected_rejections_met_a"])) + " | " +
        cell(s(q["expected_rejections_met_b"])) + " |\n";
  md += "| accepted | " + cell(s(q["accepted_a"])) + " | " + cell(s(q["accepted_b"])) + " |\n";
  md += "| verdict | " + cell(s(q["verdict_a"])) + " | " + cell(s(q["verdict_b"])) + " |\n\n";
  md += "Accuracy delta (B - A): " + cell(s(q["accuracy_delta"])) + "\n\n";
  md += "## Speed and memory (B / A)\n\n| | A | B | B / A |\n|---|---|---|---|\n";
  for (const auto& [k, v] : d["performance"].items()) {
    if (!v.is_object()) continue;
    md += "| " + cell(k) + " | " + cell(s(v["a"])) + " | " + cell(s(v["b"])) + " | " +
          cell(s(v["b_over_a"])) + " |\n";
  }
  md += "\n" + s(d["performance"]["note"]) + "\n";
  return md;
}

Status WriteCompare(FileSystem& fsys, const fs::path& given, const ojson& document) {
  auto resolved = ResolveDestination(fsys, given, "--out", Destination::kFolder);
  if (!resolved.ok()) return resolved.error();
  const fs::path dir = resolved.value();
  auto st = fsys.LinkStat(dir);
  if (!st.ok()) return st.error();
  if (st.value().exists && !st.value().directory) {
    return BadInput(st.value().symlink ? "a symlink, not a folder (never followed)" : "not a folder",
                    dir.string(), "give a folder for compare.json and compare.md");
  }
  if (!st.value().exists) PILOT_TRY(fsys.CreateDirectories(dir));
  for (const char* name : {"compare.json", "compare.md"}) {
    auto f = fsys.LinkStat(dir / name);
    if (!f.ok()) return f.error();
    if (f.value().exists) {
      return BadInput("already exists: a comparison is never overwritten", (dir / name).string(),
                      "give another --out folder");
    }
  }
  PILOT_TRY(fsys.WriteFileAtomic(dir / "compare.json", PrettyJson(document)));
  return fsys.WriteFileAtomic(dir / "compare.md", CompareMarkdown(document));
}

}  // namespace pilot

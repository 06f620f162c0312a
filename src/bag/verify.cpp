#include "pilot/verify.h"

#include <map>
#include <set>
#include <unordered_map>
#include <sstream>

#include "pilot/bag.h"
#include "pilot/fs.h"
#include "pilot/hash.h"
#include "pilot/json_util.h"
#include "pilot/manifest.h"
#include "pilot/params.h"
#include "pilot/paths.h"
#include "pilot/reasons.h"
#include "pilot/results.h"

namespace pilot {

namespace fs = std::filesystem;

namespace {

class Verifier {
 public:
  Verifier(fs::path dir, VerifyOptions options) : dir_(std::move(dir)), options_(std::move(options)) {}

  VerifyResult Run() {
    if (!fs::is_directory(dir_)) {
      Add("bag", dir_.string(), "not a folder");
      return std::move(result_);
    }
    CheckDeclaration();
    CheckPayload();
    CheckTagFiles();
    CheckRunRecord();
    CheckAccounting();
    if (options_.inputs) CheckInputs();
    return std::move(result_);
  }

 private:
  void Add(std::string check, std::string where, std::string what) {
    result_.findings.push_back({std::move(check), std::move(where), std::move(what)});
  }

  std::optional<std::string> Read(const std::string& rel, const char* check) {
    auto text = RealFileSystem().ReadFile(dir_ / rel);
    if (!text.ok()) {
      Add(check, rel, "missing or unreadable");
      return std::nullopt;
    }
    return std::move(text).value();
  }

  void CheckDeclaration() {
    auto text = Read("bagit.txt", "bag");
    if (text && *text != "BagIt-Version: 1.0\nTag-File-Character-Encoding: UTF-8\n") {
      Add("bag", "bagit.txt", "not a BagIt 1.0 declaration with UTF-8 tag files");
    }
  }

  // Verifies "<sha256>  <path>" lines; returns the paths listed.
  std::set<std::string> CheckManifestFile(const std::string& name, const char* check) {
    std::set<std::string> listed;
    auto text = Read(name, check);
    if (!text) {
      if (name == "manifest-sha256.txt") {
        Add("bag", name, "no payload manifest: the run did not finish (in progress or interrupted)");
      }
      return listed;
    }
    auto lines = ParseManifestLines(*text, name);
    if (!lines.ok()) {
      Add(check, name, lines.error().what);
      return listed;
    }
    for (const auto& line : lines.value()) {
      if (!listed.insert(line.path).second) Add(check, name, "lists '" + line.path + "' twice");
      fs::path file = dir_ / line.path;
      if (line.path.find("..") != std::string::npos || fs::path(line.path).is_absolute()) {
        Add(check, line.path, "path in " + name + " escapes the bag");
        continue;
      }
      std::error_code ec;
      if (!fs::is_regular_file(file, ec)) {
        Add("completeness", line.path, "listed in " + name + " but missing");
        continue;
      }
      ++result_.files_checked;
      if (options_.fast && name == "manifest-sha256.txt") continue;
      auto digest = Sha256File(file);
      if (!digest.ok()) {
        Add("fixity", line.path, "unreadable");
      } else if (digest.value() != line.sha256) {
        Add("fixity", line.path, "sha256 is " + digest.value() + ", " + name + " records " + line.sha256);
      }
    }
    return listed;
  }

  void CheckPayload() {
    std::set<std::string> listed = CheckManifestFile("manifest-sha256.txt", "fixity");
    std::vector<std::string> actual = ListFilesRelative(dir_, dir_ / "data");
    std::uintmax_t octets = 0;
    for (const auto& rel : actual) {
      std::error_code ec;
      octets += fs::file_size(dir_ / rel, ec);
      if (!listed.empty() && !listed.count(rel)) {
        Add("completeness", rel, "payload file not listed in manifest-sha256.txt (unexpected file)");
      }
    }
    for (const auto& rel : listed) {
      if (rel.rfind("data/", 0) != 0) Add("completeness", rel, "manifest-sha256.txt lists a file outside data/");
    }
    auto info = Read("bag-info.txt", "bag");
    if (!info) return;
    std::istringstream in(*info);
    std::string line;
    std::string oxum;
    while (std::getline(in, line)) {
      if (line.rfind("Payload-Oxum:", 0) == 0) oxum = line.substr(line.find_first_not_of(" ", 13));
    }
    std::string want = std::to_string(octets) + "." + std::to_string(actual.size());
    if (oxum.empty()) {
      Add("bag", "bag-info.txt", "no Payload-Oxum");
    } else if (oxum != want) {
      Add("completeness", "bag-info.txt",
          "Payload-Oxum is " + oxum + " but the payload holds " + want + " (octets.files)");
    }
  }

  void CheckTagFiles() {
    if (!fs::exists(dir_ / "tagmanifest-sha256.txt")) {
      Add("bag", "tagmanifest-sha256.txt", "missing: the run did not finish");
      return;
    }
    std::set<std::string> listed = CheckManifestFile("tagmanifest-sha256.txt", "fixity");
    for (const char* required : {"bagit.txt", "bag-info.txt", "manifest-sha256.txt"}) {
      if (!listed.count(required)) Add("bag", "tagmanifest-sha256.txt", std::string("does not cover ") + required);
    }
    for (const auto& entry : fs::directory_iterator(dir_)) {
      std::string name = entry.path().filename().string();
      if (name == "data" || name == "tagmanifest-sha256.txt") continue;
      if (!listed.count(name)) Add("completeness", name, "not covered by tagmanifest-sha256.txt (unexpected file)");
    }
  }

  void CheckRunRecord() {
    auto text = Read("data/run.json", "copies");
    if (!text) return;
    auto parsed = ParseJson(*text, "data/run.json");
    if (!parsed.ok() || !parsed.value().is_object()) {
      Add("copies", "data/run.json", "not a JSON object");
      return;
    }
    run_ = parsed.value();
    if (run_.value("state", "") != "finished") {
      Add("bag", "data/run.json", "state is '" + run_.value("state", "") + "', not 'finished'");
    }
    manifest_copy_ = run_.value("manifest_copy", "data/manifest.json");
    for (auto [file, key] : {std::pair{manifest_copy_, "manifest_sha256"},
                             std::pair{std::string("data/params.json"), "params_sha256"}}) {
      auto bytes = Read(file, "copies");
      if (!bytes) continue;
      std::string want = run_.value(key, "");
      if (Sha256Hex(*bytes) != want) {
        Add("copies", file, std::string("does not match ") + key + " in data/run.json");
      }
    }
  }

  void CheckAccounting() {
    auto manifest_text = Read(manifest_copy_, "accounting");
    auto params_text = Read("data/params.json", "accounting");
    auto results_text = Read("data/results.jsonl", "accounting");
    if (!manifest_text) return;
    auto parsed = ParseManifest(*manifest_text, fs::path(manifest_copy_).extension() == ".jsonl", manifest_copy_);
    if (!parsed.ok()) {
      Add("accounting", manifest_copy_, parsed.error().what);
      return;
    }
    manifest_ = std::move(parsed).value();
    if (!params_text || !results_text) return;
    auto params = ParseParams(*params_text, dir_, "data/params.json");
    if (!params.ok()) {
      Add("accounting", "data/params.json", params.error().what);
      return;
    }
    std::set<std::string> allowed(params.value().allowed_categories.begin(),
                                  params.value().allowed_categories.end());
    std::unordered_map<std::string, const ManifestItem*> by_id;
    for (const auto& item : manifest_->items) by_id[item.id] = &item;

    std::unordered_map<std::string, std::size_t> seen;
    std::map<std::string, std::size_t> by_reason, by_category;
    std::vector<std::string> order;
    std::istringstream in(*results_text);
    std::string line;
    std::size_t line_no = 0;
    while (std::getline(in, line)) {
      ++line_no;
      std::string where = "data/results.jsonl:" + std::to_string(line_no);
      auto rec = ParseResultRecord(line, where);
      if (!rec.ok()) {
        Add("accounting", where, rec.error().what);
        continue;
      }
      const ResultRecord& r = rec.value();
      auto item = by_id.find(r.id);
      if (item == by_id.end()) {
        Add("accounting", r.id, "result for an id that is not in the manifest (" + where + ")");
        continue;
      }
      if (++seen[r.id] == 2) Add("accounting", r.id, "appears more than once in data/results.jsonl");
      order.push_back(r.id);
      if (r.accepted) {
        ++result_.accepted;
        ++by_category[r.category];
        if (!allowed.count(r.category)) {
          Add("accounting", r.id, "accepted with category '" + r.category + "', not in allowed_categories");
        }
      } else {
        ++result_.rejected;
        ++by_reason[r.reason];
        if (!reason::IsKnown(r.reason)) Add("accounting", r.id, "rejected with unknown reason '" + r.reason + "'");
        if (r.detail.empty()) Add("accounting", r.id, "rejected without a detail");
      }
      const auto& want = item->second->expected_rejection;
      if (want && (r.accepted || r.reason != *want)) {
        Add("accounting", r.id,
            "expected rejection '" + *want + "' but got " + (r.accepted ? "accepted" : "'" + r.reason + "'"));
      }
    }
    result_.items = manifest_->items.size();
    for (const auto& item : manifest_->items) {
      if (!seen.count(item.id)) Add("accounting", item.id, "manifest id has no result in data/results.jsonl");
    }
    bool in_order = order.size() == manifest_->items.size();
    for (std::size_t i = 0; in_order && i < order.size(); ++i) in_order = order[i] == manifest_->items[i].id;
    if (!in_order && seen.size() == by_id.size()) Add("accounting", "data/results.jsonl", "results are not in manifest order");
    CheckReport(by_reason, by_category);
  }

  void CheckReport(const std::map<std::string, std::size_t>& by_reason,
                   const std::map<std::string, std::size_t>& by_category) {
    auto text = Read("data/report.json", "report");
    if (!text) return;
    auto parsed = ParseJson(*text, "data/report.json");
    if (!parsed.ok()) {
      Add("report", "data/report.json", parsed.error().what);
      return;
    }
    const auto& j = parsed.value();
    auto count = [&](const char* key) -> long long {
      const auto& c = j.value("counts", nlohmann::json::object());
      return c.contains(key) && c[key].is_number_integer() ? c[key].get<long long>() : -1;
    };
    auto expect = [&](const char* key, std::size_t actual) {
      if (count(key) != static_cast<long long>(actual)) {
        Add("report", "data/report.json",
            std::string("counts.") + key + " is " + std::to_string(count(key)) + " but data/results.jsonl holds " +
                std::to_string(actual));
      }
    };
    expect("total", result_.items);
    expect("accepted", result_.accepted);
    expect("rejected", result_.rejected);
    if (result_.accepted + result_.rejected != result_.items) {
      Add("accounting", "data/results.jsonl",
          "accepted " + std::to_string(result_.accepted) + " + rejected " + std::to_string(result_.rejected) +
              " != manifest count " + std::to_string(result_.items));
    }
    auto as_map = [&](const char* key) {
      std::map<std::string, std::size_t> m;
      if (j.contains(key) && j[key].is_object()) {
        for (const auto& [k, v] : j[key].items()) m[k] = v.is_number_unsigned() ? v.get<std::size_t>() : 0;
      }
      return m;
    };
    if (as_map("by_reason") != by_reason) Add("report", "data/report.json", "by_reason does not match data/results.jsonl");
    if (as_map("by_category") != by_category) Add("report", "data/report.json", "by_category does not match data/results.jsonl");
  }

  void CheckInputs() {
    fs::path root = options_.inputs_root ? *options_.inputs_root
                                         : fs::path(run_.value("plan", nlohmann::json::object()).value("inputs_root", ""));
    if (!manifest_) return;  // unreadable: already a finding of the accounting check
    if (root.empty() || !fs::is_directory(root)) {
      Add("inputs", root.string(), "inputs folder not found; give it with --inputs-root");
      return;
    }
    std::error_code ec;
    root = fs::canonical(root, ec);
    for (const auto& item : manifest_->items) {
      ConfinedPath p = ConfinePath(root, item.path);
      if (!p.inside) continue;  // never opened, by rule; its rejection says so
      if (!fs::is_regular_file(p.resolved, ec)) {
        if (!item.expected_rejection) Add("inputs", item.id, "input '" + item.path + "' is missing");
        continue;
      }
      auto digest = Sha256File(p.resolved);
      if (digest.ok() && digest.value() != item.sha256 && item.expected_rejection != std::string(reason::kInputChanged)) {
        Add("inputs", item.id, "input '" + item.path + "' no longer matches its pinned sha256");
      }
    }
  }

  fs::path dir_;
  VerifyOptions options_;
  VerifyResult result_;
  nlohmann::json run_ = nlohmann::json::object();
  std::string manifest_copy_ = "data/manifest.json";
  std::optional<Manifest> manifest_;  // the run's copy, parsed once by CheckAccounting
};

}  // namespace

VerifyResult VerifyRunFolder(const fs::path& run_dir, const VerifyOptions& options) {
  return Verifier(run_dir, options).Run();
}

nlohmann::ordered_json VerifyResultToJson(const fs::path& run_dir, const VerifyResult& result) {
  nlohmann::ordered_json j;
  j["run_dir"] = run_dir.string();
  j["ok"] = result.ok();
  j["items"] = result.items;
  j["accepted"] = result.accepted;
  j["rejected"] = result.rejected;
  j["files_checked"] = result.files_checked;
  auto findings = nlohmann::ordered_json::array();
  for (const auto& f : result.findings) findings.push_back({{"check", f.check}, {"where", f.where}, {"what", f.what}});
  j["findings"] = findings;
  return j;
}

}  // namespace pilot

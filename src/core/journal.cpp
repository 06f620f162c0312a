#include "pilot/journal.h"

#include <algorithm>
#include <chrono>
#include <fstream>

#include "pilot/json_util.h"

namespace pilot {

namespace fs = std::filesystem;

double UnixSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

nlohmann::ordered_json JournalHeader::ToJson() const {
  nlohmann::ordered_json j;
  j["type"] = "header";
  j["version"] = 1;
  j["run_id"] = run_id;
  j["manifest_sha256"] = manifest_sha256;
  j["params_sha256"] = params_sha256;
  j["model_sha256"] = model_sha256;
  j["items"] = items;
  j["manifest_copy"] = manifest_copy;
  j["plan"] = {{"manifest", manifest_path},
               {"params", params_path},
               {"model", model_path},
               {"inputs_root", inputs_root}};
  j["started_at"] = started_at;
  return j;
}

Result<JournalHeader> JournalHeader::FromJson(const nlohmann::json& j, const std::string& where) {
  try {
    JournalHeader h;
    if (j.at("type") != "header") throw std::runtime_error("first record is not a header");
    h.run_id = j.at("run_id").get<std::string>();
    h.manifest_sha256 = j.at("manifest_sha256").get<std::string>();
    h.params_sha256 = j.at("params_sha256").get<std::string>();
    h.model_sha256 = j.at("model_sha256").get<std::string>();
    h.items = j.at("items").get<std::size_t>();
    h.manifest_copy = j.at("manifest_copy").get<std::string>();
    const auto& plan = j.at("plan");
    h.manifest_path = plan.at("manifest").get<std::string>();
    h.params_path = plan.at("params").get<std::string>();
    h.model_path = plan.at("model").get<std::string>();
    h.inputs_root = plan.at("inputs_root").get<std::string>();
    h.started_at = j.value("started_at", "");
    return h;
  } catch (const std::exception& e) {
    return BadInput(std::string("the journal's header is damaged: ") + e.what(), where,
                    "the run folder cannot be resumed; start a new run");
  }
}

Result<JournalState> LoadJournal(FileSystem& fsys, const fs::path& file, bool repair) {
  const std::string where = file.string();
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    return BadInput("no journal: the run never started (no item was processed)", where,
                    "start a new run with `pilot run`");
  }
  JournalState st;
  std::string line;
  std::uint64_t offset = 0;
  std::size_t line_no = 0;
  std::string pending_error;  // a bad record is fatal unless it turns out to be the last
  while (std::getline(in, line)) {
    const bool complete = !in.eof();  // getline stopped at a '\n'
    const std::uint64_t start = offset;
    offset += line.size() + (complete ? 1 : 0);
    ++line_no;
    if (!pending_error.empty()) {
      return BadInput(pending_error, where, "the journal is damaged before its end; the run folder cannot be resumed");
    }
    // Fast path for the result records pilot writes: {"type":"result","id":"…","status":"…"
    // (ids cannot hold quotes): no JSON parse for the bulk of a long journal.
    constexpr std::string_view kResult = "{\"type\":\"result\",\"id\":\"";
    if (complete && line_no > 1 && line.compare(0, kResult.size(), kResult) == 0 && line.back() == '}') {
      auto id_end = line.find('"', kResult.size());
      constexpr std::string_view kStatus = "\",\"status\":\"";
      if (id_end != std::string::npos && line.compare(id_end, kStatus.size(), kStatus) == 0) {
        std::string id = line.substr(kResult.size(), id_end - kResult.size());
        bool accepted = line.compare(id_end + kStatus.size(), 9, "accepted\"") == 0;
        bool rejected = line.compare(id_end + kStatus.size(), 9, "rejected\"") == 0;
        if (accepted || rejected) {
          if (!st.done.emplace(id, start).second) {
            return BadInput("item '" + id + "' has two results (record " + std::to_string(line_no) + ")", where,
                            "the journal is inconsistent; the run folder cannot be resumed");
          }
          (accepted ? st.accepted : st.rejected)++;
          ++st.done_in_session;
          st.valid_bytes = offset;
          continue;
        }
      }
    }
    nlohmann::json j;
    bool parsed = complete;
    if (complete) {
      try {
        j = nlohmann::json::parse(line);
        parsed = j.is_object() && j.contains("type");
      } catch (const nlohmann::json::exception&) {
        parsed = false;
      }
    }
    if (!parsed) {
      // Torn (no newline) or unreadable: acceptable only as the very last record.
      pending_error = "record " + std::to_string(line_no) + " is damaged";
      st.torn_bytes = offset - start;
      continue;
    }
    const std::string type = j["type"].get<std::string>();
    if (line_no == 1) {
      auto header = JournalHeader::FromJson(j, where);
      if (!header.ok()) return header.error();
      st.header = std::move(header).value();
    } else if (type == "session") {
      ++st.sessions;
      st.session_started = j.value("at_unix", 0.0);
      st.done_in_session = 0;
    } else if (type == "batch") {
      double at = j.value("at_unix", 0.0);
      // Time since the previous batch of this session (or its start) is processing time.
      double since = st.last_batch_at > st.session_started ? st.last_batch_at : st.session_started;
      if (st.session_started > 0 && at >= since) st.processing_seconds += at - since;
      st.last_batch_at = at;
      st.peak_rss_mb = std::max(st.peak_rss_mb, j.value("peak_rss_mb", 0.0));
      if (j.contains("device_peak_mb") && j["device_peak_mb"].is_number()) {
        st.device_peak_mb = std::max(st.device_peak_mb.value_or(0.0), j["device_peak_mb"].get<double>());
      }
    } else if (type == "result") {
      auto id = j.value("id", "");
      if (id.empty()) return BadInput("record " + std::to_string(line_no) + " has no id", where);
      if (!st.done.emplace(id, start).second) {
        return BadInput("item '" + id + "' has two results (record " + std::to_string(line_no) + ")", where,
                        "the journal is inconsistent; the run folder cannot be resumed");
      }
      (j.value("status", "") == "accepted" ? st.accepted : st.rejected)++;
      ++st.done_in_session;
    } else {
      return BadInput("record " + std::to_string(line_no) + " has unknown type '" + type + "'", where);
    }
    st.valid_bytes = offset;
  }
  if (line_no == 0 || st.valid_bytes == 0) {
    return BadInput("the journal has no header: the run never started (no item was processed)", where,
                    "start a new run with `pilot run`");
  }
  if (st.torn_bytes > 0 && repair) {
    if (Status s = fsys.Truncate(file, st.valid_bytes); !s.ok()) return s.error();
  }
  return st;
}

JournalReader::JournalReader(const fs::path& file) : where_(file.string()), in_(file, std::ios::binary) {}

Result<ResultRecord> JournalReader::Read(std::uint64_t offset) {
  if (offset != position_) {
    in_.clear();
    in_.seekg(static_cast<std::streamoff>(offset));
  }
  if (!std::getline(in_, line_)) {
    return BadInput("cannot read the journal at offset " + std::to_string(offset), where_);
  }
  position_ = offset + line_.size() + 1;
  return ParseResultRecord(line_, where_);
}

Result<JournalWriter> JournalWriter::Open(FileSystem& fsys, const fs::path& file) {
  auto f = fsys.OpenAppend(file);
  if (!f.ok()) return f.error();
  return JournalWriter(std::move(f).value());
}

Status JournalWriter::AppendSynced(const std::string& lines) {
  if (Status s = file_->Append(lines); !s.ok()) return s;
  return file_->Sync();
}

Status JournalWriter::AppendHeader(const JournalHeader& header) { return AppendSynced(header.ToJson().dump() + "\n"); }

Status JournalWriter::AppendSession(const nlohmann::ordered_json& session) {
  nlohmann::ordered_json j = {{"type", "session"}, {"at_unix", UnixSeconds()}};
  for (const auto& [k, v] : session.items()) j[k] = v;
  return AppendSynced(j.dump() + "\n");
}

Status JournalWriter::AppendResults(const std::vector<ResultRecord>& records, double unix_seconds,
                                    double peak_rss_mb, std::optional<double> device_peak_mb) {
  std::string lines;
  for (const auto& r : records) lines += ToJson(r, {{"type", "result"}}).dump() + "\n";
  nlohmann::ordered_json batch = {
      {"type", "batch"}, {"at_unix", unix_seconds}, {"items", records.size()}, {"peak_rss_mb", peak_rss_mb}};
  if (device_peak_mb) batch["device_peak_mb"] = *device_peak_mb;
  lines += batch.dump() + "\n";
  return AppendSynced(lines);
}

}  // namespace pilot

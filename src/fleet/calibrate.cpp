// `pilot calibrate` (calibrate.h): doctor, pilot and sweep as child processes of this pilot,
// assembled into one calibration folder; and the folder kind's own verify checks.
#include "pilot/fleet/calibrate.h"

#include <algorithm>
#include <cctype>

#include "pilot/bag.h"
#include "pilot/escape.h"
#include "pilot/folder_files.h"
#include "pilot/hash.h"
#include "pilot/journal.h"
#include "pilot/json_util.h"
#include "pilot/limits.h"
#include "pilot/run.h"
#include "pilot/sweep/sweep_files.h"
#include "pilot/utf8.h"
#include "pilot/verify.h"

namespace pilot {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {

constexpr std::uint64_t kDoctorBytes = 4u << 20;  // a doctor report (far above a real one)

bool IsDeviceClass(const std::string& c) { return c == "cpu" || c == "cuda" || c == "rocm"; }

// Printable, bounded text for a device name read from a report (a GPU's or a CPU's name).
bool IsDeviceName(const std::string& s) {
  return s.size() <= kMaxDeviceNameChars && CheckUtf8(s).valid && EscapeTerminal(s) == s;
}

// The device class a run folder's record and environment give: a run's plan.device ("cpu",
// "cuda:0"), ROCm where its environment says so (a ROCm build names its device cuda).
std::string ClassOfRun(FileSystem& fsys, const fs::path& run, std::string& device) {
  auto text = ReadInsideFolder(fsys, run, kRunRecord, limits::kRunRecordBytes);
  if (!text.ok()) return "";
  auto j = ParseJson(text.value(), kRunRecord);
  if (!j.ok() || !j.value().contains("plan") || !j.value()["plan"].is_object()) return "";
  device = StringAt(j.value()["plan"], "device").value_or("");
  if (device == "cpu") return "cpu";
  if (device.rfind("cuda", 0) != 0) return "";
  auto env = ReadInsideFolder(fsys, run, kEnvironmentFile, limits::kRunRecordBytes);
  if (env.ok()) {
    auto e = ParseJson(env.value(), kEnvironmentFile);
    if (e.ok() && e.value().dump().find("\"rocm_available\":true") != std::string::npos) return "rocm";
  }
  return "cuda";
}

class Calibration {
 public:
  Calibration(FileSystem& fsys, Processes& processes, Clock& clock, const CalibrationRequest& request)
      : fs_(fsys), processes_(processes), clock_(clock), request_(request) {}

  Result<CalibrationOutcome> Run() {
    out_.dir = request_.out;
    staging_ = fs::path(request_.out.string() + ".calibrating");
    for (const fs::path& p : {request_.out, staging_}) {
      auto st = fs_.LinkStat(p);
      if (!st.ok()) return st.error();
      if (st.value().exists) {
        return BadInput(p == staging_ ? "a calibration stopped here earlier (its steps' logs are inside)"
                                      : "exists: a calibration folder is never reused",
                        p.string(), "give another --out, or remove it first");
      }
    }
    started_ = clock_.UtcNowIso();
    PILOT_TRY(fs_.CreateDirectoryExclusive(staging_));
    PILOT_TRY(fs_.CreateDirectoryExclusive(staging_ / kPayloadFolder));
    PILOT_TRY(fs_.CreateDirectoryExclusive(staging_ / kCalibrationLogs));
    const std::string params = fs::absolute(request_.params).string();
    const std::string device = request_.device;

    // 1. The doctor, on the card: its report is the folder's data/doctor.json.
    auto doctor = Step("doctor", {"pilot", "doctor", "--params", params, "--device", device, "--json"},
                       "doctor.json", kPayloadFolder, "doctor.log");
    if (!doctor.ok()) return doctor.error();
    if (doctor.value() != 0) {
      out_.stopped_at = "doctor";
      out_.exit_code = doctor.value() == 3 ? 3 : doctor.value();
      return out_;
    }
    // 2. The pilot, into data/pilot. Exit 4 (acceptance unmet) is a whole folder, measured.
    std::vector<std::string> run = {"pilot",    "run",  "--params",   params,
                                    "--device", device, "--runs-dir", (staging_ / kPayloadFolder).string(),
                                    "--run-id", "pilot"};
    auto pilot = Step("pilot", run, "pilot.log", kCalibrationLogs, "");
    if (!pilot.ok()) return pilot.error();
    if (pilot.value() != 0 && pilot.value() != 4) {
      out_.stopped_at = "pilot";
      out_.exit_code = pilot.value();
      return out_;
    }
    // 3. The sweep, into data/sweep. Exit 1 (equivalence findings) is a whole folder.
    std::vector<std::string> sweep = {
        "pilot",    "sweep", "--params", params,
        "--device", device,  "--out",    (staging_ / kCalibrationSweep).string()};
    for (auto [option, value] :
         {std::pair{"--batch-sizes", &request_.batch_sizes}, std::pair{"--repeats", &request_.repeats},
          std::pair{"--groups", &request_.groups}}) {
      if (!value->empty()) {
        sweep.push_back(option);
        sweep.push_back(*value);
      }
    }
    auto swept = Step("sweep", sweep, "sweep.log", kCalibrationLogs, "");
    if (!swept.ok()) return swept.error();
    if (swept.value() != 0 && swept.value() != 1) {
      out_.stopped_at = "sweep";
      out_.exit_code = swept.value();
      return out_;
    }
    PILOT_TRY(Assemble(doctor.value(), pilot.value(), swept.value()));
    out_.exit_code = pilot.value() != 0 ? pilot.value() : swept.value();
    return out_;
  }

 private:
  // Runs one step as a child of this pilot, its stdout into `out_name` in the staging folder's
  // `out_folder` (and its stderr into data/logs/`err_name`, or with stdout when empty).
  Result<int> Step(const std::string& name, const std::vector<std::string>& args, const std::string& out_name,
                   const std::string& out_folder, const std::string& err_name) {
    if (request_.on_progress) request_.on_progress("calibrate: " + name + " ...");
    auto out_dir = processes_.OpenFolderForChild((staging_ / out_folder).string());
    if (!out_dir.ok())
      return WorkFailed("cannot open: " + out_dir.error().what, (staging_ / out_folder).string());
    auto out_fd = processes_.OpenLogForChild(out_dir.value(), out_name);
    processes_.Close(out_dir.value());
    if (!out_fd.ok()) return WorkFailed("cannot create: " + out_fd.error().what, out_name);
    int err_fd = out_fd.value();
    if (!err_name.empty()) {
      auto logs = processes_.OpenFolderForChild((staging_ / kCalibrationLogs).string());
      if (!logs.ok()) {
        processes_.Close(out_fd.value());
        return WorkFailed("cannot open: " + logs.error().what, (staging_ / kCalibrationLogs).string());
      }
      auto e = processes_.OpenLogForChild(logs.value(), err_name);
      processes_.Close(logs.value());
      if (!e.ok()) {
        processes_.Close(out_fd.value());
        return WorkFailed("cannot create: " + e.error().what, err_name);
      }
      err_fd = e.value();
    }
    ChildSpec child;
    child.args = args;
    child.out_fd = out_fd.value();
    child.err_fd = err_fd;
    const double t0 = clock_.MonotonicSeconds();
    auto pid = processes_.Spawn(child);
    processes_.Close(out_fd.value());
    if (err_fd != out_fd.value()) processes_.Close(err_fd);
    if (!pid.ok()) return WorkFailed("cannot start `pilot " + args[1] + "`: " + pid.error().what, name);
    auto waited =
        processes_.Wait(pid.value(), [this] { return request_.should_stop && request_.should_stop(); });
    if (!waited.ok()) return WorkFailed("lost `pilot " + args[1] + "`: " + waited.error().what, name);
    if (!waited.value()) {
      return Error{ErrorKind::kInterrupted, "interrupted during the " + name + " step", staging_.string(),
                   "nothing is at " + request_.out.string() + "; remove " + staging_.string() +
                       " and calibrate again"};
    }
    CalibrationStep step{name, waited.value()->Status(), clock_.MonotonicSeconds() - t0};
    out_.steps.push_back(step);
    if (request_.on_progress) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "calibrate: %s exited %d after %.1f s", name.c_str(), step.exit_code,
                    step.seconds);
      request_.on_progress(buf);
    }
    return step.exit_code;
  }

  // Each nested folder verified in full, the record written, the bag finished, and the folder
  // renamed into place.
  Status Assemble(int doctor_exit, int pilot_exit, int sweep_exit) {
    CalibrationRecord r;
    r.run_id = request_.out.filename().string();
    r.doctor_exit = doctor_exit;
    r.pilot_exit = pilot_exit;
    r.sweep_exit = sweep_exit;
    const fs::path pilot = staging_ / kCalibrationPilot, sweep = staging_ / kCalibrationSweep;
    for (auto [dir, print] :
         {std::pair{pilot, &r.pilot_fingerprint}, std::pair{sweep, &r.sweep_fingerprint}}) {
      auto v = VerifyFolder(fs_, dir, VerifyOptions{});
      if (!v.ok()) return v.error();
      if (!v.value().ok()) {
        const Finding& f = v.value().findings.front();
        return WorkFailed(
            "the step's folder fails verification: [" + f.check + "] " + f.where + ": " + f.what,
            dir.string());
      }
      *print = v.value().fingerprint;
    }
    r.device_class = ClassOfRun(fs_, pilot, r.device);
    if (r.device_class.empty()) return WorkFailed("the pilot's record names no device", pilot.string());
    auto record = ReadInsideFolder(fs_, pilot, kRunRecord, limits::kRunRecordBytes);
    if (!record.ok()) return record.error();
    auto rj = ParseJson(record.value(), kRunRecord);
    if (!rj.ok()) return rj.error();
    r.manifest_sha256 = StringAt(rj.value(), "manifest_sha256").value_or("");
    r.params_sha256 = StringAt(rj.value(), "params_sha256").value_or("");
    r.model_sha256 = StringAt(rj.value(), "model_sha256").value_or("");
    auto doctor_text = ReadInsideFolder(fs_, staging_, kCalibrationDoctor, kDoctorBytes);
    if (!doctor_text.ok()) return doctor_text.error();
    auto doctor = ParseJson(doctor_text.value(), kCalibrationDoctor);
    if (!doctor.ok()) return doctor.error();
    r.doctor_sha256 = Sha256Hex(doctor_text.value());
    r.doctor_ok = doctor.value().contains("ok") && doctor.value()["ok"] == true;
    r.device_name = DoctorDeviceName(doctor.value(), r.device);
    r.state = "finished";
    r.started_at = started_;
    r.finished_at = clock_.UtcNowIso();
    const FolderIdentity identity{kFolderKindCalibration, kCalibrationFormatVersion, r.run_id,
                                  "pilot calibrate: the first rented hour (doctor, pilot, sweep)"};
    ojson j =
        RecordHead(identity, JoinArguments(request_.command_line), r.state, r.started_at, r.finished_at);
    j["device"] = r.device;
    j["device_class"] = r.device_class;
    j["device_name"] = r.device_name;
    j["manifest_sha256"] = r.manifest_sha256;
    j["params_sha256"] = r.params_sha256;
    j["model_sha256"] = r.model_sha256;
    j["doctor"] = {{"file", kCalibrationDoctor},
                   {"sha256", r.doctor_sha256},
                   {"ok", r.doctor_ok},
                   {"exit_code", doctor_exit}};
    j["pilot"] = {
        {"folder", kCalibrationPilot}, {"fingerprint", r.pilot_fingerprint}, {"exit_code", pilot_exit}};
    j["sweep"] = {
        {"folder", kCalibrationSweep}, {"fingerprint", r.sweep_fingerprint}, {"exit_code", sweep_exit}};
    auto steps = ojson::array();
    for (const CalibrationStep& s : out_.steps)
      steps.push_back({{"step", s.name}, {"exit_code", s.exit_code}, {"seconds", s.seconds}});
    j["steps"] = steps;
    PILOT_TRY(WriteBagDeclaration(fs_, staging_));
    PILOT_TRY(fs_.WriteFileAtomic(staging_ / kRunRecord, PrettyJson(j)));
    PILOT_TRY(FinalizeFolder(fs_, staging_, r.finished_at.substr(0, 10), identity));
    PILOT_TRY(fs_.RenameNoReplace(staging_, request_.out));
    auto v = VerifyFolder(fs_, request_.out, VerifyOptions{});
    if (!v.ok()) return v.error();
    if (!v.value().ok()) {
      const Finding& f = v.value().findings.front();
      return WorkFailed(
          "the calibration folder fails verification: [" + f.check + "] " + f.where + ": " + f.what,
          request_.out.string());
    }
    out_.fingerprint = v.value().fingerprint;
    out_.record = r;
    return {};
  }

  FileSystem& fs_;
  Processes& processes_;
  Clock& clock_;
  const CalibrationRequest& request_;
  fs::path staging_;
  std::string started_;
  CalibrationOutcome out_;
};

// A nested folder: a folder (never a link), of `kind`, verified in full, with the recorded
// fingerprint.
void CheckNested(FileSystem& fsys, const fs::path& dir, const std::string& rel, const std::string& kind,
                 const std::string& fingerprint, const std::string& manifest_sha256,
                 const std::function<void(const std::string&, const std::string&)>& add) {
  auto st = fsys.LinkStat(dir / rel);
  if (!st.ok() || !st.value().exists || st.value().symlink || !st.value().directory) {
    add(rel, "is not a folder of the calibration (missing, or a link)");
    return;
  }
  auto k = ReadFolderKind(fsys, dir / rel);
  if (!k.ok() || k.value().kind != kind) {
    add(rel,
        "is not a " + kind + " folder" + (k.ok() ? " (it says " + KeyForMessage(k.value().kind) + ")" : ""));
    return;
  }
  auto v = VerifyFolder(fsys, dir / rel, VerifyOptions{});
  if (!v.ok()) {
    add(rel, v.error().what);
    return;
  }
  if (v.value().fingerprint != fingerprint) {
    add(rel, "has fingerprint " +
                 (v.value().fingerprint.empty() ? std::string("none") : v.value().fingerprint) +
                 "; data/run.json records " + fingerprint);
  }
  const auto& found = v.value().findings;
  for (std::size_t i = 0; i < found.size() && i < 10; ++i)
    add(rel + "/" + found[i].where, "[" + found[i].check + "] " + found[i].what);
  if (found.size() > 10)
    add(rel, std::to_string(found.size() - 10) + " more finding(s): pilot verify " + rel);
  auto record = ReadInsideFolder(fsys, dir / rel, kRunRecord, limits::kRunRecordBytes);
  auto j = record.ok() ? ParseJson(record.value(), kRunRecord) : Result<nlohmann::json>(record.error());
  if (!j.ok() || StringAt(j.value(), "manifest_sha256").value_or("") != manifest_sha256) {
    add(rel, "measured another manifest than data/run.json records (" + manifest_sha256 + ")");
  }
}

void CheckCalibrationFolder(FileSystem& fsys, const fs::path& dir, std::vector<Finding>& findings) {
  auto add = [&](const std::string& where, const std::string& what) {
    findings.push_back({"calibration", EscapeTerminal(where), EscapeTerminal(what)});
  };
  auto r = ReadCalibrationRecord(fsys, dir);
  if (!r.ok()) {
    add(r.error().where, r.error().what);
    return;
  }
  const CalibrationRecord& rec = r.value();
  auto doctor = ReadInsideFolder(fsys, dir, kCalibrationDoctor, kDoctorBytes);
  if (!doctor.ok()) {
    add(kCalibrationDoctor, doctor.error().what);
  } else if (Sha256Hex(doctor.value()) != rec.doctor_sha256) {
    add(kCalibrationDoctor,
        "its sha256 is not the one data/run.json records (changed after the calibration)");
  } else if (auto d = ParseJson(doctor.value(), kCalibrationDoctor); !d.ok()) {
    add(kCalibrationDoctor, d.error().what);
  } else {
    if ((d.value().contains("ok") && d.value()["ok"] == true) != rec.doctor_ok)
      add(kRunRecord, "doctor.ok does not say what data/doctor.json says");
    if (DoctorDeviceName(d.value(), rec.device) != rec.device_name)
      add(kRunRecord, "device_name is not the name data/doctor.json gives " + rec.device);
  }
  CheckNested(fsys, dir, kCalibrationPilot, kFolderKindRun, rec.pilot_fingerprint, rec.manifest_sha256, add);
  CheckNested(fsys, dir, kCalibrationSweep, kFolderKindSweep, rec.sweep_fingerprint, rec.manifest_sha256,
              add);
  std::string device;
  const std::string cls = ClassOfRun(fsys, dir / kCalibrationPilot, device);
  if (cls != rec.device_class || device != rec.device) {
    add(kRunRecord, "device " + rec.device + " (" + rec.device_class + ") is not the pilot's, " + device +
                        " (" + cls + ")");
  }
}

Result<RunStatus> ReadCalibrationStatus(FileSystem& fsys, const fs::path& dir) {
  auto r = ReadCalibrationRecord(fsys, dir);
  if (!r.ok()) return r.error();
  // The pilot's items, as its own folder counts them; the calibration is finished as a whole.
  auto pilot = ReadRunStatus(fsys, dir / kCalibrationPilot);
  RunStatus st = pilot.ok() ? pilot.value() : RunStatus{};
  st.folder_kind = kFolderKindCalibration;
  st.run_id = r.value().run_id;
  st.state = r.value().state;
  st.writer_pid.reset();
  st.eta_seconds.reset();
  st.items_per_second = 0;
  st.format_version = kJournalVersion;
  return st;
}

}  // namespace

std::string DoctorDeviceName(const nlohmann::json& doctor, const std::string& device) {
  if (!doctor.is_object() || !doctor.contains("checks") || !doctor["checks"].is_array()) return "";
  std::optional<std::uint64_t> index;
  if (device.rfind("cuda:", 0) == 0 && device.size() > 5 && device.size() < 9 &&
      std::all_of(device.begin() + 5, device.end(),
                  [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    index = std::stoull(device.substr(5));
  } else if (device == "cuda") {
    index = 0;
  }
  for (const auto& c : doctor["checks"]) {
    if (!c.is_object() || !c.contains("data")) continue;
    const auto& data = c["data"];
    if (device == "cpu" && c.value("name", "") == "host" && data.is_object()) {
      const std::string name = StringAt(data, "cpu_model").value_or("");
      return IsDeviceName(name) ? name : "";
    }
    if (index && c.value("name", "") == "gpus" && data.is_array()) {
      for (const auto& g : data) {
        if (UnsignedAt(g, "index") == index) {
          const std::string name = StringAt(g, "name").value_or("");
          return IsDeviceName(name) ? name : "";
        }
      }
    }
  }
  return "";
}

Result<CalibrationRecord> ReadCalibrationRecord(FileSystem& fsys, const fs::path& dir) {
  auto text = ReadInsideFolder(fsys, dir, kRunRecord, limits::kRunRecordBytes);
  if (!text.ok()) return text.error();
  auto parsed = ParseJson(text.value(), (dir / kRunRecord).string());
  if (!parsed.ok()) return parsed.error();
  const nlohmann::json& j = parsed.value();
  auto bad = [&](const std::string& what) {
    return BadInput(what, (dir / kRunRecord).string(), "the folder was altered or is not a calibration");
  };
  CalibrationRecord r;
  if (StringAt(j, "folder_kind").value_or("") != kFolderKindCalibration)
    return bad("not a calibration folder");
  for (auto [key, out] :
       {std::pair{"run_id", &r.run_id}, std::pair{"state", &r.state}, std::pair{"started_at", &r.started_at},
        std::pair{"device", &r.device}, std::pair{"device_class", &r.device_class},
        std::pair{"device_name", &r.device_name}, std::pair{"manifest_sha256", &r.manifest_sha256},
        std::pair{"params_sha256", &r.params_sha256}, std::pair{"model_sha256", &r.model_sha256}}) {
    auto v = StringAt(j, key);
    if (!v || v->size() > 4096) return bad(std::string("'") + key + "' is missing or not a string");
    *out = *v;
  }
  r.finished_at = StringAt(j, "finished_at").value_or("");
  if (r.state != "finished") return bad("'state' is not finished");
  if (!IsDeviceClass(r.device_class)) return bad("'device_class' is not cpu, cuda or rocm");
  if (!IsDeviceName(r.device_name) || !IsDeviceName(r.device))
    return bad("'device' or 'device_name' is not short printable text");
  if (!IsSha256Hex(r.manifest_sha256) || !IsSha256Hex(r.params_sha256) || !IsSha256Hex(r.model_sha256))
    return bad("a pin (manifest, params, model sha256) is not 64 lower-case hex digits");
  struct Part {
    const char* key;
    const char* where;
    const char* where_key;
    std::string* digest;
    int* exit_code;
  };
  for (const Part& p : {Part{"doctor", kCalibrationDoctor, "file", &r.doctor_sha256, &r.doctor_exit},
                        Part{"pilot", kCalibrationPilot, "folder", &r.pilot_fingerprint, &r.pilot_exit},
                        Part{"sweep", kCalibrationSweep, "folder", &r.sweep_fingerprint, &r.sweep_exit}}) {
    if (!j.contains(p.key) || !j[p.key].is_object())
      return bad(std::string("'") + p.key + "' is not an object");
    const nlohmann::json& o = j[p.key];
    if (StringAt(o, p.where_key).value_or("") != p.where)
      return bad(std::string("'") + p.key + "." + p.where_key + "' is not " + p.where);
    auto digest = StringAt(o, std::string(p.key) == "doctor" ? "sha256" : "fingerprint");
    auto code = UnsignedAt(o, "exit_code");
    if (!digest || !IsSha256Hex(*digest) || !code || *code > 255)
      return bad(std::string("'") + p.key + "' lacks its sha256 or fingerprint, or its exit code");
    *p.digest = *digest;
    *p.exit_code = static_cast<int>(*code);
  }
  if (!j["doctor"].contains("ok") || !j["doctor"]["ok"].is_boolean())
    return bad("'doctor.ok' is not a boolean");
  r.doctor_ok = j["doctor"]["ok"].get<bool>();
  return r;
}

Result<CalibrationOutcome> Calibrate(FileSystem& fsys, Processes& processes, Clock& clock,
                                     const CalibrationRequest& request) {
  return Calibration(fsys, processes, clock, request).Run();
}

void RegisterCalibrationFolderKind(FolderKindRegistry& registry) {
  FolderKindSpec spec;
  spec.name = kFolderKindCalibration;
  spec.checked =
      "a calibration folder: its record, the doctor's report, and the pilot and sweep folders inside "
      "it, each verified in full with its recorded fingerprint";
  spec.min_format = spec.max_format = kCalibrationFormatVersion;
  spec.run_record = false;
  spec.checks = CheckCalibrationFolder;
  spec.status = ReadCalibrationStatus;
  registry.Register(std::move(spec));
}

}  // namespace pilot

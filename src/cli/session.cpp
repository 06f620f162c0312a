#include "cli/session.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "cli/torch_loader.h"
#include "pilot/clock.h"
#include "pilot/escape.h"
#include "pilot/params.h"
#include "pilot/plan.h"
#include "pilot/utf8.h"

namespace pilot::cli {

namespace fs = std::filesystem;

namespace {

std::atomic<int> g_interrupts{0};

void OnSignal(int sig) {
  int n = ++g_interrupts;
  if (n > 1 && sig == SIGINT) {
    const char msg[] = "\npilot: stopping now; the run folder stays resumable\n";
    [[maybe_unused]] auto w = ::write(STDERR_FILENO, msg, sizeof msg - 1);
    ::_exit(Code(ExitCode::kInterrupted));
  }
  const char msg[] = "\npilot: stopping after the current batch (Ctrl-C again to stop at once)\n";
  [[maybe_unused]] auto w = ::write(STDERR_FILENO, msg, sizeof msg - 1);
}

// Test hook: counts durable operations and SIGKILLs the process after the Nth. Counted:
// whole-file writes, copies, commits, appends, truncations and RenameReplace; with
// every_step, also each folder created, file or folder removed, rename and lock taken, so
// that a test can stop a command between any two changes it makes.
class KillingFileSystem : public FileSystemWrapper {
 public:
  KillingFileSystem(long kill_after, bool every_step)
      : FileSystemWrapper(RealFileSystem()), kill_after_(kill_after), every_step_(every_step) {}
  Status RenameReplace(const stdfs::path& from, const stdfs::path& to) override {
    return Count(target().RenameReplace(from, to));
  }
  Status CreateDirectoryExclusive(const stdfs::path& d) override {
    return Step(target().CreateDirectoryExclusive(d));
  }
  Status RemoveFile(const stdfs::path& f) override { return Step(target().RemoveFile(f)); }
  Status RemoveTree(const stdfs::path& d) override { return Step(target().RemoveTree(d)); }
  Status RenameNoReplace(const stdfs::path& from, const stdfs::path& to) override {
    return Step(target().RenameNoReplace(from, to));
  }
  Result<LockAttempt> TryLock(const stdfs::path& f, bool exclusive, bool create) override {
    auto got = target().TryLock(f, exclusive, create);
    if (create && got.ok() && got.value().lock) (void)Step(Status());
    return got;
  }
  Status Step(Status st) { return every_step_ ? Count(std::move(st)) : st; }
  Status WriteFileAtomic(const stdfs::path& f, std::string_view data) override {
    return Count(target().WriteFileAtomic(f, data));
  }
  Status CopyFileAtomic(const stdfs::path& from, const stdfs::path& to,
                        bool follow_symlinks = true) override {
    return Count(target().CopyFileAtomic(from, to, follow_symlinks));
  }
  Status Truncate(const stdfs::path& f, std::uint64_t size) override {
    return Count(target().Truncate(f, size));
  }
  // One write, counted when it is committed (its pieces go to a temp file nobody reads).
  Result<std::unique_ptr<AtomicFile>> CreateAtomic(const stdfs::path& f) override {
    auto inner = target().CreateAtomic(f);
    if (!inner.ok()) return inner.error();
    return std::unique_ptr<AtomicFile>(std::make_unique<KillingAtomic>(std::move(inner).value(), *this));
  }
  Result<std::unique_ptr<AppendFile>> OpenAppend(const stdfs::path& f) override {
    auto inner = target().OpenAppend(f);
    if (!inner.ok()) return inner.error();
    return std::unique_ptr<AppendFile>(std::make_unique<KillingAppend>(std::move(inner).value(), *this));
  }
  Status Count(Status st) {
    if (++writes_ == kill_after_) ::kill(::getpid(), SIGKILL);
    return st;
  }

 private:
  class KillingAtomic : public AtomicFile {
   public:
    KillingAtomic(std::unique_ptr<AtomicFile> inner, KillingFileSystem& fs)
        : inner_(std::move(inner)), fs_(fs) {}
    Status Append(std::string_view d) override { return inner_->Append(d); }
    Status Commit() override { return fs_.Count(inner_->Commit()); }

   private:
    std::unique_ptr<AtomicFile> inner_;
    KillingFileSystem& fs_;
  };
  class KillingAppend : public AppendFile {
   public:
    KillingAppend(std::unique_ptr<AppendFile> inner, KillingFileSystem& fs)
        : inner_(std::move(inner)), fs_(fs) {}
    Status Append(std::string_view d) override {
      // Kill half-way through a multi-record append too: a torn last record.
      if (fs_.writes_ + 1 == fs_.kill_after_ && d.size() > 1) {
        Status st = inner_->Append(d.substr(0, d.size() / 2));
        return fs_.Count(st);
      }
      return fs_.Count(inner_->Append(d));
    }
    Status Sync() override { return inner_->Sync(); }

   private:
    std::unique_ptr<AppendFile> inner_;
    KillingFileSystem& fs_;
  };
  long kill_after_;
  bool every_step_;
  long writes_ = 0;
};

}  // namespace

Status CheckDefaultParams(const std::string& params, std::string_view default_path) {
  if (params != default_path) return {};
  auto st = RealFileSystem().LinkStat(params);
  if (st.ok() && st.value().exists) return {};
  std::error_code ec;
  return BadInput(
      "no parameter file at " + params + " under the current folder " + fs::current_path(ec).string(),
      "--params",
      "pilot's defaults (" + std::string(default_path) +
          ", runs/) are relative to the folder it runs in: give "
          "--params YOUR.json (and --runs-dir DIR for the run folders), or run it from the pilot checkout");
}

void InstallInterruptHandlers() {
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

bool InterruptRequested() { return g_interrupts.load() > 0; }

RunControl MakeRunControl(const Common& common, std::size_t stop_after) {
  RunControl control;
  control.should_stop = InterruptRequested;
  control.stop_after = stop_after;
  if (!common.quiet && !common.json && ::isatty(STDERR_FILENO)) {
    auto last = std::make_shared<double>(0);
    control.on_progress = [last](const Progress& p) {
      double now = SystemClock().MonotonicSeconds();
      if (now - *last < 0.2 && p.done < p.total) return;
      *last = now;
      std::fprintf(stderr, "\r\033[Kpilot: %zu/%zu items, %zu rejected, %.1f items/s, ETA %.0f s", p.done,
                   p.total, p.rejected, p.items_per_second, p.eta_seconds);
      if (p.done >= p.total) std::fputc('\n', stderr);
      std::fflush(stderr);
    };
  }
  // Test hook: PILOT_TEST_BATCH_DELAY_MS=N sleeps after each batch, so that tests can act
  // on a run that is still going.
  if (const char* ms = std::getenv("PILOT_TEST_BATCH_DELAY_MS"); ms && std::atol(ms) > 0) {
    auto inner = control.on_progress;
    std::chrono::milliseconds delay(std::atol(ms));
    control.on_progress = [inner, delay](const Progress& p) {
      if (inner) inner(p);
      std::this_thread::sleep_for(delay);  // the full delay, even when a signal arrives
    };
  }
  return control;
}

FileSystem& CliFileSystem() {
  static FileSystem* fs = []() -> FileSystem* {
    const char* n = std::getenv("PILOT_TEST_KILL_AFTER_WRITE");
    const char* every = std::getenv("PILOT_TEST_KILL_EVERY_STEP");
    if (n && std::atol(n) > 0) return new KillingFileSystem(std::atol(n), every && std::string(every) == "1");
    return &RealFileSystem();
  }();
  return *fs;
}

int PrintOutcome(const RunOutcome& out, const Common& common) {
  std::error_code ec;
  const std::string dir = fs::absolute(out.run_dir, ec).lexically_normal().string();
  for (const auto& note : out.notes) std::fprintf(stderr, "pilot: note: %s\n", EscapeTerminal(note).c_str());
  if (common.json) {
    nlohmann::ordered_json j;
    j["ok"] = out.verdict == RunVerdict::kPassed;
    j["exit_code"] = Code(ExitCodeFor(out.verdict));
    j["run_id"] = out.run_id;
    j["run_dir"] = dir;
    j["state"] = out.interrupted ? "interrupted" : "finished";
    j["done"] = out.progress.done;
    j["total"] = out.progress.total;
    if (!out.interrupted) {
      j["report"] = ReportToJson(out.report);
      j["verify"] = VerifyResultToJson(out.run_dir, out.verify);
    }
    if (!out.fingerprint.empty()) j["fingerprint"] = out.fingerprint;
    j["notes"] = out.notes;
    PrintJson(j);
    return Code(ExitCodeFor(out.verdict));
  }
  if (out.interrupted) {
    std::fprintf(stderr,
                 "pilot: interrupted: %zu of %zu items done and journaled; resume with:\n  pilot resume %s\n",
                 out.progress.done, out.progress.total, dir.c_str());
    return Code(ExitCodeFor(out.verdict));
  }
  const Report& r = out.report;
  std::printf("run %s: %zu items, %zu accepted, %zu rejected\n", out.run_id.c_str(), r.total, r.accepted,
              r.rejected);
  for (const auto& [reason, n] : r.by_reason) std::printf("  rejected %-22s %zu\n", reason.c_str(), n);
  PrintQuality(r);
  std::printf("latency p50 %.2f ms, p95 %.2f ms; %.1f items/s; peak RSS %.0f MB", r.p50_ms, r.p95_ms,
              r.items_per_second, r.peak_rss_mb);
  if (r.device_peak_mb) std::printf("; device peak %.0f MB", *r.device_peak_mb);
  std::printf("\n");
  if (!out.verify.ok()) {
    PrintFindings(out.verify.findings);
  } else {
    std::printf("verify: ok (every manifest id accounted for exactly once)\n");
  }
  PrintUnmetCriteria(r);
  std::printf("run folder: %s\n", dir.c_str());
  if (!out.fingerprint.empty()) {
    std::printf("fingerprint: %s  (check a copy with: pilot verify COPY --expect %s)\n",
                out.fingerprint.c_str(), out.fingerprint.c_str());
  }
  return Code(ExitCodeFor(out.verdict));
}

void PrintQuality(const Report& r) {
  if (r.output && r.output->generates) {
    const GenerationFigures& g = r.generation;
    std::printf(
        "generation: %llu prompt + %llu completion tokens; TTFT p50 %.2f p99 %.2f ms; TPOT p50 %.3f p99 %.3f "
        "ms; "
        "prefill %.0f, decode %.0f tokens/s; KV cache of the largest batch %.3f MiB\n",
        static_cast<unsigned long long>(g.prompt_tokens),
        static_cast<unsigned long long>(g.completion_tokens), g.ttft_p50, g.ttft_p99, g.tpot_p50, g.tpot_p99,
        g.prefill_tokens_per_s(), g.decode_tokens_per_s(), g.kv_cache_bytes_max / 1048576.0);
  }
  if (!r.labelled) return;
  std::printf(
      "%s: %zu/%zu (%.1f%%); expected rejections met: %zu/%zu\n",
      r.output && r.output->generates ? "exact match on labelled prompts" : "accuracy on labelled items",
      r.correct, r.labelled, 100.0 * r.accuracy(), r.expected_rejections_met, r.expected_rejections);
  for (std::size_t i = 0; i < r.never_predicted.size() && i < kListedNeverPredicted; ++i) {
    std::printf("  label never predicted: %s (0 of the %zu labelled items that expect it)\n",
                EscapeTerminal(TruncateUtf8(r.never_predicted[i], 100)).c_str(),
                SupportOf(r.per_label, r.never_predicted[i]));
  }
  if (r.never_predicted.size() > kListedNeverPredicted) {
    std::printf("  ... and %zu more labels never predicted (report.json, quality.never_predicted)\n",
                r.never_predicted.size() - kListedNeverPredicted);
  }
}

void PrintFindings(const std::vector<Finding>& findings, const std::string& heading, std::size_t most) {
  std::printf("%s with %zu finding(s):\n", heading.c_str(), findings.size());
  std::size_t shown = 0;
  for (const auto& f : findings) {
    if (shown++ == most) {
      std::printf("  ... and %zu more\n", findings.size() - most);
      break;
    }
    std::printf("  [%s] %s: %s\n", f.check.c_str(), EscapeTerminal(f.where).c_str(),
                EscapeTerminal(f.what).c_str());
  }
}

void PrintUnmetCriteria(const Report& r) {
  for (const auto& c : r.criteria) {
    if (!c.measured) {
      std::printf("acceptance: %s not met: nothing to measure it on (e.g. no item has an `expected` label)\n",
                  c.name.c_str());
    } else if (!c.met) {
      std::printf("acceptance: %s not met (limit %g, value %g)\n", c.name.c_str(), c.limit, c.value);
    }
  }
}

int RunSessionToEnd(SessionRequest request, const Common& common, std::size_t stop_after) {
  request.on_note = [](const std::string& note) {
    std::fprintf(stderr, "pilot: %s\n", EscapeTerminal(note).c_str());
  };
  auto session = OpenRunSession(CliFileSystem(), TorchRuntime(), request);
  if (!session.ok()) return ReportError(session.error(), common);
  RunSession& s = session.value();
  if (s.finished) return PrintAlreadyFinished(*s.resume, common);
  InstallInterruptHandlers();
  auto outcome = RunToEnd(CliFileSystem(), SystemClock(), s, MakeRunControl(common, stop_after));
  if (!outcome.ok()) return ReportError(outcome.error(), common);
  return PrintOutcome(outcome.value(), common);
}

int PrintAlreadyFinished(const ResumeSetup& s, const Common& common) {
  const VerifyResult& v = *s.finished_verify;
  for (const auto& note : s.notes) std::fprintf(stderr, "pilot: note: %s\n", EscapeTerminal(note).c_str());
  const int code = Code(v.ok() ? ExitCode::kOk : ExitCode::kVerifyFailed);
  if (common.json) {
    nlohmann::ordered_json j;
    j["ok"] = v.ok();
    j["exit_code"] = code;
    j["run_dir"] = s.run_dir.string();
    j["state"] = "finished";
    j["verify"] = VerifyResultToJson(s.run_dir, v);
    if (!v.fingerprint.empty()) j["fingerprint"] = v.fingerprint;
    j["notes"] = s.notes;
    PrintJson(j);
    return code;
  }
  if (v.ok()) {
    std::printf("verify: ok (every manifest id accounted for exactly once)\n");
  } else {
    PrintFindings(v.findings);
  }
  std::printf("run folder: %s\n", s.run_dir.c_str());
  if (!v.fingerprint.empty()) std::printf("fingerprint: %s\n", v.fingerprint.c_str());
  return code;
}

}  // namespace pilot::cli

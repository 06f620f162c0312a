// The checks of `pilot doctor`. Torch is needed for the compute and model checks.
#include <ATen/Parallel.h>
#include <sys/stat.h>
#include <torch/cuda.h>
#include <torch/script.h>
#include <torch/version.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>

#include "pilot/hash.h"
#include "pilot/host.h"
#include "pilot/manifest.h"
#include "pilot/precheck.h"
#include "pilot/torch_stage.h"
#include "torch_device.h"

namespace pilot {

namespace fs = std::filesystem;

namespace {

// Formats up to two numbers; every caller passes a literal format.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
std::string Fmt(const char* format, double a, double b = 0) {
  char buf[160];
  std::snprintf(buf, sizeof buf, format, a, b);
  return buf;
}
#pragma GCC diagnostic pop

// Up to `n` texts of the parameters' manifest that pass the prechecks: real pilot inputs.
std::vector<std::string> SampleInputs(const Params& params, std::size_t n) {
  std::vector<std::string> texts;
  FileSystem& files = RealFileSystem();
  auto manifest = ManifestSource::Open(files, params.manifest);
  if (!manifest.ok()) return texts;
  auto root = files.Resolve(fs::absolute(params.manifest).parent_path());
  if (!root.ok()) return texts;
  (void)manifest.value().ForEach([&](const ManifestItem& item) -> Status {
    Precheck pre = PrecheckItem(files, root.value(), item, params.max_bytes);
    if (!pre.rejection) texts.push_back(std::move(pre.text));
    return texts.size() < n ? Status() : Status(BadInput("enough", ""));
  });
  return texts;
}

DoctorCheck ModelCheck(const Params& params, const std::string& device) {
  DoctorCheck c;
  c.name = "model on " + device;
  auto sha = Sha256File(RealFileSystem(), params.stage.model);
  if (!sha.ok()) return {c.name, kFail, "model file not readable: " + params.stage.model.string(), true, {}};
  std::vector<std::string> texts = SampleInputs(params, static_cast<std::size_t>(params.batch_size));
  if (texts.empty()) {
    return {c.name,
            kCouldNotRun,
            "no input of the manifest passes the prechecks (" + params.manifest.string() + ")",
            true,
            {}};
  }
  StageRegistry registry;
  RegisterTorchStages(registry);
  StageConfig cfg;
  cfg.kind = params.stage.kind;
  cfg.model = params.stage.model;
  cfg.model_sha256 = sha.value();
  cfg.options = params.stage.options;
  cfg.threads = params.threads;
  cfg.seed = params.seed;
  cfg.generation = params.generation;
  if (params.stage.tokenizer) {
    if (Status st = LoadStageTokenizer(RealFileSystem(), *params.stage.tokenizer, cfg); !st.ok()) {
      return {c.name, kFail, "tokenizer: " + st.error().ToString(), true, {}};
    }
  }
  // The reference is the model in float32 on the CPU; the device runs it in the configured
  // dtype, or as saved without one, so a reduced precision is checked for what it changes, on
  // the pilot's own inputs.
  std::string dtype = "float32";
  if (cfg.options.is_object() && cfg.options.contains("dtype") && cfg.options["dtype"].is_string()) {
    dtype = cfg.options["dtype"].get<std::string>();
  }
  cfg.device = "cpu";
  StageConfig ref_cfg = cfg;
  if (!ref_cfg.options.is_object()) ref_cfg.options = nlohmann::json::object();
  ref_cfg.options["dtype"] = "float32";  // a .pt2 package keeps the dtype compiled in
  auto on_cpu = registry.Create(ref_cfg);
  std::string reference = "float32 on cpu";
  if (!on_cpu.ok() && !(cfg.options.is_object() && cfg.options.contains("dtype"))) {
    // A model exported in a reduced precision bakes it in (docs/ending.md, "Precision"), and
    // may not run converted: its reference is then the model as saved, on the CPU.
    ref_cfg.options.erase("dtype");
    auto as_saved = registry.Create(ref_cfg);
    if (as_saved.ok()) {
      on_cpu = std::move(as_saved);
      reference = "the model as saved on cpu (it does not run converted to float32)";
    }
  }
  cfg.device = device;
  auto on_device = registry.Create(cfg);
  if (on_device.ok()) {
    // A model saved in a reduced precision runs in it: checked with that precision's tolerance.
    const auto& details = on_device.value()->Describe().details;
    if (details.contains("held_dtype") && details["held_dtype"].is_string()) {
      const std::string held = details["held_dtype"].get<std::string>();
      if (held.find("bfloat16") != std::string::npos)
        dtype = "bfloat16";
      else if (held.find("float16") != std::string::npos)
        dtype = "float16";
    }
  }
  const double tolerance = dtype == "bfloat16"  ? kBfloat16Tolerance
                           : dtype == "float16" ? kFloat16Tolerance
                                                : kModelTolerance;
  if (dtype != "float32") c.name += " (" + dtype + ")";
  if (!on_cpu.ok()) {
    return {
        c.name,
        kFail,
        "the model does not load on cpu: " + on_cpu.error().what + " (" + params.stage.model.string() + ")",
        true,
        {}};
  }
  if (!on_device.ok()) {
    return {c.name,
            kFail,
            "the model does not load on " + device + (dtype != "float32" ? " in " + dtype : std::string()) +
                ": " + on_device.error().what + " (" + params.stage.model.string() + ")",
            true,
            {}};
  }
  std::vector<std::string_view> views(texts.begin(), texts.end());
  BatchOutput ref_batch = on_cpu.value()->Process(views);
  BatchOutput got_batch = on_device.value()->Process(views);
  for (const auto* b : {&ref_batch, &got_batch}) {
    if (!b->ok || b->items.size() != views.size()) {
      return {c.name,
              kFail,
              "the model failed on " + std::string(b == &ref_batch ? "cpu" : device) +
                  " for the pilot inputs: " + (b->ok ? std::string("wrong number of outputs") : b->error),
              true,
              {}};
    }
  }
  const auto& ref = ref_batch.items;
  const auto& got = got_batch.items;
  double max_diff = 0;
  std::size_t same_top = 0;
  for (std::size_t i = 0; i < views.size(); ++i) {
    if (!got[i].ok || !ref[i].ok) {
      return {c.name,
              kFail,
              "the model failed on " + device +
                  " for a pilot input: " + (got[i].ok ? ref[i].error : got[i].error),
              true,
              {}};
    }
    same_top += got[i].label == ref[i].label;  // embeddings: both empty
    const auto& a = ref[i].scores.empty() ? ref[i].vector : ref[i].scores;
    const auto& b = got[i].scores.empty() ? got[i].vector : got[i].scores;
    for (std::size_t k = 0; k < a.size() && k < b.size(); ++k) {
      max_diff = std::max(max_diff, static_cast<double>(std::fabs(b[k] - a[k])));
    }
  }
  c.data = {{"inputs", views.size()},
            {"max_abs_difference", max_diff},
            {"same_top_label", same_top},
            {"tolerance", tolerance},
            {"dtype", dtype},
            {"reference", reference},
            {"model_sha256", sha.value()}};
  bool pass = max_diff <= tolerance && same_top == views.size();
  c.status = pass ? kPass : kFail;
  c.detail =
      Fmt("%.0f pilot inputs: max |device - cpu| = %.2e", static_cast<double>(views.size()), max_diff) +
      ", same top label " + std::to_string(same_top) + "/" + std::to_string(views.size()) +
      Fmt(" (tolerance %.0e", tolerance) +
      (dtype != "float32" ? "; " + dtype + " against " + reference + ")" : ")");
  return c;
}

}  // namespace

ComputeCheckResult CheckCompute(const std::string& device, bool corrupt_reference) {
  ComputeCheckResult r;
  try {
    torch::NoGradGuard no_grad;
    auto gen = at::detail::createCPUGenerator(20261129);
    auto a = at::randn({256, 256}, gen, torch::kFloat64);
    auto b = at::randn({256, 256}, gen, torch::kFloat64);
    auto v = at::rand({1 << 20}, gen, torch::kFloat64);
    auto ref_mm = a.matmul(b);
    auto ref_sum = v.sum();
    if (corrupt_reference) {
      ref_mm = ref_mm * 1.01;
      ref_sum = ref_sum * 1.01;
    }
    torch::Device dev(device);
    auto mm = a.to(torch::kFloat32).to(dev).matmul(b.to(torch::kFloat32).to(dev));
    auto sum = v.to(torch::kFloat32).to(dev).sum();
    if (dev.is_cuda()) torch::cuda::synchronize();
    mm = mm.to(torch::kCPU, torch::kFloat64);
    double s = sum.to(torch::kCPU, torch::kFloat64).item<double>();
    r.matmul_rel_error = ((mm - ref_mm).norm() / ref_mm.norm()).item<double>();
    r.sum_rel_error = std::fabs(s - ref_sum.item<double>()) / std::fabs(ref_sum.item<double>());
  } catch (const std::exception& e) {
    const auto* c10e = dynamic_cast<const c10::Error*>(&e);
    r.error = c10e ? c10e->what_without_backtrace() : e.what();
  }
  return r;
}

DoctorReport RunDoctor(const DoctorOptions& o) {
  DoctorReport rep;
  const bool gpu_asked =
      o.device.rfind("cuda", 0) == 0 || o.device.rfind("rocm", 0) == 0;  // cuda, cuda:N, ...
  auto runtime = TorchRuntimeInfo();

  DoctorCheck lib{"libtorch", kPass, "", true, runtime};
  lib.detail = std::string("libtorch ") + TORCH_VERSION + ", " + runtime["build_flavour"].get<std::string>() +
               " build; CUDA available: " + (runtime["cuda_available"].get<bool>() ? "yes" : "no") +
               "; ROCm available: " + (runtime["rocm_available"].get<bool>() ? "yes" : "no") + "; threads " +
               std::to_string(at::get_num_threads()) + " intra-op, " +
               std::to_string(at::get_num_interop_threads()) + " inter-op";
  rep.checks.push_back(lib);
  auto host = HostInfo(RealFileSystem());
  rep.checks.push_back({"host", kPass,
                        host["os"].get<std::string>() + ", " + host["cpu_model"].get<std::string>() + ", " +
                            std::to_string(host["cpu_count"].get<long>()) + " CPUs, " +
                            std::to_string(static_cast<long>(host["memory_total_mb"].get<double>())) + " MB",
                        true, host});

  const auto& gpus = runtime["gpus"];
  DoctorCheck devs{"gpus", kPass, "", gpu_asked, gpus};
  if (gpus.empty()) {
    devs.status = kCouldNotRun;
    devs.detail = std::string("no GPU visible to this libtorch (") +
                  runtime["build_flavour"].get<std::string>() + " build, " +
                  std::to_string(runtime["gpu_count"].get<int>()) + " device(s))";
  } else {
    for (const auto& g : gpus) {
      devs.detail += (devs.detail.empty() ? "" : "; ") + g.value("name", "") + ", " +
                     Fmt("%.0f MB total, %.0f MB free", g.value("total_memory_mb", 0.0),
                         g.value("free_memory_mb", 0.0)) +
                     (g.contains("compute_capability") ? ", sm " + g.value("compute_capability", "") : "") +
                     (g.contains("gcn_arch") ? ", " + g.value("gcn_arch", "") : "");
    }
  }
  rep.checks.push_back(devs);

  // The devices to check: the one asked for (every GPU for cuda/rocm).
  std::vector<std::string> devices;
  auto resolved = ResolveDevice(o.device);
  if (!resolved.ok()) {
    rep.checks.push_back({"compute on " + o.device, kCouldNotRun, resolved.error().what, true, {}});
    if (o.params)
      rep.checks.push_back({"model on " + o.device, kCouldNotRun, resolved.error().what, true, {}});
  } else if (resolved.value() == "cpu") {
    devices.push_back("cpu");
  } else {
    for (const auto& g : gpus) devices.push_back("cuda:" + std::to_string(g.value("index", 0)));
    if (devices.empty()) devices.push_back("cuda:0");
  }
  for (const auto& d : devices) {
    ComputeCheckResult cr = CheckCompute(d, o.corrupt_reference);
    DoctorCheck c{"compute on " + d, kPass, "", true, {}};
    if (!cr.error.empty()) {
      c.status = kFail;
      c.detail = "the device failed to compute: " + cr.error;
    } else {
      bool pass = cr.matmul_rel_error <= kComputeTolerance && cr.sum_rel_error <= kComputeTolerance;
      c.status = pass ? kPass : kFail;
      c.detail = Fmt("256x256 matmul relative error %.2e, sum of 2^20 relative error %.2e",
                     cr.matmul_rel_error, cr.sum_rel_error) +
                 Fmt(" against a float64 CPU reference (tolerance %.0e)", kComputeTolerance);
      c.data = {{"matmul_rel_error", cr.matmul_rel_error},
                {"sum_rel_error", cr.sum_rel_error},
                {"tolerance", kComputeTolerance}};
    }
    rep.checks.push_back(c);
    if (o.params) rep.checks.push_back(ModelCheck(*o.params, d));
  }
  if (!o.params) {
    rep.checks.push_back(
        {"model", kCouldNotRun, "no parameter file: give --params to check the model", false, {}});
  }

  // Disk under the runs directory, the one `run` would use.
  if (!o.runs_dir_refused.empty()) {
    rep.checks.push_back(
        {"disk",
         kFail,
         "`pilot run` would refuse this runs folder: " + o.runs_dir_refused,
         true,
         {{"runs_dir", o.runs_dir.string()}, {"writable", false}, {"refused", o.runs_dir_refused}}});
  } else {
    std::error_code ec;
    const fs::path runs_abs = fs::absolute(o.runs_dir, ec);
    fs::path probe = ec ? fs::path() : runs_abs;
    while (!probe.empty() && probe != probe.parent_path() && !fs::exists(probe, ec))
      probe = probe.parent_path();
    double free_mb = FreeDiskMegabytes(RealFileSystem(), o.runs_dir);
    // Writable as `run` will find it: a folder made there and removed again (a permission bit
    // says nothing of a read-only mount, and root passes every access() check).
    bool writable = false;
    if (!probe.empty()) {
      const fs::path trial = probe / (".pilot-doctor-" + std::to_string(::getpid()));
      writable = ::mkdir(trial.c_str(), 0700) == 0;
      if (writable) ::rmdir(trial.c_str());
    }
    DoctorCheck disk{"disk",
                     writable ? kPass : kFail,
                     "",
                     true,
                     {{"runs_dir", runs_abs.string()}, {"free_mb", free_mb}, {"writable", writable}}};
    disk.detail = Fmt("%.0f MB free under ", free_mb) + runs_abs.string() +
                  (writable ? ", writable" : ", NOT writable (" + probe.string() + ")");
    rep.checks.push_back(disk);
  }

  if (o.params && !o.params->requires_.empty()) {
    Received got = ReceivedEnvironment(o.device, o.runs_dir);
    auto unmet = UnmetRequirements(o.params->requires_, got);
    DoctorCheck req{
        "requires", unmet.empty() ? kPass : kFail, "", true, {{"received", got.ToJson()}, {"unmet", unmet}}};
    for (const auto& u : unmet) req.detail += (req.detail.empty() ? "" : "; ") + u;
    if (unmet.empty()) req.detail = "every requirement of the parameters is met";
    rep.checks.push_back(req);
  }
  return rep;
}

}  // namespace pilot

#include "pilot/plan.h"

#include <algorithm>

#include "pilot/destination.h"
#include "pilot/folder_kind.h"
#include "pilot/fs.h"
#include "pilot/hash.h"
#include "pilot/json_util.h"
#include "pilot/limits.h"
#include "pilot/manifest.h"
#include "pilot/paths.h"

namespace pilot {

namespace fs = std::filesystem;

Result<RunPlan> BuildRunPlan(FileSystem& fsys, const RunRequest& o) {
  // The runs folder resolved once (paths.h), outside every pilot folder.
  auto runs_dir = ResolveDestination(fsys, o.runs_dir, "--runs-dir", Destination::kFolder);
  if (!runs_dir.ok()) return runs_dir.error();
  if (!o.run_id.empty() && !IsValidRunId(o.run_id)) {
    return BadInput("invalid run id '" + ValueForMessage(o.run_id, 130) + "'", "--run-id",
                    "use 1-128 characters of [A-Za-z0-9._-], not starting with '.'");
  }
  RunPlan plan;
  std::error_code ec;
  plan.params_file = fs::absolute(o.params_file, ec);
  if (ec)
    return BadInput("cannot resolve the parameter file's path: " + ec.message(),
                    "--params " + o.params_file.string());
  auto params_bytes = ReadCapped(fsys, o.params_file, limits::kParamsBytes, "parameter file");
  if (!params_bytes.ok()) return params_bytes.error();
  plan.params_bytes = std::move(params_bytes).value();
  auto params = ParseParams(plan.params_bytes, plan.params_file.parent_path(), o.params_file.string());
  if (!params.ok()) return params.error();
  plan.params = std::move(params).value();
  const Params asked = plan.params;
  if (o.device) {
    if (!IsKnownDevice(*o.device)) {
      return BadInput("unknown device '" + ValueForMessage(*o.device) + "'", "--device",
                      "use auto, cpu, cuda or rocm");
    }
    plan.params.device = *o.device;
  }
  if (o.manifest) {
    plan.params.manifest = fs::absolute(*o.manifest, ec);
    if (ec) return BadInput("cannot resolve the manifest's path: " + ec.message(), o.manifest->string());
  }

  // Validated and hashed in one read: the run is bound to exactly the bytes validated.
  auto manifest = ManifestSource::Open(fsys, plan.params.manifest);
  if (!manifest.ok()) return manifest.error();
  plan.manifest = std::move(manifest).value();
  auto root = fsys.Resolve(fs::absolute(plan.params.manifest, ec).parent_path());
  if (!root.ok())
    return BadInput("cannot resolve the manifest's folder: " + root.error().what,
                    plan.params.manifest.string());
  plan.inputs_root = root.value();
  // Pinned: every input is opened beneath this folder as it is now (FileSystem::OpenBeneath).
  if (Status st = fsys.Anchor(plan.inputs_root); !st.ok()) {
    return BadInput("cannot open the manifest's folder: " + st.error().what, plan.params.manifest.string());
  }

  const fs::path& model = plan.params.stage.model;
  auto model_stat = fsys.Stat(model);
  if (!model_stat.ok() || !model_stat.value().regular) {
    return BadInput("model file not found, or not a regular file", model.string(),
                    "check 'stage.model' in the parameters");
  }
  auto digest = Sha256File(fsys, model);
  if (!digest.ok()) return digest.error();
  plan.model_sha256 = digest.value();
  if (plan.params.stage.model_sha256 && *plan.params.stage.model_sha256 != plan.model_sha256) {
    return BadInput(
        "model sha256 is " + plan.model_sha256 + " but the parameters pin " + *plan.params.stage.model_sha256,
        model.string(), "restore the pinned model, or update stage.model_sha256 if the change is intended");
  }
  // The batch plan: the option's sweep folder, else the parameters'; verified, and bound to
  // this model (a plan measured on another model says nothing about this one).
  std::optional<fs::path> plan_dir = o.batch_plan ? o.batch_plan : plan.params.batch_plan;
  if (plan_dir && o.use_batch_plan) {
    auto sweep_dir = ResolveGivenFolder(fsys, *plan_dir, "a finished sweep folder");
    if (!sweep_dir.ok()) {
      Error e = sweep_dir.error();
      e.where = (o.batch_plan ? "--batch-plan " : "batch_plan ") + e.where;
      return e;
    }
    auto batch_plan = BatchPlanFromFolder(fsys, sweep_dir.value());
    if (!batch_plan.ok()) {
      Error e = batch_plan.error();
      e.where = (o.batch_plan ? "--batch-plan " : "batch_plan ") + e.where;
      return e;
    }
    if (batch_plan.value().model_sha256 != plan.model_sha256) {
      return BadInput("the batch plan was measured on model sha256 " + batch_plan.value().model_sha256 +
                          ", this run uses " + plan.model_sha256,
                      plan_dir->string(), "sweep this model first: pilot sweep --params ...");
    }
    plan.batch_plan = std::move(batch_plan).value();
  }
  plan.runs_dir = runs_dir.value();
  plan.run_id = o.run_id.empty() && o.shard ? ShardRunId(*o.shard) : o.run_id;
  plan.shard = o.shard;
  plan.command_line = o.command_line;
  // A runs folder handed down as a descriptor (a worker of run --workers: /proc/self/fd/N) is
  // recorded by the folder's path: the descriptor means nothing once the process is gone.
  const bool handed_down = o.runs_dir.string().rfind("/proc/self/fd/", 0) == 0;
  if (handed_down) {
    for (std::size_t i = 0; i + 1 < plan.command_line.size(); ++i) {
      if (plan.command_line[i] == "--runs-dir" && plan.command_line[i + 1] == o.runs_dir.string()) {
        plan.command_line[i + 1] = plan.runs_dir.string();
      }
    }
  }
  // What was asked, beside the plan's effective values (run.json "requested" and "plan").
  plan.requested = {
      {"params", o.params_file.string()},
      {"manifest", o.manifest ? nlohmann::ordered_json(o.manifest->string()) : nlohmann::ordered_json()},
      {"manifest_in_params", asked.manifest.string()},
      {"device", o.device ? *o.device : asked.device},
      {"device_in_params", asked.device},
      {"batch_size", asked.batch_size},
      {"batch_plan", plan_dir ? nlohmann::ordered_json(plan_dir->string()) : nlohmann::ordered_json()},
      {"threads", asked.threads},
      {"run_id", o.run_id.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(o.run_id)},
      {"runs_dir", handed_down ? plan.runs_dir.string() : o.runs_dir.string()}};
  if (o.shard) plan.requested["shard"] = ShardText(*o.shard);
  return plan;
}

Status CheckStageFitsParams(const StageDescription& stage, const Params& params) {
  PILOT_TRY(CheckStageDeclaresOutput(stage));
  if (params.vectors_dtype != "float32" && !stage.output->vectors) {
    return BadInput("'vectors_dtype' applies only to a stage with vectors; stage kind '" + stage.kind +
                        "' produces " + stage.output->name + "s",
                    "vectors_dtype", "remove vectors_dtype from the parameters");
  }
  if (stage.output->generates && !params.generation) {
    return BadInput("'generation' is required: stage kind '" + stage.kind + "' generates text",
                    kGenerationParamsKey, "add generation.max_new_tokens (docs/generation.md, 'Settings')");
  }
  if (!stage.output->generates && params.generation) {
    return BadInput("'generation' applies only to a stage that generates; stage kind '" + stage.kind +
                        "' produces " + stage.output->name + "s",
                    kGenerationParamsKey, "remove generation from the parameters");
  }
  if (!stage.output->labels) {
    if (!params.allowed_categories.empty()) {
      return BadInput("'allowed_categories' applies only to a stage that classifies; stage kind '" +
                          stage.kind + "' produces " + stage.output->name + "s",
                      "allowed_categories", "remove allowed_categories from the parameters");
    }
    return {};
  }
  if (params.allowed_categories.empty()) {
    return BadInput("'allowed_categories' is required: stage kind '" + stage.kind + "' classifies",
                    "allowed_categories", "list the categories to accept, from the model's labels");
  }
  for (const auto& c : params.allowed_categories) {
    if (std::find(stage.labels.begin(), stage.labels.end(), c) == stage.labels.end()) {
      std::string all;
      for (const auto& l : stage.labels) all += (all.empty() ? "" : " ") + l;
      return BadInput("allowed category '" + KeyForMessage(c) + "' is not a label of the model",
                      "allowed_categories", "the model's labels are: " + all);
    }
  }
  return {};
}

}  // namespace pilot

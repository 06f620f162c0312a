// data/report.json and data/metrics.jsonl of an adaptation folder, built from what the folder
// records (adapt_records.h): the adaptation writes them with these functions, and verify
// builds them again from the journal, the accounting and the parameters' copy and compares
// the bytes.
#include <algorithm>

#include "pilot/adapt/adapt_records.h"
#include "pilot/folder_files.h"
#include "pilot/json_util.h"

namespace pilot {

namespace {

using ojson = nlohmann::ordered_json;

ojson Training(const AdaptReportInput& in) {
  const AdaptJournalHeader& header = in.header;
  const AdaptParams& params = in.params;
  ojson t;
  t["optimiser"] = params.optimiser;
  t["learning_rate"] = params.learning_rate;
  t["momentum"] = params.momentum;
  t["weight_decay"] = params.weight_decay;
  t["batch_size"] = params.batch_size;
  t["steps"] = header.total_steps;
  if (params.epochs) t["epochs"] = *params.epochs;
  t["steps_per_epoch"] = header.steps_per_epoch;
  t["seed"] = header.seed;
  t["threads"] = header.threads;
  t["device"] = header.device;
  t["dtype"] = header.dtype;
  t["trainable"] = in.facts.trainable;
  t["trainable_values"] = in.facts.trainable_values;
  t["seconds"] = in.facts.seconds;
  t["steps_per_second"] =
      in.facts.seconds > 0 ? static_cast<double>(header.total_steps) / in.facts.seconds : 0.0;
  t["sessions"] = in.state.sessions;
  t["libtorch"] = in.facts.libtorch;
  return t;
}

ojson Checkpoints(const AdaptReportInput& in, const AdaptMetrics& metrics) {
  const AdaptJournalState& state = in.state;
  ojson kept = ojson::array();
  for (const auto* c : KeptCheckpoints(state)) kept.push_back(c->file);
  const AdaptCheckpointRecord* best = BestCheckpoint(state);
  return {
      {"every", in.params.checkpoint_every},
      {"written", state.checkpoints.size()},
      {"kept", kept},
      {"pruned", state.pruned.size()},
      {"best", best ? ojson(best->file) : ojson()},
      {"best_step", best ? ojson(best->step) : ojson()},
      {"mean_write_ms", state.checkpoints.empty() ? 0.0 : metrics.write_ms_sum / state.checkpoints.size()},
      {"max_write_ms", metrics.write_ms_max},
      {"bytes", state.checkpoints.empty() ? 0 : state.checkpoints.back().bytes}};
}

// The verdict against the parameters' acceptance criteria.
void Acceptance(const AdaptAcceptance& acceptance, double base_acc, double final_acc, ojson& r) {
  ojson criteria = ojson::array();
  bool met = true;
  auto criterion = [&](const char* name, double threshold, double value) {
    const bool ok = value + 1e-12 >= threshold;
    met = met && ok;
    criteria.push_back({{"name", name}, {"threshold", threshold}, {"value", value}, {"met", ok}});
  };
  if (acceptance.min_eval_accuracy) criterion("min_eval_accuracy", *acceptance.min_eval_accuracy, final_acc);
  if (acceptance.min_gain) criterion("min_gain", *acceptance.min_gain, final_acc - base_acc);
  r["acceptance"] = {{"criteria", criteria}, {"met", met}};
  r["verdict"] = acceptance.empty() ? "no_criteria" : met ? "accepted" : "acceptance_unmet";
}

}  // namespace

AdaptMetrics BuildAdaptMetrics(const AdaptJournalState& state, double base_accuracy) {
  AdaptMetrics m;
  m.text = JsonLine({{"step", 0}, {"eval_accuracy", base_accuracy}, {"phase", "base"}}) + "\n";
  for (const auto& c : state.checkpoints) {
    for (double l : c.losses) {
      m.losses.push_back(l);
      m.text += JsonLine({{"step", m.losses.size()}, {"loss", l}}) + "\n";
    }
    m.text +=
        JsonLine({{"step", c.step}, {"eval_accuracy", c.eval.accuracy()}, {"checkpoint", c.file}}) + "\n";
    m.write_ms_sum += c.write_ms;
    m.write_ms_max = std::max(m.write_ms_max, c.write_ms);
  }
  return m;
}

nlohmann::ordered_json BuildAdaptReport(const AdaptReportInput& in) {
  const AdaptJournalHeader& header = in.header;
  const EvalSummary& base = in.state.baseline ? in.state.baseline->eval : EvalSummary{};
  const std::vector<double>& losses = in.metrics.losses;
  ojson r;
  r["run_id"] = header.run_id;
  r["pilot_version"] = in.facts.pilot_version;
  r["pilot_revision"] = in.facts.pilot_revision;
  r["state"] = "finished";
  r["base_model"] = {{"path", header.base_model_path}, {"sha256", header.base_model_sha256}};
  r["adapted_model"] = {{"path", kAdaptModel}, {"sha256", in.adapted_sha256}, {"bytes", in.adapted_bytes}};
  r["data"] = {{"train_manifest_sha256", header.train_manifest_sha256},
               {"eval_manifest_sha256", header.eval_manifest_sha256},
               {"train_accounting_sha256", header.train_accounting_sha256}};
  r["train"] = {{"items", header.train_items},
                {"used", header.train_used},
                {"rejected", header.train_items - header.train_used},
                {"reasons", in.train_reasons}};
  r["eval"] = {{"items", header.eval_items},
               {"evaluated", header.eval_used},
               {"rejected", header.eval_items - header.eval_used},
               {"reasons", in.eval_reasons}};
  r["training"] = Training(in);
  r["checkpoints"] = Checkpoints(in, in.metrics);
  const double base_acc = base.accuracy(), final_acc = in.adapted.accuracy();
  r["evaluation"] = {
      {"base", base.ToJson()}, {"adapted", in.adapted.ToJson()}, {"gain", final_acc - base_acc}};
  r["loss"] = {{"first", losses.empty() ? 0.0 : losses.front()},
               {"last", losses.empty() ? 0.0 : losses.back()},
               {"steps", losses.size()}};
  r["final_params_digest"] = in.final_params_digest;
  Acceptance(in.params.acceptance, base_acc, final_acc, r);
  return r;
}

AdaptReportFacts AdaptReportFactsFromJson(const nlohmann::json& report) {
  AdaptReportFacts f;
  f.pilot_version = StringAt(report, "pilot_version").value_or("");
  f.pilot_revision = StringAt(report, "pilot_revision").value_or("");
  const auto training = report.is_object() ? report.find("training") : report.end();
  if (!report.is_object() || training == report.end() || !training->is_object()) return f;
  f.libtorch = StringAt(*training, "libtorch").value_or("");
  f.seconds = NumberAt(*training, "seconds").value_or(0.0);
  f.trainable_values = UnsignedAt(*training, "trainable_values").value_or(0);
  const auto names = training->find("trainable");
  if (names != training->end() && names->is_array()) {
    for (const auto& n : *names) {
      if (n.is_string()) f.trainable.push_back(n.get<std::string>());
    }
  }
  return f;
}

}  // namespace pilot

// The calibration folder's record and names (fleet/calibrate.h), and what plan does with a
// calibrated device: a price row's `match` names it, and only then is the card the measured one.
#include "pilot/fleet/calibrate.h"

#include <gtest/gtest.h>

#include <string>

#include "pilot/memory_fs.h"
#include "pilot/verdict/rental_plan.h"

namespace pilot {
namespace {

const std::string kSha(64, 'a');

std::string Record(const std::string& edit_key = "", const std::string& edit_value = "") {
  nlohmann::json j = {
      {"folder_kind", "calibration"},
      {"format_version", 1},
      {"run_id", "cal"},
      {"state", "finished"},
      {"started_at", "2026-12-04T00:00:00Z"},
      {"finished_at", "2026-12-04T00:01:00Z"},
      {"device", "cuda:0"},
      {"device_class", "cuda"},
      {"device_name", "NVIDIA H100 80GB HBM3"},
      {"manifest_sha256", kSha},
      {"params_sha256", kSha},
      {"model_sha256", kSha},
      {"doctor", {{"file", "data/doctor.json"}, {"sha256", kSha}, {"ok", true}, {"exit_code", 0}}},
      {"pilot", {{"folder", "data/pilot"}, {"fingerprint", kSha}, {"exit_code", 0}}},
      {"sweep", {{"folder", "data/sweep"}, {"fingerprint", kSha}, {"exit_code", 1}}}};
  if (!edit_key.empty()) {
    const auto dot = edit_key.find('.');
    auto value = nlohmann::json::parse(edit_value);
    if (dot == std::string::npos) {
      j[edit_key] = value;
    } else {
      j[edit_key.substr(0, dot)][edit_key.substr(dot + 1)] = value;
    }
  }
  return j.dump();
}

Result<CalibrationRecord> Read(const std::string& text) {
  MemoryFileSystem fsys;
  EXPECT_TRUE(fsys.CreateDirectories("cal/data").ok());
  EXPECT_TRUE(fsys.WriteFileAtomic("cal/data/run.json", text).ok());
  return ReadCalibrationRecord(fsys, "cal");
}

TEST(Calibration, TheRecordReadsBackWithEveryFigure) {
  auto r = Read(Record());
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(r.value().device_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(r.value().device_class, "cuda");
  EXPECT_TRUE(r.value().doctor_ok);
  EXPECT_EQ(r.value().sweep_exit, 1);
  EXPECT_EQ(r.value().pilot_fingerprint, kSha);
}

TEST(Calibration, AHostileRecordIsRefusedNamingTheFileAndKey) {
  const std::pair<std::pair<std::string, std::string>, std::string> cases[] = {
      {{"folder_kind", R"("run")"}, "not a calibration folder"},
      {{"state", R"("running")"}, "'state' is not finished"},
      {{"device_class", R"("tpu")"}, "'device_class' is not cpu, cuda or rocm"},
      {{"device_name", R"("H100\u001b[2J")"}, "'device' or 'device_name' is not short printable text"},
      {{"device_name", "\"" + std::string(300, 'x') + "\""}, "'device' or 'device_name'"},
      {{"device_name", "5"}, "'device_name' is missing or not a string"},
      {{"manifest_sha256", R"("AB")"}, "a pin"},
      {{"pilot.folder", R"("../elsewhere")"}, "'pilot.folder' is not data/pilot"},
      {{"sweep.folder", R"("/tmp/sweep")"}, "'sweep.folder' is not data/sweep"},
      {{"doctor.file", R"("data/../doctor.json")"}, "'doctor.file' is not data/doctor.json"},
      {{"pilot.fingerprint", R"("x")"}, "'pilot' lacks its sha256 or fingerprint"},
      {{"sweep.exit_code", "300"}, "'sweep' lacks"},
      {{"sweep.exit_code", "-1"}, "'sweep' lacks"},
      {{"doctor.ok", R"("yes")"}, "'doctor.ok' is not a boolean"},
      {{"pilot", "[]"}, "'pilot' is not an object"},
  };
  for (const auto& [edit, says] : cases) {
    auto r = Read(Record(edit.first, edit.second));
    ASSERT_FALSE(r.ok()) << edit.first;
    EXPECT_EQ(r.error().kind, ErrorKind::kBadInput);
    EXPECT_NE(r.error().what.find(says), std::string::npos) << edit.first << ": " << r.error().what;
    EXPECT_EQ(r.error().where, "cal/data/run.json");
  }
  for (const char* text : {"", "[]", "null", "{", R"({"folder_kind":"calibration"})"}) {
    auto r = Read(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.error().where, "cal/data/run.json") << text;
  }
}

TEST(Calibration, TheDoctorsDeviceNameIsTheGpuItRanOnOrTheCpusModel) {
  const auto doctor = nlohmann::json::parse(R"({"ok": true, "checks": [
      {"name": "host", "status": "pass", "data": {"cpu_model": "AMD EPYC 9654"}},
      {"name": "gpus", "status": "pass", "data": [{"index": 0, "name": "NVIDIA H100 80GB HBM3"},
                                                 {"index": 1, "name": "NVIDIA H200"}]}]})");
  EXPECT_EQ(DoctorDeviceName(doctor, "cpu"), "AMD EPYC 9654");
  EXPECT_EQ(DoctorDeviceName(doctor, "cuda"), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(DoctorDeviceName(doctor, "cuda:1"), "NVIDIA H200");
  EXPECT_EQ(DoctorDeviceName(doctor, "cuda:7"), "");
  EXPECT_EQ(DoctorDeviceName(doctor, "cuda:99999999999999999999"), "");
  EXPECT_EQ(DoctorDeviceName(nlohmann::json::parse(R"({"checks": 5})"), "cpu"), "");
  // A name with control characters is no name: it would reach a terminal.
  EXPECT_EQ(DoctorDeviceName(nlohmann::json::parse(
                                 R"({"checks": [{"name": "host", "data": {"cpu_model": "x\u001b[31m"}}]})"),
                             "cpu"),
            "");
}

TEST(Calibration, APriceRowsMatchNamesTheCalibratedCardAndNothingElse) {
  auto prices = ParsePrices(R"({"currency": "EUR", "cards": [
      {"name": "H100", "class": "cuda", "memory_gb": 80, "cards_per_lot": 1, "lot_price": {"3": 400}, "match": ["h100"]},
      {"name": "A100", "class": "cuda", "memory_gb": 80, "cards_per_lot": 1, "lot_price": {"3": 200}, "match": ["A100"]},
      {"name": "cpu", "class": "cpu", "memory_gb": 16, "cards_per_lot": 1, "lot_price": {"3": 30}, "stand_in": true,
       "match": ["H100"]}]})",
                            "prices.json");
  ASSERT_TRUE(prices.ok()) << prices.error().ToString();
  const auto& cards = prices.value().cards;
  EXPECT_TRUE(CardMatches(cards[0], "NVIDIA H100 80GB HBM3"));  // ignoring case
  EXPECT_FALSE(CardMatches(cards[1], "NVIDIA H100 80GB HBM3"));
  EXPECT_FALSE(CardMatches(cards[0], ""));
  EXPECT_TRUE(cards[2].stand_in);
  PlanRequest q;
  q.basis.folder_kind = "calibration";
  q.basis.device = "cuda:0";
  q.basis.device_class = DeviceClass::kCuda;
  q.basis.device_name = "NVIDIA H100 80GB HBM3";
  q.basis.items = 12;
  q.basis.items_per_s_per_card = 100;
  q.basis.peak_memory_mb = 1000;
  q.basis.memory_basis = "device";
  q.corpus.items = 1000;
  q.prices = prices.value();
  q.assume_scaling = 1;  // the CPU row is of another class
  auto plan = BuildRentalPlan(q);
  ASSERT_TRUE(plan.ok()) << plan.error().ToString();
  EXPECT_TRUE(plan.value().cards[0].measured_card);
  EXPECT_NE(plan.value().cards[0].note.find("measured on this card (NVIDIA H100 80GB HBM3)"),
            std::string::npos);
  EXPECT_FALSE(plan.value().cards[1].measured_card);  // same class, another card
  EXPECT_FALSE(plan.value().cards[2].measured_card);  // its match names it, but it is a CPU
  bool stand_in_warned = false;
  for (const auto& w : plan.value().warnings)
    stand_in_warned |= w.find("cpu is a STAND-IN row") != std::string::npos;
  EXPECT_TRUE(stand_in_warned);
  const auto doc = RentalPlanToJson(plan.value());
  EXPECT_EQ(doc["basis"]["device_name"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(doc["cards"][0]["measured_card"], true);
  EXPECT_EQ(doc["cards"][2]["stand_in"], true);

  // Bad match lists and stand-in flags are refused naming the key.
  for (const auto& [card, key] : std::vector<std::pair<std::string, std::string>>{
           {R"("match": [])", "cards[0].match"},
           {R"("match": "H100")", "cards[0].match"},
           {R"("match": ["a","b","c","d","e","f","g","h","i"])", "cards[0].match"},
           {R"("match": [""])", "cards[0].match[0]"},
           {R"("match": ["H1\u0000"])", "cards[0].match[0]"},
           {R"("stand_in": "yes")", "cards[0].stand_in"},
       }) {
    auto bad = ParsePrices(R"({"currency": "EUR", "cards": [{"name": "x", "class": "cuda", "memory_gb": 8,
                              "cards_per_lot": 1, "lot_price": {"3": 1}, )" +
                               card + "}]}",
                           "prices.json");
    ASSERT_FALSE(bad.ok()) << card;
    EXPECT_NE(bad.error().where.find(key), std::string::npos) << card << ": " << bad.error().where;
  }
}

}  // namespace
}  // namespace pilot

// `pilot plan`: what renting cards for the full corpus would take, projected from a pilot's
// measurement. For each card type of a user's price file, each rental period (3, 7, 30 days)
// and each lot count (1-10): whether the model fits one card, the compute time with one
// worker (one shard) per card, whether the period covers it plus an allowance for install,
// checks and export, and the cost = lot price x lots (a lot of several cards, a B200 lot of
// two, is priced once). Every number carries its basis; a measurement of another device
// class than the card is refused unless the user states a scaling factor.
//
// Everything read here is untrusted: the price file, the folder's report, run.json and
// sweep.json are size- and depth-capped and type-checked; a wrong type is a bad-input error
// naming the file and key. Values only; no shared state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pilot/fs.h"
#include "pilot/status.h"
#include "pilot/tokenizer.h"

namespace pilot {

// The periods a card can be rented for, and the lot counts planned.
inline constexpr int kRentalPeriodsDays[] = {3, 7, 30};
inline constexpr int kMaxLots = 10;
// Caps on a price file (far above a real one).
inline constexpr std::uint64_t kPricesBytes = 1ull << 20;
inline constexpr std::size_t kMaxCardTypes = 256;
inline constexpr int kMaxCardsPerLot = 16;
inline constexpr std::size_t kMaxCardNameChars = 64;
inline constexpr std::size_t kMaxPriceNoteChars = 2000;
// Defaults of the command (documented in docs/ending.md).
inline constexpr double kDefaultAllowanceHours = 8;  // install, environment checks, export
inline constexpr double kDefaultHeadroom = 0.10;     // the share of a card kept free (as sweep's)
// Needed hours closer than this are not told apart when the fastest plan is picked: among the
// plans within it of the quickest, the cheapest is the fastest. A default allowance of 8 h
// would otherwise let a thousandth of an hour of compute pick twenty cards over one.
inline constexpr double kDefaultTimeResolutionHours = 0.1;
inline constexpr double kMaxTimeResolutionHours = 24;
// The rate results are copied off the rented machine at, in MB/s (10^6 bytes a second), unless
// the user states theirs (--copy-off-mb-per-s): about a 1 Gbit/s link's worth.
inline constexpr double kDefaultCopyOffMBPerS = 100;
inline constexpr double kMaxCopyOffMBPerS = 1e6;
// At most this many inputs are sized (stat) for a length mix; past it the mix is a sample.
inline constexpr std::size_t kMaxSizedInputs = 100000;
// At most this many inputs are tokenized for a projection by tokens: every k-th item of a
// larger manifest (k = ceil(items / this)), spread over the whole of it.
inline constexpr std::size_t kMaxTokenizedInputs = 10000;
// An input is read for its tokens up to this many bytes (or max_bytes, if lower): a longer one
// counts max_length tokens unread (16 MiB of text is over any max_length, 2^20 at most).
inline constexpr std::uint64_t kMaxPlanReadBytes = 16u << 20;

enum class DeviceClass { kCpu, kCuda, kRocm };
const char* DeviceClassName(DeviceClass c);
std::optional<DeviceClass> ParseDeviceClass(std::string_view name);

// --- the price file ----------------------------------------------------------------------
struct CardType {
  std::string name;
  DeviceClass device_class = DeviceClass::kCuda;
  double memory_gb = 0;
  int cards_per_lot = 1;
  std::map<int, double> lot_price;  // period (days) -> price of one lot; a missing period is not offered
  // The device names this card is (doctor's: "NVIDIA H100 80GB HBM3"): a name containing one of
  // these, case-insensitively, is this card. A calibration measured on it measured this card.
  std::vector<std::string> match;
  bool stand_in = false;  // the price file says this row stands in for a card (a CPU, in a test)
};
inline constexpr std::size_t kMaxMatches = 8;

struct PriceList {
  bool example = false;  // the file says its prices are made up
  std::string currency;
  std::string note;
  std::vector<CardType> cards;
  std::string file;    // as given
  std::string sha256;  // of the bytes parsed
};

// Parses a price file (format in docs/ending.md and config/prices.example.json). Strict:
// unknown keys, periods other than 3/7/30, prices that are not finite and > 0, cards per lot
// outside 1..16, memory not > 0, names that are not short printable text, duplicate names
// and more than kMaxCardTypes cards are refused (bad input), naming `source` and the key.
Result<PriceList> ParsePrices(std::string_view text, const std::string& source);
// Reads (regular file, capped at kPricesBytes) and parses; fills file and sha256.
Result<PriceList> LoadPrices(FileSystem& fs, const std::filesystem::path& file);

// --- the measurement ---------------------------------------------------------------------
// What a set of inputs weighs: the item count and, where the files could be sized, their bytes.
struct LengthMix {
  std::size_t items = 0;
  std::size_t sized = 0;    // inputs found and sized (at most kMaxSizedInputs)
  std::size_t missing = 0;  // inputs not found (or outside the manifest's folder)
  std::uint64_t bytes = 0;  // of the sized ones
  bool known() const { return sized > 0; }
  double mean_bytes() const { return sized ? static_cast<double>(bytes) / static_cast<double>(sized) : 0; }
};

struct Measurement {
  std::string folder;
  std::string folder_kind;  // run | shard | merged | sweep
  std::string device;       // as recorded ("cpu", "cuda:0", ...)
  DeviceClass device_class = DeviceClass::kCpu;
  std::size_t items = 0;            // the items measured
  double items_per_s_per_card = 0;  // one worker (one process on one device)
  double peak_memory_mb = 0;
  std::string memory_basis;      // "device" (the GPU allocator's peak) | "rss" (resident memory)
  std::string peak_note;         // where the peak comes from, when not the folder's own figure
  std::string throughput_basis;  // how items_per_s_per_card was derived, for a person
  std::string fingerprint;       // of the folder, as verified
  std::string manifest_sha256;   // the manifest it measured, as its run.json records (empty if not)
  // A calibration's: the device name its doctor gave (a price file's `match` names cards by it).
  std::string device_name;
  std::string pilot_fingerprint;  // a calibration's: its pilot run folder's (a copy of it is decided on)
  LengthMix mix;                  // of the inputs the measurement ran on (unknown when absent)
  // Those inputs: the folder's manifest copy and the root it recorded (empty when absent).
  std::filesystem::path inputs_manifest, inputs_root;
  // A tokenized run's report.json tokens.total (every item's tokens, none capped): what the
  // pilot's inputs, tokenized again for a projection, must give.
  std::optional<std::uint64_t> recorded_tokens;
  // A generator's: the completion tokens its report counts, per manifest item.
  std::optional<double> completion_tokens_per_item;
  // What the folder's outputs weigh as stored, in the dtype they are stored in: the files that
  // grow with the items (kOutputFiles; a merged folder's shard journals too), over the `items`
  // that wrote them. Unknown for a sweep, which keeps no outputs.
  std::optional<std::uint64_t> output_bytes;
  std::vector<std::string> output_files;  // the ones present, relative to the folder
};

// The files of a run that grow with its items: every item's result and journal line, and an
// embedding run's vectors. A plan projects their bytes per item over the corpus.
inline constexpr const char* kOutputFiles[] = {"data/results.jsonl", "data/journal.jsonl", "data/vectors.npy",
                                               "data/vectors.sidecar"};
// Sets m.output_bytes and m.output_files from the folder's files (a run, shard or merged
// folder; a merged folder adds data/shards/*/journal.jsonl). Links and non-regular files are
// not counted. Leaves them unset for a sweep.
Status MeasureOutputs(FileSystem& fs, const std::filesystem::path& dir, Measurement& m);

// Verifies the folder in full (a folder that fails is refused, bad input, with its first
// findings) and reads its figures: a run or shard folder's report.json and run.json, a merged
// folder's report (the shards' rates averaged per worker) and shards' run.json, a sweep's
// sweep.json (each group's recommended size, weighted by the group's item count).
// With `expect`, the folder must have that fingerprint (a re-hashed forgery passes every other
// check).
Result<Measurement> ReadMeasurement(FileSystem& fs, const std::filesystem::path& dir,
                                    const std::optional<std::string>& expect = std::nullopt);
// The same figures from already-read documents (no verification, no file access but the
// inputs' sizes): what ReadMeasurement does after verify; public for the unit tests.
// `docs` maps a path relative to the folder ("data/report.json") to its parsed document.
Result<Measurement> MeasurementFromDocuments(const std::string& folder, const std::string& folder_kind,
                                             const std::map<std::string, nlohmann::json>& docs);

// The corpus to plan for: --corpus-items N, or a manifest (its item count and, where its
// inputs are present, their bytes).
struct Corpus {
  std::size_t items = 0;
  std::string manifest;  // empty with --corpus-items
  LengthMix mix;
};
Result<Corpus> ReadCorpusManifest(FileSystem& fs, const std::filesystem::path& manifest);
// The mix of a manifest's inputs, confined to `root` (as a run reads them): sizes the first
// kMaxSizedInputs. Never fails: an unreadable manifest or root gives an unknown mix.
LengthMix MeasureInputs(FileSystem& fs, const std::filesystem::path& manifest,
                        const std::filesystem::path& root);

// --- lengths in tokens ------------------------------------------------------------------
// The tokenizer a tokenized folder ran with, as its stage ran it: the folder's parameter
// copy's stage.tokenizer, its file resolved as the run resolved it (or given), checked
// against its sha256 pin.
struct PlanTokenizer {
  std::shared_ptr<const Tokenizer> tokenizer;
  TokenizerSettings settings;
  std::string file;    // as read
  std::string sha256;  // the pin, equal to the file's
  std::string truncation;
  std::uint64_t max_bytes = 0;  // the params' max_bytes: a longer input is rejected unread
};

// The folder's tokenizer. nullopt, with `why`, when its stage has no tokenizer or the file
// cannot be had (not found where the run found it, another sha256, not parsed): the plan then
// projects by items and says why. With `given` (--tokenizer FILE) any such failure is an error
// (bad input, naming the file), and so is a folder whose stage takes no tokenizer.
Result<std::optional<PlanTokenizer>> LoadFolderTokenizer(FileSystem& fs, const std::filesystem::path& dir,
                                                         const std::optional<std::filesystem::path>& given,
                                                         std::string& why);

// What a manifest's inputs weigh in tokens, as the stage would count them: each input read as
// a run reads it (confined to the root, at most max_bytes, UTF-8) and encoded; an item longer
// than max_length counts max_length (truncate cuts it there; reject refuses it, which this
// over-counts, on the safe side); an item the run would reject before the model (missing,
// outside the folder, over max_bytes, not the manifest's sha256, empty, not UTF-8, not
// encodable) counts 0; one within max_bytes but over kMaxPlanReadBytes counts max_length.
struct TokenMix {
  std::size_t items = 0;    // the manifest's
  std::size_t sampled = 0;  // items tokenized (all, or every stride-th)
  std::size_t stride = 1;
  std::size_t encoded = 0;  // of the sampled, the inputs that encoded
  std::size_t unread = 0;   // of the sampled, the inputs rejected before the model (0 tokens)
  std::size_t over_max_length = 0;
  std::size_t too_long_to_read = 0;  // of those, inputs over kMaxPlanReadBytes (not read)
  std::uint64_t tokens = 0;          // counted: each item capped at max_length
  std::uint64_t raw_tokens = 0;      // uncapped, as results' `tokens` and report.json's total
  bool known() const { return encoded + too_long_to_read > 0; }
  double mean_tokens() const {
    return sampled ? static_cast<double>(tokens) / static_cast<double>(sampled) : 0;
  }
};
// `progress(done, total)` is called every 1000 items tokenized, and at the end of a sample of
// 1000 or more (may be empty). Never fails: an unreadable
// manifest gives an unknown mix.
TokenMix MeasureTokens(FileSystem& fs, const std::filesystem::path& manifest,
                       const std::filesystem::path& root, const PlanTokenizer& tokenizer,
                       const std::function<void(std::size_t, std::size_t)>& progress = nullptr);

// A projection by tokens: the corpus' compute time is the item count's, times the corpus'
// mean tokens per item over the pilot's (`factor`).
struct TokenProjection {
  std::string tokenizer_file, sha256, truncation;
  std::size_t max_length = 0;
  TokenMix pilot, corpus;
  // A generator: an item's work is its prompt tokens plus its completion's; the corpus'
  // completions are taken to be as long as the pilot's (this mean, per manifest item).
  double completion_per_item = 0;
  double factor() const {
    return (corpus.mean_tokens() + completion_per_item) / (pilot.mean_tokens() + completion_per_item);
  }
  double corpus_mean_tokens() const { return corpus.mean_tokens() + completion_per_item; }
};

struct PlanRequest;
// Sets request.tokens for a tokenized folder (`from`, already read into request.basis): the
// pilot's inputs and the corpus manifest's (a sample past kMaxTokenizedInputs) tokenized with
// the run's own tokenizer, or `given`. Where that cannot be done (the stage takes no
// tokenizer, its file cannot be had, the corpus is an item count, no input could be read), it
// sets request.by_items_why instead and the plan projects by items. A `given` tokenizer that
// cannot be used is an error (bad input).
Status ProjectByTokens(FileSystem& fs, const std::filesystem::path& from,
                       const std::optional<std::filesystem::path>& given, PlanRequest& request,
                       const std::function<void(std::size_t, std::size_t)>& progress = nullptr);

// --- the plan ----------------------------------------------------------------------------
struct PlanRequest {
  Measurement basis;
  Corpus corpus;
  // Set: compute time scales by tokens (both mixes known); otherwise by items, and
  // `by_items_why` says why (empty for a folder whose stage takes no tokenizer).
  std::optional<TokenProjection> tokens;
  std::string by_items_why;
  PriceList prices;
  double allowance_hours = kDefaultAllowanceHours;
  std::optional<double> assume_scaling;  // multiplies the measured rate on cards of another class
  double headroom = kDefaultHeadroom;
  double time_resolution_hours = kDefaultTimeResolutionHours;  // 0: needed hours compared exactly
  double copy_off_mb_per_s = kDefaultCopyOffMBPerS;            // copying the outputs off the rented machine
};

// The corpus' outputs: the basis' bytes per item x the corpus' items, and the hours to copy
// them off at the stated rate (0 when the bytes are unknown: a warning says so).
struct OutputProjection {
  std::optional<double> bytes_per_item, corpus_bytes;
  double copy_off_hours = 0;
};
OutputProjection ProjectOutputs(const PlanRequest& request);

struct PlanRow {
  std::string card;
  int period_days = 0;
  int lots = 0;
  int cards = 0;
  std::string fit;         // yes | unknown (a card that does not fit has no rows)
  std::string rate_basis;  // measured | assumed
  double items_per_s_per_card = 0;
  double compute_hours = 0;   // corpus items x the projection's factor / (rate x cards) / 3600
  double copy_off_hours = 0;  // the corpus' outputs at the stated rate (the same for every row)
  double needed_hours = 0;    // compute + copy-off + allowance
  bool period_suffices = false;
  double cost = 0;  // lot price x lots
  // The row's cost over the corpus: per million items, and per million of the corpus' tokens
  // where the plan projects by tokens (the corpus' items x their mean tokens).
  double cost_per_million_items = 0;
  std::optional<double> cost_per_million_tokens;
  bool fits = false;
};

struct CardVerdict {
  std::string card;
  std::string device_class;
  std::string fit;  // yes | no | unknown
  std::string note;
  double usable_mb = 0;  // memory_gb x 1024 x (1 - headroom)
  // The measurement was made on this very card: a calibration whose device name the card's
  // `match` names (and of its class).
  bool measured_card = false;
  bool stand_in = false;
};
// Whether `card` names `device_name` (one of its `match` strings is in it, ignoring case).
bool CardMatches(const CardType& card, const std::string& device_name);

struct RentalPlan {
  PlanRequest request;
  std::vector<PlanRow> rows;  // card (price-file order), period, lots
  std::vector<CardVerdict> cards;
  OutputProjection output;
  std::optional<std::size_t> cheapest, fastest;  // indexes into rows
  std::vector<std::string> warnings;
  bool any_fits() const { return cheapest.has_value(); }
};

// The cheapest and the fastest of the rows that fit, among those `card` names (all rows when
// empty). Cheapest: the lowest cost, then fewer cards, then the shorter period. Fastest: of
// the rows that need at most the quickest's hours + time_resolution_hours, the cheapest, then
// fewer cards, then the shorter period, then fewer hours.
struct PlanPicks {
  std::optional<std::size_t> cheapest, fastest;
};
PlanPicks PickPlans(const RentalPlan& plan, const std::string& card = "");
// The rule PickPlans applies, in words (plan's output and the plan document state it).
std::string PickRule(double time_resolution_hours);

// The arithmetic. Refuses (bad input) a measurement of another device class than a card
// unless assume_scaling is given, naming the cards; a rate that is not finite and > 0; an
// allowance, headroom or scaling out of range; a corpus of 0 items.
Result<RentalPlan> BuildRentalPlan(const PlanRequest& request);

// The plan document `pilot plan --json`/`--out` writes and `pilot decide --plan` reads:
// {"kind": "pilot-plan", "format_version": 3, "basis", "corpus", "projection", "output",
// "allowance_hours", "headroom", "time_resolution_hours", "pick_rule", "prices", "plans", "cards",
// "cheapest", "fastest", "verdict", "warnings"}.
// Format 2 added "projection" ({"by": "tokens" | "items", "factor", ...}); a format 1 plan
// projects by items. Format 3 added each row's cost_per_million_items,
// cost_per_million_tokens and copy_off_hours (in its needed hours), the "output" projection
// and the fastest pick's time resolution; a format 1 or 2 plan's
// fastest is the row of the fewest needed hours, compared exactly.
inline constexpr const char* kPlanDocumentKind = "pilot-plan";
inline constexpr int kPlanFormatVersion = 3;
nlohmann::ordered_json RentalPlanToJson(const RentalPlan& plan);
nlohmann::ordered_json PlanRowToJson(const PlanRow& row);

}  // namespace pilot

// The generation output kind's library side (docs/generation.md): the parameters' `generation`,
// a completion's record and its refusals, the kind's judging, verify check, comparison and
// report figures, the generator contract's package metadata, and decoding (the ByteLevel
// decoder against tokenizers 0.23.3, the UTF-8 repair against Python's errors="replace").
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "pilot/credentials.h"
#include "pilot/model_contract.h"
#include "pilot/output_kind.h"
#include "pilot/params.h"
#include "pilot/reasons.h"
#include "pilot/report.h"
#include "pilot/results.h"
#include "pilot/tokenizer.h"
#include "pilot/utf8.h"

namespace pilot {
namespace {

std::string Params(const std::string& generation) {
  return R"({"manifest": "m.json", "stage": {"kind": "torchscript-generator", "model": "g.pt"},
             "seed": 7, "generation": )" +
         generation + "}";
}

TEST(GenerationParams, AreReadWithTheirDefaultsAndRecordedInOrder) {
  auto p =
      ParseParams(Params(R"({"max_new_tokens": 16, "stop": ["\n\n", "END"], "stop_token_ids": [2, 50256]})"),
                  "/p", "g.json");
  ASSERT_TRUE(p.ok()) << p.error().ToString();
  ASSERT_TRUE(p.value().generation);
  const GenerationSettings& g = *p.value().generation;
  EXPECT_EQ(g.max_new_tokens, 16u);
  EXPECT_EQ(g.temperature, 0);
  EXPECT_EQ(g.top_k, 0u);
  EXPECT_EQ(g.top_p, 1);
  EXPECT_EQ(g.seed, 7u) << "the parameters' seed by default";
  EXPECT_EQ(g.stop, (std::vector<std::string>{"\n\n", "END"}));
  EXPECT_EQ(g.stop_token_ids, (std::vector<std::int64_t>{2, 50256}));
  auto j = GenerationToJson(g);
  EXPECT_EQ(
      j.dump(),
      R"({"max_new_tokens":16,"decoding":"greedy","temperature":0.0,"top_k":0,"top_p":1.0,"stop":["\n\n","END"],)"
      R"("stop_token_ids":[2,50256],"seed":7,"batching":"in-flight","ignore_eos":false})");
  auto sampled = ParseParams(Params(R"({"max_new_tokens": 4, "temperature": 0.7, "top_k": 40, "top_p": 0.9,
                                       "seed": 3, "batching": "static", "ignore_eos": true})"),
                             "/p", "g.json");
  ASSERT_TRUE(sampled.ok()) << sampled.error().ToString();
  EXPECT_EQ(GenerationToJson(*sampled.value().generation).dump(),
            R"({"max_new_tokens":4,"decoding":"sampling","temperature":0.7,"top_k":40,"top_p":0.9,"stop":[],)"
            R"("stop_token_ids":[],"seed":3,"batching":"static","ignore_eos":true})");
  auto without =
      ParseParams(R"({"manifest": "m.json", "stage": {"kind": "k", "model": "m.pt"}})", "/p", "g.json");
  ASSERT_TRUE(without.ok());
  EXPECT_FALSE(without.value().generation);
}

TEST(GenerationParams, BadSettingsAreRefusedNamingTheKey) {
  struct Case {
    const char* generation;
    const char* key;
    const char* says;
  };
  for (const Case& c : {
           Case{R"({})", "generation.max_new_tokens", "is required"},
           Case{R"({"max_new_tokens": 0})", "generation.max_new_tokens", ""},
           Case{R"({"max_new_tokens": 40000})", "generation.max_new_tokens", ""},
           Case{R"({"max_new_tokens": 1.5})", "generation.max_new_tokens", ""},
           Case{R"({"max_new_tokens": 8, "temperature": 101})", "generation.temperature", ""},
           Case{R"({"max_new_tokens": 8, "batching": "continuous"})", "generation.batching",
                "in-flight, static"},
           Case{R"({"max_new_tokens": 8, "ignore_eos": 1})", "generation.ignore_eos", "true or false"},
           Case{R"({"max_new_tokens": 8, "temperature": -1})", "generation.temperature", ""},
           Case{R"({"max_new_tokens": 8, "top_p": 0})", "generation.top_p", ""},
           Case{R"({"max_new_tokens": 8, "stop": "END"})", "generation.stop", "array"},
           Case{R"({"max_new_tokens": 8, "stop": [""]})", "generation.stop", "1 to 256 bytes"},
           Case{R"({"max_new_tokens": 8, "stop": [1]})", "generation.stop", ""},
           Case{R"({"max_new_tokens": 8, "stop_token_ids": [-1]})", "generation.stop_token_ids", ""},
           Case{R"({"max_new_tokens": 8, "stop_token_ids": [2147483648]})", "generation.stop_token_ids", ""},
           Case{R"({"max_new_tokens": 8, "stop_token_ids": "2"})", "generation.stop_token_ids", ""},
           Case{R"({"max_new_tokens": 8, "beams": 4})", "beams", ""},
           Case{R"([8])", "generation", ""},
       }) {
    auto p = ParseParams(Params(c.generation), "/p", "g.json");
    ASSERT_FALSE(p.ok()) << c.generation;
    EXPECT_EQ(p.error().kind, ErrorKind::kBadInput) << c.generation;
    const std::string all = p.error().ToString();
    EXPECT_NE(all.find(c.key), std::string::npos) << c.generation << ": " << all;
    EXPECT_NE(all.find(c.says), std::string::npos) << c.generation << ": " << all;
  }
  std::string many = R"({"max_new_tokens": 8, "stop": [)";
  for (int i = 0; i < 17; ++i) many += std::string(i ? "," : "") + "\"s" + std::to_string(i) + "\"";
  EXPECT_FALSE(ParseParams(Params(many + "]}"), "/p", "g.json").ok()) << "17 stop strings";
}

TEST(GenerationParams, TheTwoTokenSettingsAreNotCredentialsAtTheirPathAlone) {
  EXPECT_TRUE(ParseParams(Params(R"({"max_new_tokens": 4, "stop_token_ids": [1]})"), "/p", "g.json").ok());
  for (
      const std::string& doc : std::vector<std::string>{
          Params(R"({"max_new_tokens": 4, "api_token": "x"})"),
          Params(R"({"max_new_tokens": 4, "access_token_ids": [1]})"),
          R"({"manifest": "m.json", "stage": {"kind": "k", "model": "m.pt", "options": {"max_new_tokens": 4}}})",
          R"({"manifest": "m.json", "stage": {"kind": "k", "model": "m.pt"}, "stop_token_ids": [1]})"}) {
    auto p = ParseParams(doc, "/p", "g.json");
    ASSERT_FALSE(p.ok()) << doc;
    EXPECT_NE(p.error().what.find("credential"), std::string::npos) << p.error().what;
  }
  EXPECT_TRUE(KeyLooksLikeCredential("max_new_tokens")) << "anywhere else, a key naming tokens is refused";
}

Completion Good() {
  Completion c;
  c.text = "olleh";
  c.ids = {111, 108, 108, 101, 104, 256};
  c.finish_reason = "eos";
  c.ttft_ms = 4.5;
  c.tpot_ms = 0.25;
  c.prefill_ms = 1.5;
  c.decode_ms = 1.25;
  c.kv_cache_bytes = 4096;
  c.slot_steps = 7.5;
  c.near_tie_steps = {1, 3};
  return c;
}

ResultRecord Accepted(Completion c, std::uint64_t prompt_tokens = 6) {
  ResultRecord r;
  r.id = "p01.txt";
  r.accepted = true;
  r.completion = std::move(c);
  r.model = "sha256:" + std::string(64, 'a');
  r.latency_ms = 9;
  r.tokens = prompt_tokens;
  return r;
}

TEST(GenerationRecord, RoundTripsThroughItsJsonLine) {
  const ResultRecord r = Accepted(Good());
  const std::string line = ToJsonLine(r);
  EXPECT_EQ(line.rfind(R"({"id":"p01.txt","status":"accepted","completion":"olleh","completion_tokens":6,)"
                       R"("finish_reason":"eos","completion_ids":[111,108,108,101,104,256],"ttft_ms":4.5,)",
                       0),
            0u)
      << line;
  auto back = ParseResultRecord(line, "results.jsonl");
  ASSERT_TRUE(back.ok()) << back.error().ToString();
  ASSERT_TRUE(back.value().completion);
  EXPECT_EQ(back.value().completion->text, "olleh");
  EXPECT_EQ(back.value().completion->ids, r.completion->ids);
  EXPECT_EQ(back.value().completion->tpot_ms, 0.25);
  EXPECT_EQ(back.value().completion->kv_cache_bytes, 4096u);
  EXPECT_EQ(back.value().completion->slot_steps, r.completion->slot_steps);
  EXPECT_EQ(back.value().completion->near_tie_steps, r.completion->near_tie_steps);
  EXPECT_EQ(back.value().tokens, 6u);
  EXPECT_EQ(ToJsonLine(back.value()), line);
  EXPECT_FALSE(ScanResultRecord(line, false)) << "the fast path leaves a completion to the full parser";
  Completion one = Good();
  one.ids = {256};
  one.near_tie_steps.clear();
  one.text.clear();
  one.tpot_ms.reset();
  auto single = ParseResultRecord(ToJsonLine(Accepted(one)), "r");
  ASSERT_TRUE(single.ok()) << single.error().ToString();
  EXPECT_FALSE(single.value().completion->tpot_ms);
}

TEST(GenerationRecord, AMalformedCompletionIsRefusedNamingTheField) {
  const std::string line = ToJsonLine(Accepted(Good()));
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = line;
    const auto at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return s.replace(at, from.size(), to);
  };
  struct Case {
    std::string line;
    const char* says;
  };
  for (const Case& c : {
           Case{with(R"("completion_tokens":6)", R"("completion_tokens":5)"), "completion_tokens"},
           Case{with(R"("finish_reason":"eos")", R"("finish_reason":"done")"), "finish_reason"},
           Case{with(R"([111,)", R"([-1,)"), "completion_ids"},
           Case{with(R"([111,)", R"([2147483648,)"), "completion_ids"},
           Case{with(R"([111,)", R"(["o",)"), "completion_ids"},
           Case{with(R"("completion":"olleh")", R"("completion":5)"), "'completion'"},
           Case{with(R"("ttft_ms":4.5)", R"("ttft_ms":-1)"), "ttft_ms"},
           Case{with(R"("ttft_ms":4.5,)", ""), "ttft_ms"},
           Case{with(R"("kv_cache_bytes":4096)", R"("kv_cache_bytes":"big")"), "kv_cache_bytes"},
           Case{with(R"("completion_ids":[111,108,108,101,104,256])", R"("completion_ids":[])"),
                "completion_tokens"},
           Case{with(R"("slot_steps":7.5)", R"("slot_steps":-1)"), "slot_steps"},
           Case{with(R"("near_tie_steps":[1,3])", R"("near_tie_steps":[4,1])"), "near_tie_steps"},
           Case{with(R"("near_tie_steps":[1,3])", R"("near_tie_steps":[6])"), "near_tie_steps"},
           Case{with(R"("near_tie_steps":[1,3])", R"("near_tie_steps":"1")"), "near_tie_steps"},
       }) {
    auto r = ParseResultRecord(c.line, "results.jsonl");
    ASSERT_FALSE(r.ok()) << c.line;
    EXPECT_NE(r.error().ToString().find(c.says), std::string::npos) << r.error().ToString();
    EXPECT_NE(r.error().ToString().find("p01.txt"), std::string::npos) << "names the id";
  }
  Completion one = Good();
  one.ids = {256};
  one.near_tie_steps.clear();
  auto tpot = ParseResultRecord(ToJsonLine(Accepted(one)), "r");
  EXPECT_FALSE(tpot.ok()) << "tpot_ms beside a single token";
  Completion untimed = Good();
  untimed.tpot_ms.reset();
  EXPECT_FALSE(ParseResultRecord(ToJsonLine(Accepted(untimed)), "r").ok())
      << "two tokens or more without tpot_ms";
  Completion no_cache = Good();
  no_cache.kv_cache_bytes = 0;
  EXPECT_FALSE(ParseResultRecord(ToJsonLine(Accepted(no_cache)), "r").ok()) << "a batch without a cache";
}

OutputRules Rules() {
  OutputRules r;
  r.max_new_tokens = 8;
  r.vocab = 257;
  return r;
}

TEST(GenerationKind, JudgesACompletionAgainstTheRunsSettings) {
  const OutputKindSpec& g = GenerationOutput();
  EXPECT_TRUE(g.generates);
  EXPECT_FALSE(g.labels);
  EXPECT_FALSE(g.vectors);
  ItemOutput out;
  out.ok = true;
  out.completion = Good();
  ResultRecord r;
  EXPECT_FALSE(g.judge(out, Rules(), r));
  ASSERT_TRUE(r.completion);
  EXPECT_EQ(r.completion->text, "olleh");

  auto rejected = [&](Completion c) {
    ItemOutput o;
    o.ok = true;
    o.completion = std::move(c);
    ResultRecord unused;
    auto why = g.judge(o, Rules(), unused);
    EXPECT_TRUE(why);
    EXPECT_EQ(why ? why->reason : "", reason::kInvalidOutput);
    return why ? why->detail : std::string();
  };
  Completion c = Good();
  c.ids.assign(9, 97);
  EXPECT_NE(rejected(c).find("more than generation.max_new_tokens 8"), std::string::npos);
  c = Good();
  c.ids.back() = 257;
  EXPECT_NE(rejected(c).find("outside the model's vocabulary of 257"), std::string::npos);
  c = Good();
  c.text = "bad \xff";
  EXPECT_NE(rejected(c).find("not valid UTF-8"), std::string::npos);
  c = Good();
  c.finish_reason = "length";
  EXPECT_NE(rejected(c).find("not max_new_tokens 8"), std::string::npos);
  c = Good();
  c.ids.clear();
  EXPECT_NE(rejected(c).find("without a token"), std::string::npos);
  c = Good();
  c.slot_steps = 0.001;  // 5 decode steps take at least 5 slot-steps
  EXPECT_NE(rejected(c).find("slot_steps"), std::string::npos);
  ItemOutput none;
  none.ok = true;
  ResultRecord unused;
  EXPECT_TRUE(g.judge(none, Rules(), unused));
}

TEST(GenerationKind, VerifyChecksARecordAgainstTheRunRecordsSettings) {
  const OutputKindSpec& g = GenerationOutput();
  const std::vector<std::int64_t> eos{256}, stop{97};
  AcceptedRules rules{0, nullptr, 0, 8, 257, &eos, &stop};
  EXPECT_FALSE(g.check_accepted(Accepted(Good()), rules));
  auto says = [&](Completion c, const char* what) {
    c.near_tie_steps.clear();  // the faults below, alone
    auto fault = g.check_accepted(Accepted(std::move(c)), rules);
    ASSERT_TRUE(fault) << what;
    EXPECT_NE(fault->find(what), std::string::npos) << *fault;
  };
  Completion c = Good();
  c.ids = {111, 256, 108, 256};
  says(c, "completion token 1 (256) ends a sequence, yet 2 tokens follow it");
  c = Good();
  c.ids = {111, 97, 108, 256};
  says(c, "completion token 1 (97) ends a sequence");
  c = Good();
  c.finish_reason = "stop";
  says(c, "finish_reason stop but the last token (256) is an end-of-sequence id");
  c = Good();
  c.ids.back() = 104;
  says(c, "finish_reason eos but the last token (104) is not an end-of-sequence id");
  c = Good();
  c.ids.back() = 97;
  c.finish_reason = "stop";
  EXPECT_FALSE(g.check_accepted(Accepted(c), rules)) << "a stop id ends it";
  c.finish_reason = "eos";
  says(c, "finish_reason eos but the last token (97) is not");
  AcceptedRules tighter{0, nullptr, 0, 4, 257, &eos, &stop};
  auto over = g.check_accepted(Accepted(Good()), tighter);
  ASSERT_TRUE(over);
  EXPECT_NE(over->find("more than generation.max_new_tokens 4"), std::string::npos) << *over;
  ResultRecord no_prompt = Accepted(Good());
  no_prompt.tokens.reset();
  EXPECT_TRUE(g.check_accepted(no_prompt, rules));
  ResultRecord bare = Accepted(Good());
  bare.completion.reset();
  EXPECT_TRUE(g.check_accepted(bare, rules));
}

TEST(GenerationKind, ComparesCompletionsTokenByToken) {
  auto cmp = GenerationOutput().compare(ComparisonInputs{});
  bool same = false;
  auto d = cmp->Compare(Accepted(Good()), Accepted(Good()), same);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d.value());
  EXPECT_TRUE(same);
  Completion other = Good();
  other.ids = {111, 108, 97, 256};
  other.text = "ola";
  same = false;
  auto diff = cmp->Compare(Accepted(Good()), Accepted(other), same);
  ASSERT_TRUE(diff.ok());
  ASSERT_TRUE(diff.value());
  EXPECT_FALSE(same);
  EXPECT_EQ(diff.value()->what, "completion");
  EXPECT_NE(diff.value()->b.find("first 2 agree"), std::string::npos) << diff.value()->b;
  nlohmann::ordered_json items;
  cmp->Figures(2, 1, items);
  EXPECT_EQ(items["identical_completions"], 1);
  EXPECT_EQ(items["exact_match_rate"], 0.5);
  EXPECT_DOUBLE_EQ(items["token_agreement"].get<double>(), (6.0 + 2.0) / (6.0 + 6.0));
  EXPECT_EQ(items["near_tie_divergences"], 0);
  EXPECT_EQ(items["length_differences"]["completions"], 1);
  EXPECT_EQ(items["length_differences"]["max_tokens"], 2);
  // Diverging at a step either side decided within the near-tie margin is counted apart.
  Completion tie = other;
  tie.near_tie_steps = {2};
  auto near = cmp->Compare(Accepted(Good()), Accepted(tie), same);
  ASSERT_TRUE(near.ok() && near.value());
  EXPECT_EQ(near.value()->what, "completion_near_tie");
  Completion late = other;
  late.near_tie_steps = {3};
  auto not_near = cmp->Compare(Accepted(Good()), Accepted(late), same);
  ASSERT_TRUE(not_near.ok() && not_near.value());
  EXPECT_EQ(not_near.value()->what, "completion") << "a near-tie after the divergence explains nothing";
  nlohmann::ordered_json after;
  cmp->Figures(4, 1, after);
  EXPECT_EQ(after["near_tie_divergences"], 1);
  EXPECT_EQ(after["length_differences"]["completions"], 3);
}

TEST(GenerationKind, TheReportGivesTokensPerSecondPercentilesAndTheExactMatchRate) {
  Manifest m;
  std::vector<ResultRecord> records;
  for (int i = 0; i < 4; ++i) {
    ManifestItem item{"p" + std::to_string(i), "p", "", std::nullopt, std::nullopt};
    Completion c = Good();
    c.ttft_ms = 10.0 * (i + 1);
    c.prefill_ms = 5;    // 4 x 6 prompt tokens in 20 ms: 1200 tokens/s
    c.decode_ms = 12.5;  // 4 x 5 tokens after the first in 50 ms: 400 tokens/s
    item.expected = i < 3 ? "olleh" : "other";
    m.items.push_back(item);
    ResultRecord r = Accepted(c);
    r.id = item.id;
    records.push_back(r);
  }
  m.items.push_back({"long", "long", "", std::nullopt, std::nullopt});
  records.push_back(ResultRecord::Rejected("long", reason::kPromptTooLong, "too long"));
  Acceptance acc;
  acc.min_accuracy = 0.8;
  Report rep = BuildReport(GenerationOutput(), m, records, acc, RunMetrics{1, 100, std::nullopt, 0, {}});
  EXPECT_EQ(rep.generation.items, 4u);
  EXPECT_EQ(rep.generation.prompt_tokens, 24u);
  EXPECT_EQ(rep.generation.completion_tokens, 24u);
  EXPECT_DOUBLE_EQ(rep.generation.prefill_tokens_per_s(), 1200);
  EXPECT_DOUBLE_EQ(rep.generation.decode_tokens_per_s(), 400);
  EXPECT_EQ(rep.generation.ttft_p50, 20);
  EXPECT_EQ(rep.generation.ttft_p99, 40);
  EXPECT_EQ(rep.labelled, 4u);
  EXPECT_EQ(rep.correct, 3u);
  EXPECT_FALSE(rep.acceptance_met) << "an exact-match rate of 0.75 is below min_accuracy 0.8";
  auto j = ReportToJson(rep);
  EXPECT_EQ(j["output_kind"], "generation");
  EXPECT_EQ(j["generation"]["exact_match"]["matched"], 3);
  EXPECT_EQ(j["generation"]["finish_reasons"]["eos"], 4);
  EXPECT_EQ(j["generation"]["kv_cache"]["largest_batch_bytes"], 4096);
  EXPECT_EQ(j["by_reason"]["prompt_too_long"], 1);
  std::ostringstream md;
  GenerationOutput().report_md(rep, md);
  EXPECT_NE(md.str().find("Exact match: 3 of 4"), std::string::npos) << md.str();
  EXPECT_NE(md.str().find("Prefill 1200.0 tokens/s, decode 400.0 tokens/s"), std::string::npos) << md.str();
}

TEST(GeneratorContract, PackageMetadataGivesTheCacheShapeAndRefusesBadForms) {
  auto c = ContractFromPackageMetadata({{"pilot.generator_contract", "1"},
                                        {"pilot.layers", "2"},
                                        {"pilot.kv_heads", "2"},
                                        {"pilot.head_dim", "8"},
                                        {"pilot.context", "64"},
                                        {"pilot.vocab", "300"},
                                        {"pilot.eos_token_ids", "[5, 7]"},
                                        {"pilot.kv_dtype", "float32"}},
                                       "g.pt2");
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  EXPECT_EQ(c.value().layers, 2);
  EXPECT_EQ(c.value().context, 64);
  EXPECT_EQ(c.value().eos_token_ids, (std::vector<std::int64_t>{5, 7}));
  EXPECT_EQ(c.value().kv_dtype, "float32");
  for (const char* bad : {"5", "[-1]", "[2147483648]", "[\"5\"]", "[1.5]", "{}"}) {
    auto r = ContractFromPackageMetadata({{"pilot.eos_token_ids", bad}}, "g.pt2");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().what.find("eos_token_ids"), std::string::npos);
  }
  std::string many = "[";
  for (int i = 0; i < 65; ++i) many += std::string(i ? "," : "") + std::to_string(i);
  EXPECT_FALSE(ContractFromPackageMetadata({{"pilot.eos_token_ids", many + "]"}}, "g.pt2").ok());
  EXPECT_FALSE(ContractFromPackageMetadata({{"pilot.layers", "two"}}, "g.pt2").ok());
}

std::string ReadData(const std::string& name) {
  std::ifstream in(std::string(PILOT_TOKENIZER_DATA) + "/" + name, std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

TEST(Decoding, ByteLevelGivesWhatTokenizersDecodeGives) {
  auto t = ParseTokenizerJson(ReadData("tiny-bytelevel.json"), "tiny-bytelevel.json");
  ASSERT_TRUE(t.ok()) << t.error().ToString();
  std::string why;
  EXPECT_EQ(t.value()->Decoder(why), "ByteLevel");
  // tokenizers 0.23.3: Tokenizer.decode(ids) (skip_special_tokens=True) on the same file.
  EXPECT_EQ(t.value()->DecodeIds({40, 69, 76, 76, 79, 273, 261, 76, 68, 12, 221, 128, 121}),
            "Hello world, \xc3\xbc");
  EXPECT_EQ(t.value()->DecodeIds({163, 246, 99, 163, 251, 106, 165, 104, 253, 265, 65, 70, 128, 103}),
            "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e caf\xc3\xa9");
  EXPECT_EQ(t.value()->DecodeIds({65, 128}), "a\xef\xbf\xbd") << "half of a character: U+FFFD";
  EXPECT_EQ(t.value()->DecodeIds({0, 65, 128, 121}), "a\xc3\xbc") << "the special token left out";
  EXPECT_EQ(t.value()->DecodeIds({0}), "");
  EXPECT_EQ(t.value()->DecodeIds({-1, 300, 2147483647, 65}), "a")
      << "ids outside the vocabulary give nothing";
  auto none = ParseTokenizerJson(ReadData("tiny-roberta.json"), "tiny-roberta.json");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none.value()->Decoder(why), "");
  EXPECT_NE(why.find("has no decoder"), std::string::npos) << why;
  auto sp = ParseSentencePieceModel(ReadData("tiny.model"), "tiny.model", false, false);
  ASSERT_TRUE(sp.ok());
  EXPECT_EQ(sp.value()->Decoder(why), "");
  std::string doc = ReadData("tiny-bytelevel.json");
  const auto at = doc.find("\"ByteLevel\"", doc.find("\"decoder\""));
  ASSERT_NE(at, std::string::npos);
  doc.replace(at, 11, "\"Metaspace\"");
  auto meta = ParseTokenizerJson(doc, "m.json");
  ASSERT_TRUE(meta.ok()) << meta.error().ToString();
  EXPECT_EQ(meta.value()->Decoder(why), "");
  EXPECT_NE(why.find("'Metaspace' is not implemented by pilot"), std::string::npos) << why;
}

TEST(Decoding, IllFormedUtf8IsRepairedAsPythonsReplaceDoes) {
  // Python 3.11: bytes.decode("utf-8", errors="replace").
  const std::string r = "\xef\xbf\xbd";
  EXPECT_EQ(LossyUtf8("plain"), "plain");
  EXPECT_EQ(LossyUtf8("\xe6\x97"), r);
  EXPECT_EQ(LossyUtf8("\xf0\x9f\x98"), r);
  EXPECT_EQ(LossyUtf8("\xed\xa0\x80"), r + r + r);
  EXPECT_EQ(LossyUtf8("\xc0\xaf"), r + r);
  EXPECT_EQ(LossyUtf8("a\xff"
                      "b"),
            "a" + r + "b");
  EXPECT_EQ(LossyUtf8("\xf4\x90\x80\x80"), r + r + r + r);
  EXPECT_EQ(LossyUtf8("\xe0\x80\xaf"), r + r + r);
  EXPECT_EQ(LossyUtf8("\xf0\x9f\x98\x80!"), "\xf0\x9f\x98\x80!");
  EXPECT_EQ(LossyUtf8(std::string("\0", 1)), std::string("\0", 1));
}

}  // namespace
}  // namespace pilot

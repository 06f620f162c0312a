// The tokenizers against ids the reference libraries gave for the same files and texts
// (tokenizers 0.23.3, sentencepiece 0.1.99; the files are tests/tokenizer/data/, made by
// tests/tokenizer/make-data.py), and every refusal of a tokenizer file. The parity over
// 10,000 texts per family is e2e.tokenizer_parity.
#include "pilot/tokenizer.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "tokenizer_parts.h"
#include "unicode_text.h"

namespace pilot {
namespace {

using Ids = std::vector<std::int64_t>;

std::string ReadData(const std::string& name) {
  std::ifstream in(std::string(PILOT_TOKENIZER_DATA) + "/" + name, std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

std::unique_ptr<Tokenizer> Load(const std::string& name) {
  auto t = name.size() > 6 && name.substr(name.size() - 6) == ".model"
               ? ParseSentencePieceModel(ReadData(name), name, false, true)
               : ParseTokenizerJson(ReadData(name), name);
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().ToString());
  return t.ok() ? std::move(t.value()) : nullptr;
}

Ids Encode(const Tokenizer& t, std::string_view text, TokenizerSettings s = {}) {
  s.max_length = 1 << 20;
  return EncodeText(t, s, text).ids;
}

TEST(Tokenizer, WordPieceGivesTheReferenceIds) {
  auto t = Load("tiny-bert.json");
  ASSERT_TRUE(t);
  EXPECT_EQ(Encode(*t, "The Program is free software."), (Ids{2, 93, 161, 144, 240, 60, 258, 11, 3}));
  // Accents stripped after lower-casing, a no-break space, a zero-width space (removed), CJK
  // split, an added token written in the text.
  EXPECT_EQ(Encode(*t, "ÉTÉ\u00a0naïve\u200b日本 [MASK]x"),
            (Ids{2, 32, 55, 60, 41, 62, 224, 1, 1, 4, 51, 3}));
  EXPECT_EQ(t->SpecialTokenCount(), 2u);
  EXPECT_EQ(t->TokenId("[PAD]"), 0);
  EXPECT_EQ(t->Describe()["model"], "WordPiece");
}

TEST(Tokenizer, ByteLevelBpeGivesTheReferenceIds) {
  auto t = Load("tiny-roberta.json");
  ASSERT_TRUE(t);
  EXPECT_EQ(Encode(*t, "The Program is free software."),
            (Ids{0, 56, 76, 73, 331, 285, 351, 341, 289, 270, 73, 288, 83, 74, 393, 69, 270, 18, 2}));
  // A contraction, two spaces, <mask> taking the space before it (lstrip), a tab, a trailing space.
  EXPECT_EQ(Encode(*t, "It's  free <mask>\tsoftware "),
            (Ids{0, 45, 88, 11, 87, 225, 289, 270, 73, 4, 202, 87, 83, 74, 393, 69, 270, 225, 2}));
  EXPECT_EQ(t->Describe()["model"], "BPE");
}

TEST(Tokenizer, SentencePieceGivesTheReferenceIds) {
  auto t = Load("tiny.model");
  ASSERT_TRUE(t);
  EXPECT_EQ(Encode(*t, "The Program is free software."), (Ids{104, 101, 51, 167, 117, 14, 2}));
  EXPECT_EQ(t->Describe()["format"], "sentencepiece");
}

TEST(Tokenizer, UnigramWithMetaspaceGivesTheReferenceIds) {
  auto t = Load("tiny-unigram.json");
  ASSERT_TRUE(t);
  EXPECT_EQ(Encode(*t, "The Program is free software."), (Ids{2, 125, 118, 4, 35, 183, 141, 16, 3}));
  // NFKC (the ligature), two spaces, unknown characters (consecutive ones fused into one unk).
  EXPECT_EQ(Encode(*t, "Caf\u00e9  na\u00efve \u65e5\u672c\u8a9e \ufb01nance"),
            (Ids{2, 4, 100, 12, 46, 1, 4, 4, 18, 12, 1, 123, 4, 1, 52, 7, 18, 12, 18, 24, 6, 3}));
  EXPECT_EQ(Encode(*t, "  leading and trailing  "),
            (Ids{2, 4, 4, 80, 12, 11, 20, 39, 4, 10, 14, 12, 7, 34, 20, 4, 4, 3}));
  // An added token in the text: the piece after it gets its own prefix.
  EXPECT_EQ(Encode(*t, "xyz<unk>qq"), (Ids{2, 4, 149, 21, 295, 1, 4, 294, 294, 3}));
  EXPECT_EQ(Encode(*t, ""), (Ids{2, 3}));
  EXPECT_EQ(t->Describe()["model"], "Unigram");
}

TEST(Tokenizer, UnigramTakesTheBestScoreFusesUnknownsAndFallsBackToBytes) {
  auto load = [](const std::string& model) {
    auto t = ParseTokenizerJson(
        R"({"pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "never"},
                                    "model": )" +
            model + "}",
        "t.json");
    EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().ToString());
    return t.ok() ? std::move(t.value()) : nullptr;
  };
  // "abc": a+bc scores -1 + -1 = -2, ab+c -1.5 + -1 = -2.5, a+b+c -3, abc alone -2.1.
  auto t = load(R"({"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0], ["a", -1], ["b", -1], ["c", -1],
                    ["ab", -1.5], ["bc", -1], ["abc", -2.1]]})");
  ASSERT_TRUE(t);
  EXPECT_EQ(Encode(*t, "abc"), (Ids{1, 5}));
  // Two unknown characters fuse into one <unk>; the lowest score minus 10 is theirs.
  EXPECT_EQ(Encode(*t, "xya"), (Ids{0, 1}));
  // Byte fallback: an unknown character becomes its UTF-8 bytes when every byte has a token.
  auto b = load(R"({"type": "Unigram", "unk_id": 0, "byte_fallback": true, "vocab": [["<unk>", 0], ["a", -1],
                    ["<0xC3>", -5], ["<0xA9>", -5]]})");
  ASSERT_TRUE(b);
  EXPECT_EQ(Encode(*b, "a\u00e9a"), (Ids{1, 2, 3, 1}));
  EXPECT_EQ(Encode(*b, "\u00e8"), (Ids{0}));  // 0xA8 has no token: <unk>
  // No unk_id: an unknown character fails that text alone, with the reason.
  auto n = load(R"({"type": "Unigram", "vocab": [["a", -1]]})");
  ASSERT_TRUE(n);
  TokenizerSettings s;
  s.max_length = 100;
  TokenizedText out = EncodeText(*n, s, "aza");
  EXPECT_NE(out.error.find("no unk_id"), std::string::npos) << out.error;
  EXPECT_EQ(Encode(*n, "aa"), (Ids{0, 0}));
  // As tokenizers: the unknown character fails the text even off the best path, and even when
  // byte_fallback could spell it.
  auto off = load(R"({"type": "Unigram", "vocab": [["a", -1], ["b", -1], ["a\u00e9b", -0.5]]})");
  ASSERT_TRUE(off);
  EXPECT_NE(EncodeText(*off, s, "a\u00e9b").error.find("no unk_id"), std::string::npos);
  auto bytes = load(
      R"({"type": "Unigram", "byte_fallback": true, "vocab": [["a", -1], ["<0xC3>", -5], ["<0xA9>", -5]]})");
  ASSERT_TRUE(bytes);
  EXPECT_NE(EncodeText(*bytes, s, "a\u00e9").error.find("no unk_id"), std::string::npos);
  // An empty vocabulary without unk_id loads (tokenizers loads it) and encodes only "".
  auto empty = load(R"({"type": "Unigram", "vocab": []})");
  ASSERT_TRUE(empty);
  EXPECT_EQ(Encode(*empty, ""), Ids{});
  // A long run of unknown characters is one <unk>, in linear time (200,000 of them).
  std::string run;
  for (int i = 0; i < 200000; ++i) run += "\u4e2d";
  EXPECT_EQ(Encode(*t, "a" + run + "a"), (Ids{1, 0, 1}));
  // What it refuses, naming the key.
  for (const char* bad :
       {R"({"type": "Unigram", "vocab": [], "unk_id": 0})",
        R"({"type": "Unigram", "vocab": [["a", -1]], "unk_id": 3})",
        R"({"type": "Unigram", "vocab": [["a", "low"]]})", R"({"type": "Unigram", "vocab": {"a": 1}})",
        R"({"type": "Unigram", "vocab": [["a", -1, 2]]})"}) {
    auto r = ParseTokenizerJson(std::string(R"({"model": )") + bad + "}", "t.json");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().ToString().find("model"), std::string::npos) << r.error().ToString();
  }
}

TEST(Tokenizer, MetaspaceIsReadAsTokenizersReadsIt) {
  auto error_of = [](const std::string& pre) {
    auto t = ParseTokenizerJson(R"({"pre_tokenizer": )" + pre + R"(, "model": {"type": "Unigram", "unk_id": 0,
                                    "vocab": [["<unk>", 0], ["\u2581a", -1], ["a", -2]]}})",
                                "t.json");
    return t.ok() ? std::string("accepted") : t.error().ToString();
  };
  EXPECT_EQ(error_of(R"({"type": "Metaspace", "replacement": "\u2581"})"), "accepted");
  EXPECT_EQ(error_of(R"({"type": "Metaspace", "replacement": "\u2581", "add_prefix_space": true,
                         "prepend_scheme": "never"})"),
            "accepted");
  for (const char* bad : {R"({"type": "Metaspace", "prepend_scheme": "always"})",
                          R"({"type": "Metaspace", "replacement": "\u2581", "add_prefix_space": false})",
                          R"({"type": "Metaspace", "replacement": "\u2581", "add_prefix_space": false,
                              "prepend_scheme": "always"})",
                          R"({"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": null})",
                          R"({"type": "Metaspace", "replacement": "ab"})"}) {
    const std::string e = error_of(bad);
    EXPECT_NE(e.find("pre_tokenizer."), std::string::npos) << bad << " -> " << e;
  }
}

TEST(Tokenizer, MetaspaceReplacesSpacesPrependsAndSplits) {
  std::vector<std::u32string> p{U"a b  c", U"\u2581d", U""};
  tok::MetaspacePreTokenize(p, U'\u2581', true, true);
  EXPECT_EQ(p, (std::vector<std::u32string>{U"\u2581a", U"\u2581b", U"\u2581", U"\u2581c", U"\u2581d"}));
  std::vector<std::u32string> q{U"a b"};
  tok::MetaspacePreTokenize(q, U'_', false, false);
  EXPECT_EQ(q, (std::vector<std::u32string>{U"a_b"}));
}

TEST(Tokenizer, SentencePieceWithFairseqIdsGivesXlmRobertasIds) {
  // The ids transformers' XLMRobertaConverter's tokenizer.json of tiny.model gives (run by
  // tokenizers 0.23.3): <s> 0, </s> 2, <unk> 3, every other piece its id plus 1.
  auto t = ParseSentencePieceModel(ReadData("tiny.model"), "tiny.model", true, true, true);
  ASSERT_TRUE(t.ok()) << t.error().ToString();
  const Tokenizer& x = *t.value();
  EXPECT_EQ(Encode(x, "The Program is free software."), (Ids{0, 105, 102, 52, 168, 118, 15, 2}));
  EXPECT_EQ(Encode(x, "  two  spaces "), (Ids{0, 4, 12, 38, 11, 4, 5, 22, 17, 300, 6, 5, 2}));
  EXPECT_EQ(Encode(x, "Caf\u00e9 \ufb01 \u65e5\u672c"), (Ids{0, 4, 88, 17, 29, 3, 4, 29, 7, 4, 3, 2}));
  EXPECT_EQ(x.TokenId("<pad>"), 1);
  EXPECT_EQ(x.TokenId("<unk>"), 3);
  EXPECT_EQ(x.TokenId("<mask>"), 301);
  EXPECT_EQ(x.TokenId("\u2581"), 4);  // SentencePiece's 3, plus 1
  EXPECT_EQ(x.TokenId("<nope>"), std::nullopt);
  EXPECT_EQ(x.Describe()["ids"], "fairseq");
  EXPECT_EQ(x.Describe()["vocab_size"], 302);
}

TEST(Tokenizer, TruncationKeepsTheSpecialTokensAndCountsTheWhole) {
  auto t = Load("tiny-bert.json");
  ASSERT_TRUE(t);
  TokenizerSettings s;
  s.max_length = 5;
  s.truncation = Truncation::kTruncate;
  TokenizedText out = EncodeText(*t, s, "The Program is free software.");
  EXPECT_EQ(out.ids, (Ids{2, 93, 161, 144, 3}));
  EXPECT_EQ(out.type_ids, (Ids{0, 0, 0, 0, 0}));
  EXPECT_TRUE(out.truncated);
  EXPECT_EQ(out.tokens, 9u);
  // reject: nothing cut, the caller rejects by `tokens`.
  s.truncation = Truncation::kReject;
  out = EncodeText(*t, s, "The Program is free software.");
  EXPECT_EQ(out.ids.size(), 9u);
  EXPECT_FALSE(out.truncated);
  EXPECT_EQ(out.tokens, 9u);
  // Without special tokens.
  s.add_special_tokens = false;
  s.max_length = 100;
  EXPECT_EQ(EncodeText(*t, s, "The Program").ids, (Ids{93, 161}));
}

TEST(Tokenizer, EmptyAndWhiteSpaceTextsGiveOnlyTheSpecialTokens) {
  auto bert = Load("tiny-bert.json");
  auto rob = Load("tiny-roberta.json");
  ASSERT_TRUE(bert && rob);
  EXPECT_EQ(Encode(*bert, ""), (Ids{2, 3}));
  EXPECT_EQ(Encode(*bert, " \t\u3000"), (Ids{2, 3}));
  EXPECT_EQ(Encode(*rob, ""), (Ids{0, 2}));
}

const char* kVocab = R"("vocab": {"a": 0, "b": 1, "c": 2, "ab": 3, "bc": 4, "abc": 5, "[UNK]": 6})";

std::string Bpe(const std::string& merges) {
  return std::string(R"({"model": {"type": "BPE", )") + kVocab + R"(, "merges": )" + merges + "}}";
}

TEST(Tokenizer, BpeMergesTheLowestRankFirst) {
  auto first_bc = ParseTokenizerJson(Bpe(R"([["b", "c"], ["a", "bc"], ["a", "b"]])"), "t.json");
  ASSERT_TRUE(first_bc.ok()) << first_bc.error().ToString();
  EXPECT_EQ(Encode(*first_bc.value(), "abc"), (Ids{5}));
  EXPECT_EQ(Encode(*first_bc.value(), "abab"), (Ids{3, 3}));
  // The older "a b" form; "ab" first, and nothing makes "ab"+"c".
  auto first_ab = ParseTokenizerJson(Bpe(R"(["a b", "b c", "a bc"])"), "t.json");
  ASSERT_TRUE(first_ab.ok()) << first_ab.error().ToString();
  EXPECT_EQ(Encode(*first_ab.value(), "abc"), (Ids{3, 2}));
  // A character not in the vocabulary, without unk_token, is dropped before the merges, as
  // tokenizers does: "a" and "b" then merge.
  EXPECT_EQ(Encode(*first_ab.value(), "axb"), (Ids{3}));
}

// The error a tokenizer file gives, as one string.
std::string ErrorOf(const std::string& text) {
  auto t = ParseTokenizerJson(text, "tok.json");
  return t.ok() ? "accepted" : t.error().ToString();
}

TEST(Tokenizer, RefusesWhatItDoesNotImplementByName) {
  const std::string wp =
      R"("model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", )" +
      std::string(kVocab) + "}";
  EXPECT_EQ(ErrorOf("{" + wp + "}"), "accepted");
  auto precompiled = ErrorOf(R"({"normalizer": {"type": "Sequence", "normalizers": [{"type": "NFKC"},
                                 {"type": "Precompiled", "precompiled_charsmap": ""}]}, )" +
                             wp + "}");
  EXPECT_NE(precompiled.find("normalizer.normalizers[1].type"), std::string::npos) << precompiled;
  EXPECT_NE(precompiled.find("SentencePiece .model"), std::string::npos) << precompiled;
  auto wordlevel = ErrorOf(R"({"model": {"type": "WordLevel", "vocab": {}}})");
  EXPECT_NE(wordlevel.find("the model 'WordLevel' is not implemented"), std::string::npos) << wordlevel;
  auto first =
      ErrorOf(R"({"pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first"},
                            "model": {"type": "Unigram", "vocab": [["<unk>", 0]], "unk_id": 0}})");
  EXPECT_NE(first.find("pre_tokenizer.prepend_scheme"), std::string::npos) << first;
  EXPECT_NE(first.find("'first'"), std::string::npos) << first;
  auto split = ErrorOf(R"({"pre_tokenizer": {"type": "Split", "pattern": {"Regex": "x"}}, )" + wp + "}");
  EXPECT_NE(split.find("the pre-tokenizer 'Split' is not implemented"), std::string::npos) << split;
  auto post = ErrorOf(R"({"post_processor": {"type": "Mystery"}, )" + wp + "}");
  EXPECT_NE(post.find("the post-processor 'Mystery'"), std::string::npos) << post;
}

TEST(Tokenizer, RefusesBadFilesNamingTheKey) {
  EXPECT_NE(ErrorOf("not json").find("tok.json"), std::string::npos);
  EXPECT_NE(ErrorOf("[1, 2]").find("must be a JSON object"), std::string::npos);
  EXPECT_NE(ErrorOf("{}").find("key 'model': must be an object"), std::string::npos);
  auto dropout =
      ErrorOf(R"({"model": {"type": "BPE", "dropout": 0.1, )" + std::string(kVocab) + R"(, "merges": []}})");
  EXPECT_NE(dropout.find("model.dropout"), std::string::npos) << dropout;
  auto merge = ErrorOf(Bpe(R"([["a", "b"], ["x", "y"]])"));
  EXPECT_NE(merge.find("merge 1 names a token that is not in the vocabulary"), std::string::npos) << merge;
  auto made = ErrorOf(Bpe(R"([["c", "a"]])"));
  EXPECT_NE(made.find("merge 0 makes a token"), std::string::npos) << made;
  auto negative = ErrorOf(R"({"model": {"type": "BPE", "vocab": {"a": -1}, "merges": []}})");
  EXPECT_NE(negative.find("must be a token id"), std::string::npos) << negative;
  auto unk = ErrorOf(
      R"({"model": {"type": "WordPiece", "unk_token": "[NOPE]", "continuing_subword_prefix": "##", )" +
      std::string(kVocab) + "}}");
  EXPECT_NE(unk.find("unk_token is not in the vocabulary"), std::string::npos) << unk;
  auto single = ErrorOf(R"({"added_tokens": [{"id": 1, "content": "x", "single_word": true}], )" +
                        std::string(R"("model": {"type": "BPE", )") + kVocab + R"(, "merges": []}})");
  EXPECT_NE(single.find("added_tokens[0].single_word"), std::string::npos) << single;
  auto type = ErrorOf(R"({"normalizer": {"type": 7}, "model": {}})");
  EXPECT_NE(type.find("normalizer.type"), std::string::npos) << type;
}

TEST(Tokenizer, AddedTokensOnTheNormalizedTextAreNormalizedThemselves) {
  // As tokenizers does: a token with normalized: true (special or not) is matched on the
  // normalized text, in its normalized form; one with normalized: false on the raw text.
  auto t = ParseTokenizerJson(R"({"normalizer": {"type": "Lowercase"},
      "added_tokens": [{"id": 7, "content": "FOO", "normalized": true, "special": true},
                       {"id": 8, "content": "BAR", "normalized": false}],
      "pre_tokenizer": {"type": "WhitespaceSplit"},
      "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                "vocab": {"[UNK]": 0, "x": 1, "bar": 2}}})",
                              "t.json");
  ASSERT_TRUE(t.ok()) << t.error().ToString();
  EXPECT_EQ(Encode(*t.value(), "x Foo x"), (Ids{1, 7, 1}));
  EXPECT_EQ(Encode(*t.value(), "BAR bar"), (Ids{8, 2}));
}

TEST(Tokenizer, APipelineThatGrowsATextPastItsBoundFailsThatTextAlone) {
  // Each Replace makes 64 of one 'a': three of them, 262,144 per 'a'.
  std::string replace =
      R"({"type": "Replace", "pattern": {"String": "a"}, "content": ")" + std::string(64, 'a') + R"("})";
  auto t = ParseTokenizerJson(R"({"normalizer": {"type": "Sequence", "normalizers": [)" + replace + "," +
                                  replace + "," + replace +
                                  R"(]}, "model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": []}})",
                              "t.json");
  ASSERT_TRUE(t.ok()) << t.error().ToString();
  TokenizedText out = EncodeText(*t.value(), TokenizerSettings{}, "aaaa");
  EXPECT_TRUE(out.ids.empty());
  EXPECT_NE(out.error.find("grows the text past 32 times its length"), std::string::npos) << out.error;
  EXPECT_EQ(Encode(*t.value(), "bbb"), (Ids{1, 1, 1}));  // a text without 'a' is not grown
}

TEST(Tokenizer, RefusesAPipelineOverItsBounds) {
  const std::string bpe = R"("model": {"type": "BPE", "vocab": {"a": 0}, "merges": []})";
  std::string many = R"({"normalizer": {"type": "Sequence", "normalizers": [)";
  for (int i = 0; i < 65; ++i) many += std::string(i ? "," : "") + R"({"type": "Lowercase"})";
  auto steps = ErrorOf(many + "]}, " + bpe + "}");
  EXPECT_NE(steps.find("holds more than 64 steps"), std::string::npos) << steps;
  auto twice = ErrorOf(R"({"pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "ByteLevel"},
                           {"type": "ByteLevel"}]}, )" +
                       bpe + "}");
  EXPECT_NE(twice.find("a second ByteLevel"), std::string::npos) << twice;
  auto content = ErrorOf(R"({"normalizer": {"type": "Replace", "pattern": {"String": "a"}, "content": ")" +
                         std::string(65, 'b') + R"("}, )" + bpe + "}");
  EXPECT_NE(content.find("normalizer.content"), std::string::npos) << content;
  auto sequence_twice = ErrorOf(R"({"post_processor": {"type": "TemplateProcessing", "special_tokens": {},
      "single": [{"Sequence": {"id": "A"}}, {"Sequence": {"id": "A"}}]}, )" +
                                bpe + "}");
  EXPECT_NE(sequence_twice.find("must hold the text ($A) exactly once"), std::string::npos) << sequence_twice;
}

TEST(Tokenizer, SentencePieceRefusesAFileItCannotLoad) {
  auto t = ParseSentencePieceModel("not a model", "x.model", false, true);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().ToString().find("x.model"), std::string::npos);
  EXPECT_EQ(t.error().kind, ErrorKind::kBadInput);
}

TEST(Unicode, NormalizationLeavesCodePointsYoungerThanTheCutAsTheyAre) {
  using unicode::Form;
  // U+1F16C RAISED MR SIGN (Unicode 12) decomposes to "MR" in ICU's tables, but not in
  // Unicode 9's, which tokenizers uses.
  EXPECT_EQ(unicode::Normalize(U"\U0001F16C", Form::kNfkc, {15, 0}), U"MR");
  EXPECT_EQ(unicode::Normalize(U"\U0001F16C", Form::kNfkc, {9, 0}), U"\U0001F16C");
  EXPECT_EQ(unicode::Normalize(U"\uFB01", Form::kNfkc, {9, 0}), U"fi");
  EXPECT_EQ(unicode::Normalize(U"e\u0301", Form::kNfc, {9, 0}), U"\u00e9");
  // A category that changed after Unicode 8 (U+166D: Po, then So).
  EXPECT_TRUE(unicode::IsPunctuationAt(0x166D, {8, 0}));
  EXPECT_FALSE(unicode::IsPunctuationAt(0x166D, {15, 0}));
  // A code point assigned in Unicode 9 is unassigned at 8.0.
  EXPECT_TRUE(unicode::AssignedBy(0x2E43, {9, 0}));
  EXPECT_FALSE(unicode::AssignedBy(0x2E43, {8, 0}));
}

}  // namespace
}  // namespace pilot

// Hugging Face tokenizer.json: parsing, and the pipeline tokenizers runs (added tokens,
// normalizer, pre-tokenizer, model, post-processor).
#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>
#include <utility>

#include "pilot/json_util.h"
#include "pilot/tokenizer.h"
#include "pilot/utf8.h"
#include "tokenizer_parts.h"
#include "unicode_text.h"

namespace pilot {
namespace {

using nlohmann::json;
using unicode::DecodeUtf8;
using unicode::EncodeUtf8;

constexpr const char* kHint = "see docs/tokenizers.md, 'What pilot implements'";

struct AddedToken {
  std::string content;
  std::int64_t id = 0;
  bool lstrip = false, rstrip = false, normalized = false, special = false;
};

struct TemplatePiece {
  bool sequence = false;          // the text's own tokens, else a special token
  std::vector<std::int64_t> ids;  // a special token's ids
  std::int64_t type_id = 0;
};

// A failure while reading the document: what, and the key path.
struct Fault {
  std::string what, path;
};

class Reader {
 public:
  explicit Reader(std::vector<Fault>& faults) : faults_(faults) {}

  bool Fail(const std::string& path, const std::string& what) {
    faults_.push_back({what, path});
    return false;
  }
  const json* Member(const json& obj, const char* key) {
    if (!obj.is_object()) return nullptr;
    auto it = obj.find(key);
    return it == obj.end() ? nullptr : &*it;
  }
  bool Bool(const json& obj, const char* key, bool fallback, const std::string& path, bool& out) {
    const json* v = Member(obj, key);
    if (!v || v->is_null()) {
      out = fallback;
      return true;
    }
    if (!v->is_boolean()) return Fail(path + "." + key, "must be true or false");
    out = v->get<bool>();
    return true;
  }
  bool String(const json& obj, const char* key, const std::string& path, std::string& out) {
    const json* v = Member(obj, key);
    if (!v || !v->is_string()) return Fail(path + "." + key, "must be a string");
    out = v->get<std::string>();
    if (out.size() > kMaxTokenBytes)
      return Fail(path + "." + key, "is longer than " + std::to_string(kMaxTokenBytes) + " bytes");
    return true;
  }
  bool Id(const json& v, const std::string& path, std::int64_t& out) {
    if (!v.is_number_unsigned() || v.get<std::uint64_t>() > 0x7FFFFFFFu) {
      return Fail(path, "must be a token id, a whole number from 0 to 2147483647");
    }
    out = static_cast<std::int64_t>(v.get<std::uint64_t>());
    return true;
  }

 private:
  std::vector<Fault>& faults_;
};

// The added tokens of one kind (matched on the raw or on the normalized text), as a byte trie:
// at each place the longest token there, in at most as many steps as the longest token has
// bytes.
class AddedTrie {
 public:
  bool empty() const { return tokens_.empty(); }
  void Add(const AddedToken& t) {
    std::size_t n = 0;
    for (unsigned char b : t.content) {
      std::int32_t child = Child(n, b);
      if (child < 0) {
        child = static_cast<std::int32_t>(nodes_.size());
        nodes_[n].next.emplace_back(b, child);
        nodes_.emplace_back();
      }
      n = static_cast<std::size_t>(child);
    }
    if (nodes_[n].token < 0) {  // the first of two equal contents wins
      nodes_[n].token = static_cast<std::int32_t>(tokens_.size());
      tokens_.push_back(t);
    }
  }
  // The longest token starting at text[i], or null.
  const AddedToken* Longest(std::string_view text, std::size_t i) const {
    const AddedToken* best = nullptr;
    std::size_t n = 0;
    for (std::size_t k = i; k < text.size(); ++k) {
      const std::int32_t child = Child(n, static_cast<unsigned char>(text[k]));
      if (child < 0) break;
      n = static_cast<std::size_t>(child);
      if (nodes_[n].token >= 0) best = &tokens_[static_cast<std::size_t>(nodes_[n].token)];
    }
    return best;
  }

 private:
  struct Node {
    std::vector<std::pair<unsigned char, std::int32_t>> next;
    std::int32_t token = -1;
  };
  std::int32_t Child(std::size_t n, unsigned char b) const {
    for (const auto& [byte, child] : nodes_[n].next) {
      if (byte == b) return child;
    }
    return -1;
  }
  std::vector<Node> nodes_{1};
  std::vector<AddedToken> tokens_;
};

// The pipeline grew a text past its bound (kGrowthFactor): thrown inside EncodeContent, which
// turns it into the item's error.
struct TooLarge {};

class HfTokenizer final : public Tokenizer {
 public:
  bool EncodeContent(std::string_view text, std::vector<std::int64_t>& ids,
                     std::string& error) const override {
    ids.clear();
    try {
      Encode(text, ids);
      return true;
    } catch (const TooLarge&) {
      error = "the tokenizer's pipeline grows the text past " + std::to_string(kGrowthFactor) +
              " times its length (plus " + std::to_string(kGrowthSlack) + ")";
    } catch (const std::exception& e) {
      error = std::string("the tokenizer failed: ") + e.what();
    }
    ids.clear();
    return false;
  }

  std::size_t SpecialTokenCount() const override {
    std::size_t n = 0;
    for (const auto& t : single_) n += t.sequence ? 0 : t.ids.size();
    return n;
  }

  void AddSpecialTokens(const std::vector<std::int64_t>& content, bool add_special,
                        TokenizedText& out) const override {
    out.ids.clear();
    out.type_ids.clear();
    if (!add_special || single_.empty()) {
      out.ids = content;
      out.type_ids.assign(content.size(), 0);
      return;
    }
    for (const auto& t : single_) {
      const auto& src = t.sequence ? content : t.ids;
      out.ids.insert(out.ids.end(), src.begin(), src.end());
      out.type_ids.insert(out.type_ids.end(), src.size(), t.type_id);
    }
  }

  std::optional<std::int64_t> TokenId(std::string_view token) const override {
    for (const auto& t : added_) {
      if (t.content == token) return t.id;
    }
    auto it = vocab_.find(std::string(token));
    if (it == vocab_.end()) return std::nullopt;
    return it->second;
  }

  nlohmann::ordered_json Describe() const override { return describe_; }

  std::string Decoder(std::string& why) const override {
    if (decoder_ == "ByteLevel") return decoder_;
    why = decoder_.empty()
              ? "the tokenizer has no decoder"
              : "its decoder '" + KeyForMessage(decoder_) + "' is not implemented by pilot (ByteLevel is)";
    return "";
  }

  // ByteLevel: each character of the token maps back to its byte; a token with a character
  // outside the map gives its own UTF-8 bytes, as tokenizers' ByteLevel decoder does. Added
  // tokens give their content; special ones nothing.
  std::string TokenBytes(std::int64_t id) const override {
    auto it = id_token_.find(id);
    if (it == id_token_.end()) return "";
    const auto& [token, special] = it->second;
    if (special) return "";
    std::string out;
    for (char32_t c : DecodeUtf8(token)) {
      auto b = tok::CharByte(c);
      if (!b) return token;
      out.push_back(static_cast<char>(*b));
    }
    return out;
  }

  // Once the vocabulary and the added tokens are known: id -> (token, special), by id (ids
  // may be sparse: a map, never a table as long as the largest id).
  void IndexIds() {
    id_token_.reserve(vocab_.size() + added_.size());
    for (const auto& [token, id] : vocab_) id_token_[id] = {token, false};
    for (const auto& t : added_) id_token_[t.id] = {t.content, t.special};
  }

  // Once the normalizers are known: the added tokens split as tokenizers splits them, by
  // `normalized` alone, and those matched on the normalized text normalized themselves.
  void IndexAddedTokens() {
    for (AddedToken t : added_) {
      if (t.normalized) {
        std::u32string c = DecodeUtf8(t.content);
        try {
          for (const auto& n : normalizers_) n(c);
        } catch (const TooLarge&) {
          continue;  // a token the pipeline cannot hold is never matched
        }
        t.content = EncodeUtf8(c);
        if (t.content.empty()) continue;
        normalized_.Add(t);
      } else {
        raw_.Add(t);
      }
    }
  }

  // What Parse fills.
  std::vector<AddedToken> added_;
  std::vector<tok::Normalizer> normalizers_;
  std::vector<tok::PreTokenizer> pre_tokenizers_;
  std::unique_ptr<tok::Model> model_;
  tok::Vocab vocab_;  // for TokenId (a copy of the model's)
  std::vector<TemplatePiece> single_;
  nlohmann::ordered_json describe_;
  std::string decoder_;  // the document's decoder.type; empty without one
  std::unordered_map<std::int64_t, std::pair<std::string, bool>> id_token_;

 private:
  void Encode(std::string_view text, std::vector<std::int64_t>& ids) const {
    const std::size_t limit = kGrowthFactor * text.size() + kGrowthSlack;
    std::size_t produced = 0;  // code points out of the normalizers, over every segment
    auto check = [&](std::size_t n) {
      if (n > limit || ids.size() > limit) throw TooLarge();
    };
    // 1. The added tokens matched on the raw text (normalized: false).
    std::vector<std::pair<std::string, std::int64_t>> raw;  // (text, -1) or ("", id)
    SplitAdded(text, raw_, raw);
    for (auto& [segment, id] : raw) {
      if (id >= 0) {
        ids.push_back(id);
        continue;
      }
      // 2. Normalize, then the added tokens matched on the normalized text.
      std::u32string s = DecodeUtf8(segment);
      for (const auto& n : normalizers_) {
        n(s);
        check(s.size());
      }
      produced += s.size();
      check(produced);
      std::vector<std::pair<std::string, std::int64_t>> parts;
      if (normalized_.empty()) {
        parts.emplace_back(EncodeUtf8(s), -1);
      } else {
        SplitAdded(EncodeUtf8(s), normalized_, parts);
      }
      for (auto& [part, pid] : parts) {
        if (pid >= 0) {
          ids.push_back(pid);
          continue;
        }
        // 3. Pre-tokenize, 4. the model on each piece.
        std::vector<std::u32string> pieces;
        pieces.push_back(DecodeUtf8(part));
        if (pieces[0].empty()) continue;
        for (const auto& p : pre_tokenizers_) {
          p(pieces);
          std::size_t total = 0;
          for (const auto& piece : pieces) total += piece.size();
          check(total);
        }
        for (const auto& piece : pieces) model_->Tokenize(piece, ids);
        check(0);
      }
    }
  }

  // tokenizers' AddedVocabulary split: the leftmost match, the longest at that position;
  // lstrip/rstrip take the white space beside it into the match.
  static void SplitAdded(std::string_view text, const AddedTrie& tokens,
                         std::vector<std::pair<std::string, std::int64_t>>& out) {
    std::size_t from = 0, i = 0;
    while (i < text.size()) {
      const AddedToken* best = tokens.empty() ? nullptr : tokens.Longest(text, i);
      if (!best) {
        ++i;
        continue;
      }
      std::size_t start = i, stop = i + best->content.size();
      if (best->lstrip) start = WhitespaceStartBefore(text, from, start);
      if (best->rstrip) stop = WhitespaceEndAfter(text, stop);
      if (start > from) out.emplace_back(std::string(text.substr(from, start - from)), -1);
      out.emplace_back(std::string(), best->id);
      from = i = stop;
    }
    if (from < text.size()) out.emplace_back(std::string(text.substr(from)), -1);
  }

  // Back from `at` over white space, not before `floor` (both on code point boundaries).
  static std::size_t WhitespaceStartBefore(std::string_view text, std::size_t floor, std::size_t at) {
    while (at > floor) {
      std::size_t begin = at - 1;
      while (begin > floor && (static_cast<unsigned char>(text[begin]) & 0xC0) == 0x80) --begin;
      char32_t c = 0;
      unicode::CodePointAt(text, begin, c);
      if (!unicode::IsWhiteSpace(c)) break;
      at = begin;
    }
    return at;
  }

  // Forward from `at` over white space, one code point at a time.
  static std::size_t WhitespaceEndAfter(std::string_view text, std::size_t at) {
    while (at < text.size()) {
      char32_t c = 0;
      const std::size_t len = unicode::CodePointAt(text, at, c);
      if (!unicode::IsWhiteSpace(c)) break;
      at += len;
    }
    return at;
  }

  AddedTrie raw_, normalized_;
};

bool ParseNormalizer(Reader& r, const json& j, const std::string& path, HfTokenizer& t,
                     nlohmann::ordered_json& names) {
  std::string type;
  if (!r.String(j, "type", path, type)) return false;
  if (type == "Sequence") {
    const json* list = r.Member(j, "normalizers");
    if (!list || !list->is_array()) return r.Fail(path + ".normalizers", "must be an array");
    if (list->size() > kMaxPipelineSteps) {
      return r.Fail(path + ".normalizers", "holds more than " + std::to_string(kMaxPipelineSteps) + " steps");
    }
    for (std::size_t i = 0; i < list->size(); ++i) {
      if (!ParseNormalizer(r, (*list)[i], path + ".normalizers[" + std::to_string(i) + "]", t, names))
        return false;
    }
    return true;
  }
  names.push_back(type);
  if (t.normalizers_.size() >= kMaxPipelineSteps) {
    return r.Fail(path, "is past the " + std::to_string(kMaxPipelineSteps) + " normalizers pilot runs");
  }
  if (type == "BertNormalizer") {
    tok::BertNormalizerOptions o;
    bool strip = false;
    if (!r.Bool(j, "clean_text", true, path, o.clean_text) ||
        !r.Bool(j, "handle_chinese_chars", true, path, o.handle_chinese_chars) ||
        !r.Bool(j, "lowercase", true, path, o.lowercase)) {
      return false;
    }
    // strip_accents: null follows lowercase, as in tokenizers.
    if (!r.Bool(j, "strip_accents", o.lowercase, path, strip)) return false;
    o.strip_accents = strip;
    t.normalizers_.push_back([o](std::u32string& s) { tok::BertNormalize(s, o); });
    return true;
  }
  if (type == "Lowercase") {
    t.normalizers_.push_back(tok::Lowercase);
    return true;
  }
  if (type == "StripAccents") {
    t.normalizers_.push_back(tok::StripMarks);
    return true;
  }
  static const std::map<std::string, unicode::Form> forms = {{"NFC", unicode::Form::kNfc},
                                                             {"NFD", unicode::Form::kNfd},
                                                             {"NFKC", unicode::Form::kNfkc},
                                                             {"NFKD", unicode::Form::kNfkd}};
  if (auto f = forms.find(type); f != forms.end()) {
    const unicode::Form form = f->second;
    t.normalizers_.push_back(
        [form](std::u32string& s) { s = unicode::Normalize(s, form, tok::kNormalizationUnicode); });
    return true;
  }
  if (type == "Strip") {
    bool left = true, right = true;
    if (!r.Bool(j, "strip_left", true, path, left) || !r.Bool(j, "strip_right", true, path, right))
      return false;
    t.normalizers_.push_back([left, right](std::u32string& s) {
      std::size_t b = 0, e = s.size();
      if (left)
        while (b < e && unicode::IsWhiteSpace(s[b])) ++b;
      if (right)
        while (e > b && unicode::IsWhiteSpace(s[e - 1])) --e;
      s = s.substr(b, e - b);
    });
    return true;
  }
  if (type == "Prepend") {
    std::string prepend;
    if (!r.String(j, "prepend", path, prepend)) return false;
    const std::u32string p = DecodeUtf8(prepend);
    if (p.size() > kMaxInsertedChars) {
      return r.Fail(path + ".prepend", "is longer than " + std::to_string(kMaxInsertedChars) + " characters");
    }
    t.normalizers_.push_back([p](std::u32string& s) {
      if (!s.empty()) s.insert(0, p);
    });
    return true;
  }
  if (type == "Replace") {
    const json* pattern = r.Member(j, "pattern");
    std::string from, to;
    if (!pattern || !r.Member(*pattern, "String")) {
      return r.Fail(path + ".pattern",
                    "a Replace normalizer with a Regex pattern is not implemented by pilot");
    }
    if (!r.String(*pattern, "String", path + ".pattern", from) || !r.String(j, "content", path, to))
      return false;
    if (from.empty()) return r.Fail(path + ".pattern.String", "must not be empty");
    const std::u32string f = DecodeUtf8(from), c = DecodeUtf8(to);
    if (c.size() > kMaxInsertedChars) {
      return r.Fail(path + ".content", "is longer than " + std::to_string(kMaxInsertedChars) + " characters");
    }
    t.normalizers_.push_back([f, c](std::u32string& s) {
      const std::size_t limit = kGrowthFactor * s.size() + kGrowthSlack;
      std::u32string out;
      std::size_t i = 0;
      while (i < s.size()) {
        if (s.compare(i, f.size(), f) == 0) {
          out += c;
          i += f.size();
          if (out.size() > limit) throw TooLarge();
        } else {
          out.push_back(s[i++]);
        }
      }
      s.swap(out);
    });
    return true;
  }
  if (type == "Precompiled") {
    return r.Fail(path + ".type",
                  "the normalizer 'Precompiled' (XLM-R, T5) is not implemented by pilot: run the family's "
                  "SentencePiece .model file instead");
  }
  return r.Fail(path + ".type", "the normalizer '" + KeyForMessage(type) + "' is not implemented by pilot");
}

bool ParsePreTokenizer(Reader& r, const json& j, const std::string& path, HfTokenizer& t,
                       nlohmann::ordered_json& names) {
  std::string type;
  if (!r.String(j, "type", path, type)) return false;
  if (type == "Sequence") {
    const json* list = r.Member(j, "pretokenizers");
    if (!list || !list->is_array()) return r.Fail(path + ".pretokenizers", "must be an array");
    if (list->size() > kMaxPipelineSteps) {
      return r.Fail(path + ".pretokenizers",
                    "holds more than " + std::to_string(kMaxPipelineSteps) + " steps");
    }
    for (std::size_t i = 0; i < list->size(); ++i) {
      if (!ParsePreTokenizer(r, (*list)[i], path + ".pretokenizers[" + std::to_string(i) + "]", t, names)) {
        return false;
      }
    }
    return true;
  }
  names.push_back(type);
  if (t.pre_tokenizers_.size() >= kMaxPipelineSteps) {
    return r.Fail(path, "is past the " + std::to_string(kMaxPipelineSteps) + " pre-tokenizers pilot runs");
  }
  if (type == "BertPreTokenizer") {
    t.pre_tokenizers_.push_back(tok::BertPreTokenize);
    return true;
  }
  if (type == "WhitespaceSplit") {
    t.pre_tokenizers_.push_back(tok::WhitespaceSplit);
    return true;
  }
  if (type == "ByteLevel") {
    if (std::count(names.begin(), names.end(), "ByteLevel") > 1) {
      return r.Fail(path, "is a second ByteLevel: pilot runs one (each would double the text's bytes again)");
    }
    bool prefix = true, regex = true;
    if (!r.Bool(j, "add_prefix_space", true, path, prefix) || !r.Bool(j, "use_regex", true, path, regex))
      return false;
    t.pre_tokenizers_.push_back(
        [prefix, regex](std::vector<std::u32string>& p) { tok::ByteLevelPreTokenize(p, prefix, regex); });
    return true;
  }
  if (type == "Metaspace") {
    // As tokenizers 0.23 reads it: `replacement` required, `prepend_scheme` a string when
    // given (default "always"), and an `add_prefix_space: false` beside "always" refused.
    std::string replacement, scheme = "always";
    if (!r.String(j, "replacement", path, replacement)) return false;
    const std::u32string rep32 = DecodeUtf8(replacement);
    if (rep32.size() != 1) return r.Fail(path + ".replacement", "must be one character");
    bool split = true;
    if (!r.Bool(j, "split", true, path, split)) return false;
    if (const json* ps = r.Member(j, "prepend_scheme"); ps) {
      if (!r.String(j, "prepend_scheme", path, scheme)) return false;
    }
    if (scheme != "always" && scheme != "never") {
      return r.Fail(path + ".prepend_scheme",
                    scheme == "first"
                        ? "'first' (a prefix on the text's first piece alone) is not implemented by pilot"
                        : "must be 'always' or 'never'");
    }
    if (const json* aps = r.Member(j, "add_prefix_space"); aps) {
      bool add = true;
      if (!r.Bool(j, "add_prefix_space", true, path, add)) return false;
      if (!add && scheme == "always") {
        return r.Fail(path + ".add_prefix_space",
                      "is false, and prepend_scheme is 'always' (tokenizers refuses this too)");
      }
    }
    const char32_t c = rep32[0];
    const bool prepend = scheme == "always";
    t.pre_tokenizers_.push_back([c, prepend, split](std::vector<std::u32string>& p) {
      tok::MetaspacePreTokenize(p, c, prepend, split);
    });
    return true;
  }
  return r.Fail(path + ".type",
                "the pre-tokenizer '" + KeyForMessage(type) + "' is not implemented by pilot");
}

bool ParseVocab(Reader& r, const json& model, const std::string& path, tok::Vocab& vocab) {
  const json* v = r.Member(model, "vocab");
  if (!v || !v->is_object()) return r.Fail(path + ".vocab", "must be an object of token: id");
  if (v->size() > kMaxTokenizerVocab) {
    return r.Fail(path + ".vocab", "holds more than " + std::to_string(kMaxTokenizerVocab) + " tokens");
  }
  vocab.reserve(v->size());
  for (auto it = v->begin(); it != v->end(); ++it) {
    std::int64_t id = 0;
    if (it.key().size() > kMaxTokenBytes)
      return r.Fail(path + ".vocab",
                    "holds a token longer than " + std::to_string(kMaxTokenBytes) + " bytes");
    if (!r.Id(it.value(), path + ".vocab['" + KeyForMessage(it.key()) + "']", id)) return false;
    vocab.emplace(it.key(), id);
  }
  return true;
}

bool ParseModel(Reader& r, const json& j, const std::string& path, HfTokenizer& t) {
  std::string type;
  if (!r.String(j, "type", path, type)) return false;
  std::string error;
  if (type == "WordPiece") {
    tok::WordPieceOptions o;
    if (!ParseVocab(r, j, path, o.vocab) || !r.String(j, "unk_token", path, o.unk_token) ||
        !r.String(j, "continuing_subword_prefix", path, o.prefix)) {
      return false;
    }
    const json* m = r.Member(j, "max_input_chars_per_word");
    if (m && !m->is_null()) {
      if (!m->is_number_unsigned() || m->get<std::uint64_t>() > (1u << 20)) {
        return r.Fail(path + ".max_input_chars_per_word", "must be a whole number of at most 1048576");
      }
      o.max_input_chars_per_word = m->get<std::size_t>();
    }
    t.vocab_ = o.vocab;
    t.model_ = tok::MakeWordPiece(std::move(o), error);
  } else if (type == "BPE") {
    tok::BpeOptions o;
    if (!ParseVocab(r, j, path, o.vocab)) return false;
    const json* dropout = r.Member(j, "dropout");
    if (dropout && !dropout->is_null() && !(dropout->is_number() && dropout->get<double>() == 0.0)) {
      return r.Fail(path + ".dropout",
                    "BPE dropout samples a different tokenization on each call: pilot refuses it");
    }
    auto optional_string = [&](const char* key, std::string& out) {
      const json* v = r.Member(j, key);
      if (!v || v->is_null()) return true;
      return r.String(j, key, path, out);
    };
    std::string unk;
    if (!optional_string("unk_token", unk) || !optional_string("continuing_subword_prefix", o.prefix) ||
        !optional_string("end_of_word_suffix", o.suffix) || !r.Bool(j, "fuse_unk", false, path, o.fuse_unk) ||
        !r.Bool(j, "byte_fallback", false, path, o.byte_fallback) ||
        !r.Bool(j, "ignore_merges", false, path, o.ignore_merges)) {
      return false;
    }
    if (const json* u = r.Member(j, "unk_token"); u && u->is_string()) o.unk_token = unk;
    const json* merges = r.Member(j, "merges");
    if (!merges || !merges->is_array()) return r.Fail(path + ".merges", "must be an array");
    if (merges->size() > kMaxTokenizerVocab) {
      return r.Fail(path + ".merges", "holds more than " + std::to_string(kMaxTokenizerVocab) + " merges");
    }
    o.merges.reserve(merges->size());
    for (std::size_t i = 0; i < merges->size(); ++i) {
      const json& m = (*merges)[i];
      const std::string where = path + ".merges[" + std::to_string(i) + "]";
      if (m.is_string()) {  // the older form, "a b"
        const std::string& s = m.get_ref<const std::string&>();
        const auto space = s.find(' ');
        if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos) {
          return r.Fail(where, "must be two tokens separated by one space");
        }
        o.merges.emplace_back(s.substr(0, space), s.substr(space + 1));
      } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
        o.merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
      } else {
        return r.Fail(where, "must be a pair of tokens");
      }
    }
    t.vocab_ = o.vocab;
    t.model_ = tok::MakeBpe(std::move(o), error);
  } else if (type == "Unigram") {
    tok::UnigramOptions o;
    const json* v = r.Member(j, "vocab");
    if (!v || !v->is_array()) return r.Fail(path + ".vocab", "must be an array of [piece, score]");
    if (v->size() > kMaxTokenizerVocab) {
      return r.Fail(path + ".vocab", "holds more than " + std::to_string(kMaxTokenizerVocab) + " pieces");
    }
    std::size_t bytes = 0;
    o.pieces.reserve(v->size());
    for (std::size_t i = 0; i < v->size(); ++i) {
      const json& e = (*v)[i];
      const std::string where = path + ".vocab[" + std::to_string(i) + "]";
      if (!e.is_array() || e.size() != 2 || !e[0].is_string() || !e[1].is_number()) {
        return r.Fail(where, "must be a pair [piece, score]");
      }
      const std::string& piece = e[0].get_ref<const std::string&>();
      if (piece.size() > kMaxTokenBytes)
        return r.Fail(where, "is a piece longer than " + std::to_string(kMaxTokenBytes) + " bytes");
      bytes += piece.size();
      if (bytes > kMaxUnigramBytes) {
        return r.Fail(path + ".vocab",
                      "holds more than " + std::to_string(kMaxUnigramBytes) + " bytes of pieces in all");
      }
      const double score = e[1].get<double>();
      if (!std::isfinite(score)) return r.Fail(where, "has a score that is not a finite number");
      o.pieces.emplace_back(piece, score);
    }
    if (const json* u = r.Member(j, "unk_id"); u && !u->is_null()) {
      std::int64_t id = 0;
      if (!r.Id(*u, path + ".unk_id", id)) return false;
      o.unk_id = id;
    }
    if (!r.Bool(j, "byte_fallback", false, path, o.byte_fallback)) return false;
    for (std::size_t i = 0; i < o.pieces.size(); ++i)
      t.vocab_[o.pieces[i].first] = static_cast<std::int64_t>(i);
    t.model_ = tok::MakeUnigram(std::move(o), error);
  } else {
    return r.Fail(path + ".type", "the model '" + KeyForMessage(type) + "' is not implemented by pilot");
  }
  if (!t.model_) return r.Fail(path, error);
  return true;
}

bool SpecialPair(Reader& r, const json& j, const char* key, const std::string& path, TemplatePiece& out) {
  const json* v = r.Member(j, key);
  if (!v || !v->is_array() || v->size() != 2 || !(*v)[0].is_string()) {
    return r.Fail(path + "." + key, "must be a pair [token, id]");
  }
  std::int64_t id = 0;
  if (!r.Id((*v)[1], path + "." + key + "[1]", id)) return false;
  out.ids = {id};
  return true;
}

bool ParsePostProcessor(Reader& r, const json& j, const std::string& path, HfTokenizer& t,
                        std::string& name) {
  std::string type;
  if (!r.String(j, "type", path, type)) return false;
  if (type == "Sequence") {
    const json* list = r.Member(j, "processors");
    if (!list || !list->is_array()) return r.Fail(path + ".processors", "must be an array");
    if (list->size() > kMaxPipelineSteps) {
      return r.Fail(path + ".processors", "holds more than " + std::to_string(kMaxPipelineSteps) + " steps");
    }
    for (std::size_t i = 0; i < list->size(); ++i) {
      std::string inner;
      if (!ParsePostProcessor(r, (*list)[i], path + ".processors[" + std::to_string(i) + "]", t, inner))
        return false;
      if (inner != "ByteLevel") {
        if (!name.empty() && name != "ByteLevel") {
          return r.Fail(path + ".processors", "holds more than one processor that adds tokens");
        }
        name = inner;
      }
    }
    if (name.empty()) name = "ByteLevel";
    return true;
  }
  name = type;
  if (type == "ByteLevel") return true;  // offsets only
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    TemplatePiece cls, seq, sep;
    seq.sequence = true;
    if (!SpecialPair(r, j, "cls", path, cls) || !SpecialPair(r, j, "sep", path, sep)) return false;
    t.single_ = {cls, seq, sep};
    return true;
  }
  if (type == "TemplateProcessing") {
    const json* single = r.Member(j, "single");
    const json* specials = r.Member(j, "special_tokens");
    if (!single || !single->is_array()) return r.Fail(path + ".single", "must be an array");
    if (single->size() > 130) return r.Fail(path + ".single", "holds more than 130 pieces");
    if (!specials || !specials->is_object()) return r.Fail(path + ".special_tokens", "must be an object");
    t.single_.clear();
    for (std::size_t i = 0; i < single->size(); ++i) {
      const json& piece = (*single)[i];
      const std::string where = path + ".single[" + std::to_string(i) + "]";
      TemplatePiece p;
      const json* body = nullptr;
      if ((body = r.Member(piece, "Sequence"))) {
        p.sequence = true;
        std::string which;
        if (!r.String(*body, "id", where + ".Sequence", which)) return false;
        if (which != "A") return r.Fail(where + ".Sequence.id", "must be 'A' in a single-sequence template");
      } else if ((body = r.Member(piece, "SpecialToken"))) {
        std::string id;
        if (!r.String(*body, "id", where + ".SpecialToken", id)) return false;
        const json* spec = r.Member(*specials, id.c_str());
        const json* ids = spec ? r.Member(*spec, "ids") : nullptr;
        if (!ids || !ids->is_array() || ids->empty() || ids->size() > 64) {
          return r.Fail(path + ".special_tokens",
                        "must give 1 to 64 ids for each special token the template names");
        }
        for (std::size_t k = 0; k < ids->size(); ++k) {
          std::int64_t v = 0;
          if (!r.Id((*ids)[k], path + ".special_tokens.ids[" + std::to_string(k) + "]", v)) return false;
          p.ids.push_back(v);
        }
      } else {
        return r.Fail(where, "must be a Sequence or a SpecialToken");
      }
      const json* type_id = r.Member(*body, "type_id");
      if (type_id) {
        if (!type_id->is_number_unsigned() || type_id->get<std::uint64_t>() > 255) {
          return r.Fail(where + ".type_id", "must be a whole number from 0 to 255");
        }
        p.type_id = static_cast<std::int64_t>(type_id->get<std::uint64_t>());
      }
      t.single_.push_back(std::move(p));
    }
    if (std::count_if(t.single_.begin(), t.single_.end(),
                      [](const TemplatePiece& p) { return p.sequence; }) != 1) {
      return r.Fail(path + ".single", "must hold the text ($A) exactly once");
    }
    return true;
  }
  return r.Fail(path + ".type",
                "the post-processor '" + KeyForMessage(type) + "' is not implemented by pilot");
}

bool ParseAddedTokens(Reader& r, const json& doc, HfTokenizer& t) {
  const json* list = r.Member(doc, "added_tokens");
  if (!list || list->is_null()) return true;
  if (!list->is_array()) return r.Fail("added_tokens", "must be an array");
  if (list->size() > kMaxAddedTokens) {
    return r.Fail("added_tokens", "holds more than " + std::to_string(kMaxAddedTokens) + " tokens");
  }
  std::size_t bytes = 0;
  for (std::size_t i = 0; i < list->size(); ++i) {
    const json& a = (*list)[i];
    const std::string where = "added_tokens[" + std::to_string(i) + "]";
    AddedToken t2;
    bool single_word = false;
    const json* id = r.Member(a, "id");
    if (!id) return r.Fail(where + ".id", "must be a token id");
    if (!r.Id(*id, where + ".id", t2.id) || !r.String(a, "content", where, t2.content) ||
        !r.Bool(a, "single_word", false, where, single_word) ||
        !r.Bool(a, "lstrip", false, where, t2.lstrip) || !r.Bool(a, "rstrip", false, where, t2.rstrip) ||
        !r.Bool(a, "normalized", true, where, t2.normalized) ||
        !r.Bool(a, "special", false, where, t2.special)) {
      return false;
    }
    if (single_word)
      return r.Fail(where + ".single_word", "an added token with single_word is not implemented by pilot");
    if (t2.content.empty()) return r.Fail(where + ".content", "must not be empty");
    bytes += t2.content.size();
    if (bytes > kMaxAddedTokenBytes) {
      return r.Fail("added_tokens",
                    "hold more than " + std::to_string(kMaxAddedTokenBytes) + " bytes in all");
    }
    t.added_.push_back(std::move(t2));
  }
  return true;
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> ParseTokenizerJson(std::string_view text, const std::string& source) {
  if (text.size() > kMaxTokenizerBytes) {
    return BadInput("the tokenizer file is larger than " + std::to_string(kMaxTokenizerBytes >> 20) + " MiB",
                    source, kHint);
  }
  auto parsed = ParseJson(text, source);
  if (!parsed.ok()) return parsed.error();
  const json& doc = parsed.value();
  auto t = std::make_unique<HfTokenizer>();
  std::vector<Fault> faults;
  Reader r(faults);
  nlohmann::ordered_json normalizers = nlohmann::ordered_json::array();
  nlohmann::ordered_json pre = nlohmann::ordered_json::array();
  std::string post = "none";
  bool ok = true;
  try {
    if (!doc.is_object()) {
      ok = r.Fail("(top)", "must be a JSON object");
    } else {
      ok = ParseAddedTokens(r, doc, *t);
      const json* n = r.Member(doc, "normalizer");
      if (ok && n && !n->is_null()) ok = ParseNormalizer(r, *n, "normalizer", *t, normalizers);
      const json* p = r.Member(doc, "pre_tokenizer");
      if (ok && p && !p->is_null()) ok = ParsePreTokenizer(r, *p, "pre_tokenizer", *t, pre);
      const json* m = r.Member(doc, "model");
      if (ok && (!m || !m->is_object())) ok = r.Fail("model", "must be an object");
      if (ok) ok = ParseModel(r, *m, "model", *t);
      const json* pp = r.Member(doc, "post_processor");
      if (ok && pp && !pp->is_null()) ok = ParsePostProcessor(r, *pp, "post_processor", *t, post);
      const json* dec = r.Member(doc, "decoder");
      if (ok && dec && !dec->is_null()) {
        if (!dec->is_object()) {
          ok = r.Fail("decoder", "must be an object");
        } else {
          ok = r.String(*dec, "type", "decoder", t->decoder_);
        }
      }
    }
  } catch (const std::exception&) {
    ok = r.Fail("(document)", "holds a value of an unexpected type");
  }
  if (ok) {
    t->IndexAddedTokens();
    t->IndexIds();
  }
  if (!ok) {
    const Fault& f = faults.empty() ? Fault{"cannot be read", "(document)"} : faults.front();
    return BadInput("tokenizer key '" + f.path + "': " + f.what, source + " key " + f.path, kHint);
  }
  nlohmann::ordered_json d;
  d["format"] = "tokenizer.json";
  d["model"] = t->model_->Name();
  d["vocab_size"] = t->vocab_.size();
  d["normalizer"] = normalizers;
  d["pre_tokenizer"] = pre;
  d["post_processor"] = post;
  d["added_tokens"] = t->added_.size();
  d["decoder"] = t->decoder_.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(t->decoder_);
  auto version = [](unicode::Version v) { return std::to_string(v.major) + "." + std::to_string(v.minor); };
  d["unicode"] = {{"icu", unicode::IcuUnicodeVersion()},
                  {"normalization", version(tok::kNormalizationUnicode)},
                  {"categories", version(tok::kCategoryUnicode)},
                  {"byte_level_regex", unicode::IcuUnicodeVersion()}};
  t->describe_ = std::move(d);
  return std::unique_ptr<Tokenizer>(std::move(t));
}

std::string Tokenizer::DecodeIds(const std::vector<std::int64_t>& ids) const {
  std::string bytes;
  for (std::int64_t id : ids) bytes += TokenBytes(id);
  return LossyUtf8(bytes);
}

TokenizedText EncodeText(const Tokenizer& tokenizer, const TokenizerSettings& settings,
                         std::string_view text) {
  TokenizedText out;
  std::vector<std::int64_t> content;
  if (!tokenizer.EncodeContent(text, content, out.error)) {
    if (out.error.empty()) out.error = "the tokenizer failed";
    return out;
  }
  const std::size_t specials = settings.add_special_tokens ? tokenizer.SpecialTokenCount() : 0;
  out.tokens = content.size() + specials;
  if (settings.truncation == Truncation::kTruncate && out.tokens > settings.max_length) {
    content.resize(settings.max_length > specials ? settings.max_length - specials : 0);
    out.truncated = true;
  }
  tokenizer.AddSpecialTokens(content, settings.add_special_tokens, out);
  return out;
}

}  // namespace pilot

#include "tokenizer_parts.h"

#include <algorithm>
#include <array>
#include <map>
#include <queue>
#include <stdexcept>
#include <utility>

namespace pilot::tok {
namespace {

using unicode::AppendUtf8;

bool IsBertChinese(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

// BertNormalizer's whitespace: \t \n \r and Rust's char::is_whitespace (White_Space).
bool IsBertWhitespace(char32_t c) { return c == '\t' || c == '\n' || c == '\r' || unicode::IsWhiteSpace(c); }

bool IsBertControl(char32_t c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  return unicode::IsOtherAt(c, kCategoryUnicode) && unicode::AssignedBy(c, kCategoryUnicode);
}

bool IsAsciiPunctuation(char32_t c) {
  return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
         (c >= 0x7B && c <= 0x7E);
}

bool IsBertPunctuation(char32_t c) {
  return IsAsciiPunctuation(c) || unicode::IsPunctuationAt(c, kCategoryUnicode);
}

// Oniguruma's \s (ByteLevel's regex): White_Space.
bool IsRegexSpace(char32_t c) { return unicode::IsWhiteSpace(c); }
bool IsRegexLetter(char32_t c) { return unicode::IsLetterAt(c, kRegexUnicode); }
bool IsRegexNumber(char32_t c) { return unicode::IsNumberAt(c, kRegexUnicode); }

std::array<char32_t, 256> MakeByteChars() {
  std::array<char32_t, 256> table{};
  std::array<bool, 256> direct{};
  for (int b = '!'; b <= '~'; ++b) direct[b] = true;
  for (int b = 0xA1; b <= 0xAC; ++b) direct[b] = true;
  for (int b = 0xAE; b <= 0xFF; ++b) direct[b] = true;
  char32_t next = 256;
  for (int b = 0; b < 256; ++b) table[b] = direct[b] ? static_cast<char32_t>(b) : next++;
  return table;
}

// One GPT-2 regex match starting at i (i < s.size()): its end.
std::size_t Gpt2MatchEnd(const std::u32string& s, std::size_t i) {
  const std::size_t n = s.size();
  const char32_t c = s[i];
  if (c == '\'' && i + 1 < n) {
    const char32_t a = s[i + 1];
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
    if (i + 2 < n) {
      const char32_t b = s[i + 2];
      if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
    }
  }
  const std::size_t j = (c == ' ' && i + 1 < n) ? i + 1 : i;  // the optional leading space
  const char32_t d = s[j];
  if (IsRegexLetter(d)) {
    std::size_t k = j + 1;
    while (k < n && IsRegexLetter(s[k])) ++k;
    return k;
  }
  if (IsRegexNumber(d)) {
    std::size_t k = j + 1;
    while (k < n && IsRegexNumber(s[k])) ++k;
    return k;
  }
  if (!IsRegexSpace(d)) {
    std::size_t k = j + 1;
    while (k < n && !IsRegexSpace(s[k]) && !IsRegexLetter(s[k]) && !IsRegexNumber(s[k])) ++k;
    return k;
  }
  // \s+(?!\S), then \s+ (here s[i] is a space: a lone ' ' before a space or the end, or any
  // other white space).
  std::size_t k = i;
  while (k < n && IsRegexSpace(s[k])) ++k;
  if (k == n) return k;          // the run reaches the end
  if (k - i >= 2) return k - 1;  // leave the last space to the word after it
  return k;                      // a single space before a non-space: \s+
}

}  // namespace

std::optional<unsigned char> CharByte(char32_t c) {
  static const std::unordered_map<char32_t, unsigned char> kBytes = [] {
    std::unordered_map<char32_t, unsigned char> m;
    for (int b = 0; b < 256; ++b) m[ByteChar(static_cast<unsigned char>(b))] = static_cast<unsigned char>(b);
    return m;
  }();
  auto it = kBytes.find(c);
  if (it == kBytes.end()) return std::nullopt;
  return it->second;
}

char32_t ByteChar(unsigned char b) {
  static const std::array<char32_t, 256> table = MakeByteChars();
  return table[b];
}

void BertNormalize(std::u32string& s, const BertNormalizerOptions& o) {
  std::u32string out;
  out.reserve(s.size());
  if (o.clean_text) {
    for (char32_t c : s) {
      if (c == 0 || c == 0xFFFD || IsBertControl(c)) continue;
      out.push_back(IsBertWhitespace(c) ? U' ' : c);
    }
    s.swap(out);
    out.clear();
  }
  if (o.handle_chinese_chars) {
    for (char32_t c : s) {
      if (IsBertChinese(c)) {
        out.push_back(' ');
        out.push_back(c);
        out.push_back(' ');
      } else {
        out.push_back(c);
      }
    }
    s.swap(out);
    out.clear();
  }
  if (o.strip_accents) {
    s = unicode::Normalize(s, unicode::Form::kNfd, kNormalizationUnicode);
    StripNonspacingMarks(s);
  }
  if (o.lowercase) Lowercase(s);
}

void StripNonspacingMarks(std::u32string& s) {
  s.erase(std::remove_if(s.begin(), s.end(),
                         [](char32_t c) { return unicode::IsNonspacingMarkAt(c, kCategoryUnicode); }),
          s.end());
}

void StripMarks(std::u32string& s) {
  s.erase(std::remove_if(s.begin(), s.end(),
                         [](char32_t c) { return unicode::IsMarkAt(c, kNormalizationUnicode); }),
          s.end());
}

void Lowercase(std::u32string& s) {
  std::u32string out;
  out.reserve(s.size());
  for (char32_t c : s) unicode::AppendLower(c, out);
  s.swap(out);
}

void BertPreTokenize(std::vector<std::u32string>& pieces) {
  std::vector<std::u32string> out;
  for (const auto& p : pieces) {
    std::u32string word;
    for (char32_t c : p) {
      if (IsBertWhitespace(c)) {
        if (!word.empty()) out.push_back(std::move(word));
        word.clear();
      } else if (IsBertPunctuation(c)) {
        if (!word.empty()) out.push_back(std::move(word));
        word.clear();
        out.emplace_back(1, c);
      } else {
        word.push_back(c);
      }
    }
    if (!word.empty()) out.push_back(std::move(word));
  }
  pieces.swap(out);
}

void WhitespaceSplit(std::vector<std::u32string>& pieces) {
  std::vector<std::u32string> out;
  for (const auto& p : pieces) {
    std::u32string word;
    for (char32_t c : p) {
      if (unicode::IsWhiteSpace(c)) {
        if (!word.empty()) out.push_back(std::move(word));
        word.clear();
      } else {
        word.push_back(c);
      }
    }
    if (!word.empty()) out.push_back(std::move(word));
  }
  pieces.swap(out);
}

void ByteLevelPreTokenize(std::vector<std::u32string>& pieces, bool add_prefix_space, bool use_regex) {
  std::vector<std::u32string> out;
  std::string utf8;
  for (auto& p : pieces) {
    if (add_prefix_space && (p.empty() || p[0] != ' ')) p.insert(p.begin(), U' ');
    std::size_t i = 0;
    while (i < p.size()) {
      const std::size_t end = use_regex ? Gpt2MatchEnd(p, i) : p.size();
      utf8.clear();
      for (std::size_t k = i; k < end; ++k) AppendUtf8(p[k], utf8);
      std::u32string mapped;
      mapped.reserve(utf8.size());
      for (unsigned char b : utf8) mapped.push_back(ByteChar(b));
      out.push_back(std::move(mapped));
      i = end;
    }
  }
  pieces.swap(out);
}

namespace {

class WordPiece final : public Model {
 public:
  explicit WordPiece(WordPieceOptions o, std::int64_t unk_id) : o_(std::move(o)), unk_id_(unk_id) {
    // No candidate longer than the longest vocabulary entry can match: the search at each
    // place starts there, so a long word costs its length times this, not its length squared.
    for (const auto& [token, id] : o_.vocab) {
      std::size_t chars = 0;
      for (unsigned char b : token) chars += (b & 0xC0) != 0x80;
      longest_ = std::max(longest_, chars);
    }
  }
  const char* Name() const override { return "WordPiece"; }

  void Tokenize(const std::u32string& piece, std::vector<std::int64_t>& out) const override {
    if (piece.empty()) return;
    if (piece.size() > o_.max_input_chars_per_word) {
      out.push_back(unk_id_);
      return;
    }
    const std::size_t mark = out.size();
    std::string sub;
    std::size_t start = 0;
    while (start < piece.size()) {
      std::size_t end = std::min(piece.size(), start + longest_);
      bool found = false;
      while (start < end) {
        sub.clear();
        if (start > 0) sub = o_.prefix;
        for (std::size_t k = start; k < end; ++k) AppendUtf8(piece[k], sub);
        auto it = o_.vocab.find(sub);
        if (it != o_.vocab.end()) {
          out.push_back(it->second);
          found = true;
          break;
        }
        --end;
      }
      if (!found) {
        out.resize(mark);
        out.push_back(unk_id_);
        return;
      }
      start = end;
    }
  }

 private:
  WordPieceOptions o_;
  std::int64_t unk_id_;
  std::size_t longest_ = 0;  // code points of the longest vocabulary entry
};

struct PairHash {
  std::size_t operator()(const std::pair<std::int64_t, std::int64_t>& p) const noexcept {
    return std::hash<std::int64_t>()(p.first * 1000003 + p.second);
  }
};

class Bpe final : public Model {
 public:
  const char* Name() const override { return "BPE"; }

  static std::unique_ptr<Model> Make(BpeOptions o, std::string& error) {
    auto m = std::unique_ptr<Bpe>(new Bpe());
    if (o.unk_token) {
      auto it = o.vocab.find(*o.unk_token);
      if (it == o.vocab.end()) {
        error = "its unk_token is not in the vocabulary";
        return nullptr;
      }
      m->unk_id_ = it->second;
    }
    const std::size_t prefix_len = o.prefix.size();
    for (std::size_t i = 0; i < o.merges.size(); ++i) {
      const auto& [a, b] = o.merges[i];
      auto ia = o.vocab.find(a);
      auto ib = o.vocab.find(b);
      if (ia == o.vocab.end() || ib == o.vocab.end() || b.size() < prefix_len) {
        error = "merge " + std::to_string(i) + " names a token that is not in the vocabulary";
        return nullptr;
      }
      auto inew = o.vocab.find(a + b.substr(prefix_len));
      if (inew == o.vocab.end()) {
        error = "merge " + std::to_string(i) + " makes a token that is not in the vocabulary";
        return nullptr;
      }
      // As in tokenizers, a pair listed twice takes its later rank.
      m->merges_[{ia->second, ib->second}] = {static_cast<std::int64_t>(i), inew->second};
    }
    m->o_ = std::move(o);
    return m;
  }

  void Tokenize(const std::u32string& piece, std::vector<std::int64_t>& out) const override {
    if (piece.empty()) return;
    std::string whole;
    if (o_.ignore_merges) {
      for (char32_t c : piece) AppendUtf8(c, whole);
      auto it = o_.vocab.find(whole);
      if (it != o_.vocab.end()) {
        out.push_back(it->second);
        return;
      }
    }
    std::vector<std::int64_t> symbols;
    symbols.reserve(piece.size());
    std::optional<std::int64_t> pending_unk;
    std::string s;
    for (std::size_t i = 0; i < piece.size(); ++i) {
      s.clear();
      if (i > 0) s = o_.prefix;
      AppendUtf8(piece[i], s);
      if (i + 1 == piece.size()) s += o_.suffix;
      auto it = o_.vocab.find(s);
      if (it != o_.vocab.end()) {
        if (pending_unk) symbols.push_back(*pending_unk);
        pending_unk.reset();
        symbols.push_back(it->second);
        continue;
      }
      if (o_.byte_fallback && ByteFallback(s, symbols)) continue;
      if (unk_id_) {
        if (pending_unk && !o_.fuse_unk) symbols.push_back(*pending_unk);
        pending_unk = *unk_id_;
      }
    }
    if (pending_unk) symbols.push_back(*pending_unk);
    MergeAll(symbols);
    out.insert(out.end(), symbols.begin(), symbols.end());
  }

 private:
  Bpe() = default;

  bool ByteFallback(const std::string& s, std::vector<std::int64_t>& symbols) const {
    static const char* hex = "0123456789ABCDEF";
    std::vector<std::int64_t> ids;
    for (unsigned char b : s) {
      const std::string code = std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">";
      auto it = o_.vocab.find(code);
      if (it == o_.vocab.end()) return false;
      ids.push_back(it->second);
    }
    symbols.insert(symbols.end(), ids.begin(), ids.end());
    return true;
  }

  // tokenizers' Word::merge_all without dropout: the pair of lowest rank first, the leftmost
  // among equals, over a linked list of symbols.
  void MergeAll(std::vector<std::int64_t>& ids) const {
    const std::size_t n = ids.size();
    if (n < 2) return;
    std::vector<std::ptrdiff_t> prev(n), next(n);
    std::vector<bool> gone(n, false);
    for (std::size_t i = 0; i < n; ++i) {
      prev[i] = static_cast<std::ptrdiff_t>(i) - 1;
      next[i] = i + 1 < n ? static_cast<std::ptrdiff_t>(i + 1) : -1;
    }
    struct Entry {
      std::int64_t rank;
      std::size_t pos;
      std::int64_t new_id;
      bool operator>(const Entry& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
    };
    std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> queue;
    for (std::size_t i = 0; i + 1 < n; ++i) {
      auto it = merges_.find({ids[i], ids[i + 1]});
      if (it != merges_.end()) queue.push({it->second.first, i, it->second.second});
    }
    while (!queue.empty()) {
      const Entry top = queue.top();
      queue.pop();
      if (gone[top.pos] || next[top.pos] < 0) continue;
      const auto right = static_cast<std::size_t>(next[top.pos]);
      auto it = merges_.find({ids[top.pos], ids[right]});
      if (it == merges_.end() || it->second.second != top.new_id) continue;
      ids[top.pos] = top.new_id;
      gone[right] = true;
      next[top.pos] = next[right];
      if (next[right] >= 0)
        prev[static_cast<std::size_t>(next[right])] = static_cast<std::ptrdiff_t>(top.pos);
      if (prev[top.pos] >= 0) {
        const auto p = static_cast<std::size_t>(prev[top.pos]);
        auto m = merges_.find({ids[p], ids[top.pos]});
        if (m != merges_.end()) queue.push({m->second.first, p, m->second.second});
      }
      if (next[top.pos] >= 0) {
        auto m = merges_.find({ids[top.pos], ids[static_cast<std::size_t>(next[top.pos])]});
        if (m != merges_.end()) queue.push({m->second.first, top.pos, m->second.second});
      }
    }
    std::size_t w = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (!gone[i]) ids[w++] = ids[i];
    }
    ids.resize(w);
  }

  BpeOptions o_;
  std::optional<std::int64_t> unk_id_;
  std::unordered_map<std::pair<std::int64_t, std::int64_t>, std::pair<std::int64_t, std::int64_t>, PairHash>
      merges_;
};

class Unigram final : public Model {
 public:
  const char* Name() const override { return "Unigram"; }

  static std::unique_ptr<Model> Make(UnigramOptions o, std::string& error) {
    if (o.unk_id && (*o.unk_id < 0 || static_cast<std::size_t>(*o.unk_id) >= o.pieces.size())) {
      error = "its unk_id is past its vocabulary";
      return nullptr;
    }
    auto m = std::unique_ptr<Unigram>(new Unigram());
    double min_score = o.pieces.empty() ? 0 : o.pieces[0].second;
    std::size_t bytes = 1;
    for (const auto& p : o.pieces) bytes += p.first.size();
    m->nodes_.reserve(bytes);  // one node a byte at most: no doubling past what is needed
    for (std::size_t id = 0; id < o.pieces.size(); ++id) {
      const std::string& piece = o.pieces[id].first;
      min_score = std::min(min_score, o.pieces[id].second);
      m->ids_[piece] = static_cast<std::int64_t>(id);  // as tokenizers: a later duplicate wins
      if (piece.empty()) continue;
      std::size_t n = 0;
      for (unsigned char b : piece) {
        std::int32_t child = m->Child(n, b);
        if (child < 0) {
          child = static_cast<std::int32_t>(m->nodes_.size());
          m->nodes_[n].next.emplace_back(b, child);
          m->nodes_.emplace_back();
        }
        n = static_cast<std::size_t>(child);
      }
      m->nodes_[n].id = static_cast<std::int64_t>(id);  // a later duplicate wins here too
    }
    m->unk_score_ = min_score - 10.0;
    m->o_ = std::move(o);
    return m;
  }

  void Tokenize(const std::u32string& piece, std::vector<std::int64_t>& out) const override {
    if (piece.empty()) return;
    std::string s;
    for (char32_t c : piece) AppendUtf8(c, s);
    // best[k]: the best path ending at byte k (k on a character boundary).
    struct Node {
      double score = 0;
      std::int64_t id = -1;
      std::size_t start = 0;
      bool reached = false;
    };
    std::vector<Node> best(s.size() + 1);
    best[0].reached = true;
    std::size_t at = 0;
    for (char32_t c : piece) {
      std::string one;
      AppendUtf8(c, one);
      const std::size_t char_len = one.size();
      const double here = best[at].score;
      bool single = false;
      std::size_t n = 0;
      for (std::size_t k = at; k < s.size(); ++k) {
        const std::int32_t child = Child(n, static_cast<unsigned char>(s[k]));
        if (child < 0) break;
        n = static_cast<std::size_t>(child);
        if (nodes_[n].id < 0) continue;
        const std::size_t end = k + 1;
        if (!IsBoundary(s, end)) continue;  // tokenizers' trie yields whole characters only
        const std::int64_t id = nodes_[n].id;
        const double candidate = o_.pieces[static_cast<std::size_t>(id)].second + here;
        Node& target = best[end];
        if (!target.reached || candidate > target.score) target = {candidate, id, at, true};
        if (end - at == char_len) single = true;
      }
      if (!single) {
        Node& target = best[at + char_len];
        const double candidate = unk_score_ + here;
        if (!target.reached || candidate > target.score) {
          // As tokenizers: an unknown character that wins its place needs an unk_id, whether
          // or not the best path keeps it.
          if (!o_.unk_id)
            throw std::runtime_error("an unknown character, and the Unigram model has no unk_id");
          target = {candidate, *o_.unk_id, at, true};
        }
      }
      at += char_len;
    }
    // Back from the end; consecutive unknowns fuse into one piece (they are contiguous: the
    // run is one substring, [unk_start, unk_end)).
    std::vector<std::string> pieces;
    std::size_t unk_start = 0, unk_end = 0;
    bool in_unknown = false;
    for (std::size_t end = s.size(); end > 0;) {
      const Node& node = best[end];
      if (o_.unk_id && node.id == *o_.unk_id) {
        if (!in_unknown) unk_end = end;
        in_unknown = true;
        unk_start = node.start;
      } else {
        if (in_unknown) pieces.push_back(s.substr(unk_start, unk_end - unk_start));
        in_unknown = false;
        pieces.push_back(s.substr(node.start, end - node.start));
      }
      end = node.start;
    }
    if (in_unknown) pieces.push_back(s.substr(unk_start, unk_end - unk_start));
    for (auto it = pieces.rbegin(); it != pieces.rend(); ++it) {
      auto found = ids_.find(*it);
      if (found != ids_.end()) {
        out.push_back(found->second);
        continue;
      }
      if (o_.byte_fallback && ByteFallback(*it, out)) continue;
      if (!o_.unk_id) throw std::runtime_error("an unknown character, and the Unigram model has no unk_id");
      out.push_back(*o_.unk_id);
    }
  }

 private:
  Unigram() = default;
  static bool IsBoundary(const std::string& s, std::size_t k) {
    return k >= s.size() || (static_cast<unsigned char>(s[k]) & 0xC0) != 0x80;
  }
  bool ByteFallback(const std::string& s, std::vector<std::int64_t>& out) const {
    static const char* hex = "0123456789ABCDEF";
    std::vector<std::int64_t> ids;
    for (unsigned char b : s) {
      const std::string name = std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">";
      auto it = ids_.find(name);
      if (it == ids_.end()) return false;
      ids.push_back(it->second);
    }
    out.insert(out.end(), ids.begin(), ids.end());
    return true;
  }
  std::int32_t Child(std::size_t n, unsigned char b) const {
    for (const auto& [byte, child] : nodes_[n].next) {
      if (byte == b) return child;
    }
    return -1;
  }
  struct TrieNode {
    std::vector<std::pair<unsigned char, std::int32_t>> next;
    std::int64_t id = -1;  // the piece that ends here, or -1
  };
  UnigramOptions o_;
  Vocab ids_;
  std::vector<TrieNode> nodes_{1};
  double unk_score_ = 0;
};

}  // namespace

void MetaspacePreTokenize(std::vector<std::u32string>& pieces, char32_t replacement, bool prepend,
                          bool split) {
  std::vector<std::u32string> out;
  out.reserve(pieces.size());
  for (auto& p : pieces) {
    if (p.empty()) continue;
    for (char32_t& c : p) {
      if (c == U' ') c = replacement;
    }
    if (prepend && p.front() != replacement) p.insert(p.begin(), replacement);
    if (!split) {
      out.push_back(std::move(p));
      continue;
    }
    std::u32string current;
    for (char32_t c : p) {
      if (c == replacement && !current.empty()) {
        out.push_back(std::move(current));
        current.clear();
      }
      current.push_back(c);
    }
    if (!current.empty()) out.push_back(std::move(current));
  }
  pieces = std::move(out);
}

std::unique_ptr<Model> MakeUnigram(UnigramOptions o, std::string& error) {
  return Unigram::Make(std::move(o), error);
}

std::unique_ptr<Model> MakeWordPiece(WordPieceOptions o, std::string& error) {
  auto it = o.vocab.find(o.unk_token);
  if (it == o.vocab.end()) {
    error = "its unk_token is not in the vocabulary";
    return nullptr;
  }
  const std::int64_t unk = it->second;
  return std::make_unique<WordPiece>(std::move(o), unk);
}

std::unique_ptr<Model> MakeBpe(BpeOptions o, std::string& error) { return Bpe::Make(std::move(o), error); }

}  // namespace pilot::tok

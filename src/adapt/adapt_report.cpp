// The renderings of an adaptation's data/report.json: report.md, report.html and the model
// card. The report is read from a folder that may be hostile, so every field is optional
// and typed on read ("—" when missing or wrongly typed), every string is cut to a bounded
// length with its control characters escaped, and every list is capped. The content is
// built once as a small document (headings, paragraphs, tables) and rendered to Markdown or
// HTML, so that escaping happens in one place per format.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "pilot/adapt/adapt_records.h"
#include "pilot/escape.h"
#include "pilot/hash.h"
#include "pilot/utf8.h"

namespace pilot {

namespace {

using J = nlohmann::ordered_json;

constexpr std::size_t kMaxShownLabels = 200;
constexpr std::size_t kMaxShownList = 200;  // reasons, kept checkpoints, trainable names, criteria
constexpr std::size_t kMaxText = 300;       // bytes of one value shown
constexpr std::size_t kMaxCurvePoints = 1000;
const char* const kNone = "—";

// ---- Reading the report: each accessor tolerates a missing or mistyped field.

const J& Field(const J& j, const std::string& key) {
  static const J kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

// A value from the folder as display text: valid UTF-8 only (cut at the first bad byte),
// at most `max` bytes, control characters as \xNN (no value can start a new line).
std::string Clean(std::string_view s, std::size_t max = kMaxText) {
  const Utf8Check check = CheckUtf8(s);
  std::string out = TruncateUtf8(check.valid ? s : s.substr(0, check.offset), max);
  if (!check.valid) out += "\uFFFD";
  return EscapeTerminal(out);
}

std::optional<std::string> Str(const J& j, const char* key) {
  const J& v = Field(j, key);
  if (!v.is_string()) return std::nullopt;
  return Clean(v.get_ref<const std::string&>());
}
std::string Text(const J& j, const char* key) { return Str(j, key).value_or(kNone); }

// The raw string (for comparisons and digests), or empty.
std::string Raw(const J& j, const char* key) {
  const J& v = Field(j, key);
  return v.is_string() ? v.get<std::string>() : std::string();
}

std::optional<double> Num(const J& j, const char* key) {
  const J& v = Field(j, key);
  if (!v.is_number()) return std::nullopt;
  const double d = v.get<double>();
  return std::isfinite(d) ? std::optional<double>(d) : std::nullopt;
}

std::optional<std::uint64_t> CountOf(const J& v) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  if (v.is_number_integer()) {
    const auto i = v.get<std::int64_t>();
    return i >= 0 ? std::optional<std::uint64_t>(static_cast<std::uint64_t>(i)) : std::nullopt;
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && d >= 0 && d < 9.0e15 && std::floor(d) == d) return static_cast<std::uint64_t>(d);
  }
  return std::nullopt;
}
std::optional<std::uint64_t> Count(const J& j, const char* key) { return CountOf(Field(j, key)); }
std::string CountText(const J& j, const char* key) {
  const auto c = Count(j, key);
  return c ? std::to_string(*c) : kNone;
}

std::string Fixed(double v, int digits) { return std::isfinite(v) ? FixedDecimals(v, digits) : kNone; }
std::string General(double v) {
  if (!std::isfinite(v)) return kNone;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}
std::string NumText(const J& j, const char* key) {
  const auto v = Num(j, key);
  return v ? General(*v) : kNone;
}
std::string Percent(std::optional<double> fraction) {
  return fraction ? Fixed(*fraction * 100, 1) + "%" : kNone;
}
// A difference of two fractions in percentage points, signed: "+12.0".
std::string SignedPoints(std::optional<double> diff) {
  if (!diff || !std::isfinite(*diff * 1000)) return kNone;
  double r = std::round(*diff * 1000) / 10;
  if (r == 0) r = 0;  // no "-0.0"
  return (r > 0 ? "+" : "") + Fixed(r, 1);
}
std::string Gain(std::optional<double> gain) {
  const std::string points = SignedPoints(gain);
  return points == kNone ? points : points + " points";
}
std::string Bytes(std::optional<std::uint64_t> b) {
  if (!b) return kNone;
  return Fixed(static_cast<double>(*b) / 1e6, 1) + " MB (" + std::to_string(*b) + " bytes)";
}
std::string Hex(const J& j, const char* key) {
  const std::string s = Raw(j, key);
  return IsSha256Hex(s) ? s : std::string(kNone);
}

// An evaluation summary's accuracy: its "accuracy" when in [0, 1], else correct / total.
std::optional<double> Accuracy(const J& summary) {
  const auto a = Num(summary, "accuracy");
  if (a && *a >= 0 && *a <= 1) return a;
  const auto c = Count(summary, "correct"), t = Count(summary, "total");
  if (!c || !t || *t == 0 || *c > *t) return std::nullopt;
  return static_cast<double>(*c) / static_cast<double>(*t);
}
std::string AccuracyText(const J& summary) {
  const auto a = Accuracy(summary);
  if (!a) return kNone;
  const auto c = Count(summary, "correct"), t = Count(summary, "total");
  return Percent(a) + (c && t ? " (" + std::to_string(*c) + " / " + std::to_string(*t) + ")" : "");
}
std::optional<double> Difference(std::optional<double> after, std::optional<double> before) {
  if (!after || !before) return std::nullopt;
  return *after - *before;
}

// Up to kMaxShownList strings of an array, joined, with the number left out.
std::string JoinStrings(const J& list) {
  if (!list.is_array()) return kNone;
  std::string out;
  std::size_t shown = 0;
  for (const auto& v : list) {
    if (shown == kMaxShownList) break;
    out +=
        (shown++ ? ", " : "") + (v.is_string() ? Clean(v.get_ref<const std::string&>()) : std::string("?"));
  }
  if (list.size() > shown) out += ", … and " + std::to_string(list.size() - shown) + " more";
  return shown ? out : "none";
}

std::string VerdictText(const J& report) {
  const std::string v = Raw(report, "verdict");
  if (v == "accepted") return "accepted: every acceptance criterion is met";
  if (v == "acceptance_unmet") return "acceptance criteria NOT met";
  if (v == "no_criteria") return "no acceptance criteria were set";
  return "unknown (" + Text(report, "verdict") + ")";
}

// ---- The document: blocks of spans and cells; the renderers escape every text.

struct Span {
  enum Style { kPlain, kStrong, kCode };
  std::string text;
  Style style = kPlain;
  Span(std::string t, Style s = kPlain) : text(std::move(t)), style(s) {}  // NOLINT: implicit by design
  Span(const char* t) : text(t) {}                                         // NOLINT
};
Span Strong(std::string t) { return Span(std::move(t), Span::kStrong); }
Span Code(std::string t) { return Span(std::move(t), Span::kCode); }
using Line = std::vector<Span>;

struct Cell {
  std::string text;
  std::optional<double> bar;  // a fraction in [0, 1], drawn as a bar in HTML
  Cell(std::string t, std::optional<double> b = std::nullopt) : text(std::move(t)), bar(b) {}  // NOLINT
  Cell(const char* t) : text(t) {}                                                             // NOLINT
};

struct Block {
  enum Kind { kHeading, kParagraph, kBullets, kTable, kCode, kLossCurve };
  Kind kind = kParagraph;
  int level = 2;            // heading
  std::vector<Line> lines;  // heading, paragraph: one; bullets: one per bullet
  std::vector<std::string> head;
  std::string align;  // table: 'l' or 'r' per column
  std::vector<std::vector<Cell>> rows;
  std::string code;
};

class Doc {
 public:
  void Heading(int level, Line text) { Add(Block::kHeading, level).lines.push_back(std::move(text)); }
  void Paragraph(Line text) { Add(Block::kParagraph).lines.push_back(std::move(text)); }
  void Bullets(std::vector<Line> items) { Add(Block::kBullets).lines = std::move(items); }
  void Table(std::vector<std::string> head, std::string align, std::vector<std::vector<Cell>> rows) {
    Block& b = Add(Block::kTable);
    b.head = std::move(head);
    b.align = std::move(align);
    b.rows = std::move(rows);
  }
  void CodeBlock(std::string code) { Add(Block::kCode).code = std::move(code); }
  void LossCurve() { Add(Block::kLossCurve); }
  const std::vector<Block>& blocks() const { return blocks_; }

 private:
  Block& Add(Block::Kind kind, int level = 2) {
    blocks_.emplace_back();
    blocks_.back().kind = kind;
    blocks_.back().level = level;
    return blocks_.back();
  }
  std::vector<Block> blocks_;
};

// ---- Markdown

bool PlainCodeText(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view(" ._/:-").find(c) != std::string_view::npos;
  });
}

std::string MdLine(const Line& line) {
  std::string out;
  for (const auto& span : line) {
    switch (span.style) {
      case Span::kPlain:
        out += EscapeMarkdown(span.text);
        break;
      case Span::kStrong:
        out += "**" + EscapeMarkdown(span.text) + "**";
        break;
      case Span::kCode:
        out += PlainCodeText(span.text) ? "`" + span.text + "`" : EscapeMarkdown(span.text);
        break;
    }
  }
  return out;
}

std::string RenderMarkdown(const Doc& doc) {
  std::ostringstream s;
  for (const auto& b : doc.blocks()) {
    switch (b.kind) {
      case Block::kHeading:
        s << std::string(static_cast<std::size_t>(b.level), '#') << ' ' << MdLine(b.lines[0]) << "\n\n";
        break;
      case Block::kParagraph:
        s << MdLine(b.lines[0]) << "\n\n";
        break;
      case Block::kBullets:
        for (const auto& l : b.lines) s << "- " << MdLine(l) << '\n';
        s << '\n';
        break;
      case Block::kTable:
        s << '|';
        for (const auto& h : b.head) s << ' ' << EscapeMarkdown(h) << " |";
        s << "\n|";
        for (char a : b.align) s << (a == 'r' ? "---:|" : "---|");
        s << '\n';
        for (const auto& row : b.rows) {
          s << '|';
          for (const auto& c : row) s << ' ' << EscapeMarkdown(c.text) << " |";
          s << '\n';
        }
        s << '\n';
        break;
      case Block::kCode:
        s << "```json\n" << b.code << "\n```\n\n";
        break;
      case Block::kLossCurve:
        s << "The loss of every step is drawn in report.html.\n\n";
        break;
    }
  }
  return s.str();
}

// ---- HTML

std::string HtmlLine(const Line& line) {
  std::string out;
  for (const auto& span : line) {
    switch (span.style) {
      case Span::kPlain:
        out += EscapeHtml(span.text);
        break;
      case Span::kStrong:
        out += "<b>" + EscapeHtml(span.text) + "</b>";
        break;
      case Span::kCode:
        out += "<code>" + EscapeHtml(span.text) + "</code>";
        break;
    }
  }
  return out;
}

// The loss per step as an SVG polyline: x is the step (1..N), y the loss. Non-finite losses
// are skipped; a long run is averaged over runs of consecutive steps to at most
// kMaxCurvePoints points.
std::string LossCurveSvg(const std::vector<double>& losses) {
  std::vector<std::pair<double, double>> finite;  // (step, loss)
  for (std::size_t i = 0; i < losses.size(); ++i) {
    if (std::isfinite(losses[i])) finite.emplace_back(static_cast<double>(i + 1), losses[i]);
  }
  if (finite.empty()) return "<p>No finite training loss was recorded.</p>\n";
  const std::size_t group = (finite.size() + kMaxCurvePoints - 1) / kMaxCurvePoints;
  std::vector<std::pair<double, double>> points;
  for (std::size_t i = 0; i < finite.size(); i += group) {
    const std::size_t n = std::min(group, finite.size() - i);
    double step = 0, loss = 0;  // means, summed as v / n so that huge losses cannot overflow
    for (std::size_t k = i; k < i + n; ++k) {
      step += finite[k].first / static_cast<double>(n);
      loss += finite[k].second / static_cast<double>(n);
    }
    points.emplace_back(step, loss);
  }
  double lo = points[0].second, hi = lo;
  for (const auto& p : points) lo = std::min(lo, p.second), hi = std::max(hi, p.second);
  const double w = 640, h = 280, left = 72, right = 20, top = 30, bottom = 44;
  const double pw = w - left - right, ph = h - top - bottom;
  const double last_step = static_cast<double>(losses.size());
  auto X = [&](double step) { return left + (last_step > 1 ? pw * (step - 1) / (last_step - 1) : pw / 2); };
  // Halves, so that the span of two huge losses cannot overflow.
  auto Y = [&](double v) {
    return top + ph - (hi > lo ? ph * (v / 2 - lo / 2) / (hi / 2 - lo / 2) : ph / 2);
  };
  std::ostringstream s;
  s << "<svg class=\"loss\" role=\"img\" width=\"" << w << "\" height=\"" << h << "\" viewBox=\"0 0 " << w
    << ' ' << h << "\"><title>Training loss per step</title><rect x=\"0\" y=\"0\" width=\"" << w
    << "\" height=\"" << h << "\" fill=\"#ffffff\"/><text x=\"" << left
    << "\" y=\"18\" font-size=\"13\" font-weight=\"bold\">Training loss per step"
    << "</text><line x1=\"" << left << "\" y1=\"" << top + ph << "\" x2=\"" << left + pw << "\" y2=\""
    << top + ph << "\" stroke=\"#333\"/><line x1=\"" << left << "\" y1=\"" << top << "\" x2=\"" << left
    << "\" y2=\"" << top + ph << "\" stroke=\"#333\"/>";
  // Axis labels: the first and last step, the lowest and highest loss drawn.
  s << "<text x=\"" << left << "\" y=\"" << top + ph + 16
    << "\" font-size=\"11\" text-anchor=\"middle\">1</text><text x=\"" << left + pw << "\" y=\""
    << top + ph + 16 << "\" font-size=\"11\" text-anchor=\"middle\">" << losses.size() << "</text><text x=\""
    << left + pw / 2 << "\" y=\"" << h - 8 << "\" font-size=\"12\" text-anchor=\"middle\">step</text>"
    << "<text x=\"" << left - 6 << "\" y=\"" << Fixed(Y(hi) + 4, 1)
    << "\" font-size=\"11\" text-anchor=\"end\">" << General(hi) << "</text><text x=\"" << left - 6
    << "\" y=\"" << Fixed(Y(lo) + 4, 1) << "\" font-size=\"11\" text-anchor=\"end\">" << General(lo)
    << "</text><text x=\"14\" y=\"" << top + ph / 2
    << "\" font-size=\"12\" text-anchor=\"middle\" transform=\"rotate(-90 14 " << top + ph / 2
    << ")\">loss</text>";
  s << "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1.5\" points=\"";
  for (std::size_t i = 0; i < points.size(); ++i) {
    s << (i ? " " : "") << Fixed(X(points[i].first), 1) << ',' << Fixed(Y(points[i].second), 1);
  }
  s << "\"/></svg>\n";
  const std::size_t skipped = losses.size() - finite.size();
  if (group > 1 || skipped > 0) {
    s << "<p class=\"note\">";
    if (group > 1) s << "Each point is the mean of " << group << " consecutive steps. ";
    if (skipped > 0) s << skipped << " non-finite loss(es) skipped.";
    s << "</p>\n";
  }
  return s.str();
}

std::string RenderHtmlDoc(const Doc& doc, const std::string& title, const std::vector<double>& losses) {
  std::ostringstream s;
  s << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" << EscapeHtml(title)
    << "</title><style>body{font-family:sans-serif;margin:24px;color:#222;background:#fff;max-width:1100px}"
       "table{border-collapse:collapse;margin:12px 0}td,th{border:1px solid #ccc;padding:3px "
       "8px;text-align:left}"
       "th{background:#f4f4f4}td.r{text-align:right}pre{background:#f6f6f6;padding:8px;overflow-x:auto}"
       ".bar{display:inline-block;width:120px;height:10px;background:#eee;vertical-align:middle;margin-right:"
       "6px}"
       ".bar span{display:block;height:100%;background:#4c78a8}.note{color:#555}</style></head><body>\n";
  for (const auto& b : doc.blocks()) {
    switch (b.kind) {
      case Block::kHeading:
        s << "<h" << b.level << '>' << HtmlLine(b.lines[0]) << "</h" << b.level << ">\n";
        break;
      case Block::kParagraph:
        s << "<p>" << HtmlLine(b.lines[0]) << "</p>\n";
        break;
      case Block::kBullets:
        s << "<ul>";
        for (const auto& l : b.lines) s << "<li>" << HtmlLine(l) << "</li>";
        s << "</ul>\n";
        break;
      case Block::kTable:
        s << "<table><tr>";
        for (const auto& h : b.head) s << "<th>" << EscapeHtml(h) << "</th>";
        s << "</tr>\n";
        for (const auto& row : b.rows) {
          s << "<tr>";
          for (std::size_t i = 0; i < row.size(); ++i) {
            s << (i < b.align.size() && b.align[i] == 'r' ? "<td class=\"r\">" : "<td>");
            if (row[i].bar) {
              s << "<span class=\"bar\"><span style=\"width:"
                << Fixed(std::clamp(*row[i].bar, 0.0, 1.0) * 100, 1) << "%\"></span></span>";
            }
            s << EscapeHtml(row[i].text) << "</td>";
          }
          s << "</tr>\n";
        }
        s << "</table>\n";
        break;
      case Block::kCode:
        s << "<pre><code>" << EscapeHtml(b.code) << "</code></pre>\n";
        break;
      case Block::kLossCurve:
        s << LossCurveSvg(losses);
        break;
    }
  }
  s << "</body></html>\n";
  return s.str();
}

// ---- Content shared by the report and the card

// Items, used and rejected of one side (train or eval), and the rejections by reason.
void Accounting(Doc& doc, const J& side, const char* used_key, const char* used_title) {
  doc.Table({"items", used_title, "rejected"}, "rrr",
            {{CountText(side, "items"), CountText(side, used_key), CountText(side, "rejected")}});
  const J& reasons = Field(side, "reasons");
  if (!reasons.is_object() || reasons.empty()) return;
  std::vector<std::vector<Cell>> rows;
  for (auto it = reasons.begin(); it != reasons.end() && rows.size() < kMaxShownList; ++it) {
    const auto n = CountOf(it.value());
    rows.push_back({Clean(it.key()), n ? std::to_string(*n) : std::string(kNone)});
  }
  doc.Table({"rejected by reason", "items"}, "lr", std::move(rows));
  if (reasons.size() > kMaxShownList) {
    doc.Paragraph({"… and " + std::to_string(reasons.size() - kMaxShownList) + " more reasons, not shown."});
  }
}

// Label, items, base and adapted accuracy, change: the union of both summaries' labels,
// sorted, at most kMaxShownLabels.
void PerLabel(Doc& doc, const J& evaluation) {
  const J& base = Field(Field(evaluation, "base"), "per_label");
  const J& adapted = Field(Field(evaluation, "adapted"), "per_label");
  std::set<std::string> labels;
  for (const J* side : {&base, &adapted}) {
    if (!side->is_object()) continue;
    for (auto it = side->begin(); it != side->end(); ++it) labels.insert(it.key());
  }
  if (labels.empty()) {
    doc.Paragraph({"No per-label figures were recorded."});
    return;
  }
  std::vector<std::vector<Cell>> rows;
  for (const auto& label : labels) {
    if (rows.size() == kMaxShownLabels) break;
    const J& b = Field(base, label);
    const J& a = Field(adapted, label);
    const auto before = Accuracy(b), after = Accuracy(a);
    const std::string items = Count(a, "total") ? CountText(a, "total") : CountText(b, "total");
    rows.push_back({Clean(label), items, Cell(Percent(before), before), Cell(Percent(after), after),
                    SignedPoints(Difference(after, before))});
  }
  doc.Table({"label", "items", "base accuracy", "adapted accuracy", "change (points)"}, "lrrrr",
            std::move(rows));
  if (labels.size() > kMaxShownLabels) {
    doc.Paragraph({"… and " + std::to_string(labels.size() - kMaxShownLabels) + " more labels, not shown."});
  }
}

std::string Epochs(const J& training) {
  if (!training.is_object()) return kNone;
  return Field(training, "epochs").is_null() ? std::string("— (a step count was given)")
                                             : CountText(training, "epochs");
}

// The stage parameters that run the adapted model with `pilot run`, as one JSON line.
std::string RunSnippet(const J& report) {
  const J& model = Field(report, "adapted_model");
  std::string rel = Raw(model, "path");
  if (rel.empty() || rel.size() > 1000 || rel[0] == '/') rel = kAdaptModel;
  const std::string sha = Raw(model, "sha256");
  auto quoted = [](const std::string& v) { return J(v).dump(-1, ' ', false, J::error_handler_t::replace); };
  // dump() escapes quotes and control characters, so a value cannot end the string or the code block.
  return "\"stage\": {\"kind\": \"torchscript-classifier\", \"model\": " +
         quoted("<path to the folder>/" + rel) +
         ", \"model_sha256\": " + quoted(IsSha256Hex(sha) ? sha : "<the sha256 of the adapted model>") + "}";
}

Doc ReportDoc(const J& report) {
  Doc doc;
  const J& evaluation = Field(report, "evaluation");
  const J& base = Field(evaluation, "base");
  const J& adapted = Field(evaluation, "adapted");
  const auto gain = Num(evaluation, "gain");
  doc.Heading(1, {"Adaptation ", Text(report, "run_id")});
  doc.Paragraph({"On the evaluation set, the base model scored ", Strong(AccuracyText(base)),
                 " and the adapted model ", Strong(AccuracyText(adapted)), ": a gain of ", Strong(Gain(gain)),
                 ". Verdict: ", Strong(VerdictText(report)), "."});
  if (Raw(report, "state") != "finished") {
    doc.Paragraph({"State: ", Strong(Text(report, "state")),
                   ". The adaptation has not finished; figures may be partial."});
  }
  doc.Heading(2, {"Training data"});
  Accounting(doc, Field(report, "train"), "used", "used");
  doc.Heading(2, {"Evaluation data"});
  Accounting(doc, Field(report, "eval"), "evaluated", "evaluated");
  doc.Heading(2, {"Accuracy per label, before and after"});
  PerLabel(doc, evaluation);

  const J& t = Field(report, "training");
  doc.Heading(2, {"Training settings"});
  doc.Table({"setting", "value"}, "ll",
            {{"optimiser", Text(t, "optimiser")},
             {"learning rate", NumText(t, "learning_rate")},
             {"momentum", NumText(t, "momentum")},
             {"weight decay", NumText(t, "weight_decay")},
             {"batch size", CountText(t, "batch_size")},
             {"steps", CountText(t, "steps")},
             {"epochs", Epochs(t)},
             {"steps per epoch", CountText(t, "steps_per_epoch")},
             {"seed", CountText(t, "seed")},
             {"threads", CountText(t, "threads")},
             {"device", Text(t, "device")},
             {"dtype", Text(t, "dtype")},
             {"trainable", JoinStrings(Field(t, "trainable"))},
             {"trainable values", CountText(t, "trainable_values")},
             {"training seconds", NumText(t, "seconds")},
             {"steps per second", NumText(t, "steps_per_second")},
             {"sessions", CountText(t, "sessions")},
             {"libtorch", Text(t, "libtorch")}});

  const J& loss = Field(report, "loss");
  doc.Heading(2, {"Loss"});
  doc.Table({"first step", "last step", "steps"}, "rrr",
            {{NumText(loss, "first"), NumText(loss, "last"), CountText(loss, "steps")}});
  doc.LossCurve();

  const J& c = Field(report, "checkpoints");
  const auto mean_ms = Num(c, "mean_write_ms"), max_ms = Num(c, "max_write_ms");
  doc.Heading(2, {"Checkpoints"});
  doc.Table({"", "value"}, "ll",
            {{"every (steps)", CountText(c, "every")},
             {"written", CountText(c, "written")},
             {"kept", JoinStrings(Field(c, "kept"))},
             {"pruned", CountText(c, "pruned")},
             {"best", Text(c, "best") + " (step " + CountText(c, "best_step") + ")"},
             {"mean write", mean_ms ? Fixed(*mean_ms, 1) + " ms" : kNone},
             {"max write", max_ms ? Fixed(*max_ms, 1) + " ms" : kNone},
             {"size of the kept checkpoints", Bytes(Count(c, "bytes"))}});

  const J& model = Field(report, "adapted_model");
  const J& base_model = Field(report, "base_model");
  const J& data = Field(report, "data");
  doc.Heading(2, {"Adapted model"});
  doc.Table({"", "value"}, "ll",
            {{"adapted model", Text(model, "path")},
             {"sha256", Hex(model, "sha256")},
             {"size", Bytes(Count(model, "bytes"))},
             {"base model", Text(base_model, "path")},
             {"base model sha256", Hex(base_model, "sha256")},
             {"training manifest sha256", Hex(data, "train_manifest_sha256")},
             {"evaluation manifest sha256", Hex(data, "eval_manifest_sha256")},
             {"training accounting sha256", Hex(data, "train_accounting_sha256")},
             {"final parameters digest", Hex(report, "final_params_digest")}});
  doc.Paragraph(
      {"To run the adapted model with ", Code("pilot run"), ", put this stage in the run parameters:"});
  doc.CodeBlock(RunSnippet(report));

  doc.Heading(2, {"Acceptance"});
  const J& criteria = Field(Field(report, "acceptance"), "criteria");
  if (criteria.is_array() && !criteria.empty()) {
    std::vector<std::vector<Cell>> rows;
    for (const auto& k : criteria) {
      if (rows.size() == kMaxShownList) break;
      const J& met = Field(k, "met");
      rows.push_back({Text(k, "name"), NumText(k, "threshold"), NumText(k, "value"),
                      met.is_boolean() ? (met.get<bool>() ? "yes" : "NO") : kNone});
    }
    doc.Table({"criterion", "threshold", "value", "met"}, "lrrl", std::move(rows));
  } else {
    doc.Paragraph({"No acceptance criteria were set."});
  }
  doc.Paragraph({"Verdict: ", Strong(VerdictText(report)), "."});
  doc.Paragraph({"Written by pilot ", Text(report, "pilot_version"), " (revision ",
                 Text(report, "pilot_revision"), ")."});
  return doc;
}

Line Bullet(std::string key, std::string value) { return {std::move(key) + ": ", std::move(value)}; }
Line HexBullet(std::string key, const J& j, const char* field) {
  const std::string hex = Hex(j, field);
  return {std::move(key) + ": ", hex == kNone ? Span(hex) : Code(hex)};
}

Doc CardDoc(const J& report) {
  Doc doc;
  const J& model = Field(report, "adapted_model");
  const J& base_model = Field(report, "base_model");
  const J& data = Field(report, "data");
  const J& t = Field(report, "training");
  const J& evaluation = Field(report, "evaluation");
  const J& loss = Field(report, "loss");
  doc.Heading(1, {"Model card: adapted model"});
  doc.Paragraph({"Generated by ", Code("pilot adapt"), " (pilot ", Text(report, "pilot_version"),
                 ") for run ", Text(report, "run_id"), "."});
  doc.Heading(2, {"Model"});
  // The "- sha256: `<hex>`" line must come first: ModelCardSha256 reads the first such line.
  doc.Bullets({HexBullet("sha256", model, "sha256"), Bullet("file", Text(model, "path")),
               Bullet("size", Bytes(Count(model, "bytes"))), Bullet("base model", Text(base_model, "path")),
               HexBullet("base model sha256", base_model, "sha256"),
               HexBullet("training manifest sha256", data, "train_manifest_sha256"),
               HexBullet("evaluation manifest sha256", data, "eval_manifest_sha256"),
               HexBullet("final parameters digest", report, "final_params_digest")});
  doc.Heading(2, {"Training"});
  doc.Bullets({Bullet("optimiser", Text(t, "optimiser")),
               Bullet("learning rate", NumText(t, "learning_rate")),
               Bullet("momentum", NumText(t, "momentum")), Bullet("weight decay", NumText(t, "weight_decay")),
               Bullet("batch size", CountText(t, "batch_size")), Bullet("steps", CountText(t, "steps")),
               Bullet("epochs", Epochs(t)),
               Bullet("trainable", JoinStrings(Field(t, "trainable")) + " (" +
                                       CountText(t, "trainable_values") + " values)"),
               Bullet("dtype", Text(t, "dtype")), Bullet("device", Text(t, "device")),
               Bullet("threads", CountText(t, "threads")), Bullet("seed", CountText(t, "seed")),
               Bullet("training items used", CountText(Field(report, "train"), "used") + " of " +
                                                 CountText(Field(report, "train"), "items"))});
  doc.Heading(2, {"Metrics"});
  doc.Bullets({Bullet("evaluation items", CountText(Field(report, "eval"), "evaluated") + " of " +
                                              CountText(Field(report, "eval"), "items")),
               Bullet("base model accuracy", AccuracyText(Field(evaluation, "base"))),
               Bullet("adapted model accuracy", AccuracyText(Field(evaluation, "adapted"))),
               Bullet("gain", Gain(Num(evaluation, "gain"))),
               Bullet("loss", "first step " + NumText(loss, "first") + ", last step " +
                                  NumText(loss, "last") + " (" + CountText(loss, "steps") + " steps)"),
               Bullet("verdict", VerdictText(report))});
  PerLabel(doc, evaluation);
  doc.Heading(2, {"Provenance"});
  doc.Bullets({Bullet("pilot version", Text(report, "pilot_version")),
               Bullet("pilot revision", Text(report, "pilot_revision")),
               Bullet("run id", Text(report, "run_id"))});
  doc.Heading(2, {"Limits"});
  doc.Bullets(
      {{"Evaluated only on the evaluation set bundled in the adaptation folder; accuracy on other data is "
        "unknown."},
       {"Bitwise reproducible on CPU with the same thread count, seed and libtorch; not across GPU runs."}});
  return doc;
}

}  // namespace

std::string RenderAdaptMarkdown(const nlohmann::ordered_json& report) {
  return RenderMarkdown(ReportDoc(report));
}

std::string RenderAdaptHtml(const nlohmann::ordered_json& report, const std::vector<double>& losses) {
  return RenderHtmlDoc(ReportDoc(report), "pilot adapt " + Text(report, "run_id"), losses);
}

std::string RenderAdaptModelCard(const nlohmann::ordered_json& report) {
  return RenderMarkdown(CardDoc(report));
}

std::optional<std::string> ModelCardSha256(std::string_view card) {
  constexpr std::string_view kPrefix = "- sha256: `";
  for (std::size_t start = 0; start < card.size();) {
    std::size_t end = card.find('\n', start);
    if (end == std::string_view::npos) end = card.size();
    const std::string_view line = card.substr(start, end - start);
    if (line.substr(0, kPrefix.size()) == kPrefix) {
      const std::size_t close = line.find('`', kPrefix.size());
      if (close == std::string_view::npos) return std::nullopt;
      const std::string_view hex = line.substr(kPrefix.size(), close - kPrefix.size());
      if (!IsSha256Hex(hex)) return std::nullopt;
      return std::string(hex);
    }
    start = end + 1;
  }
  return std::nullopt;
}

}  // namespace pilot

#include "pilot/precheck.h"

#include "pilot/hash.h"
#include "pilot/paths.h"
#include "pilot/reasons.h"
#include "pilot/utf8.h"

namespace pilot {

Precheck PrecheckItem(FileSystem& fs, const std::filesystem::path& root, const ManifestItem& item,
                      std::uint64_t max_bytes, InputKind input) {
  Precheck out;
  auto reject = [&](std::string_view reason, std::string detail) {
    out.rejection = ResultRecord::Rejected(item.id, reason, std::move(detail));
    return out;
  };
  ConfinedPath where = ConfinePath(fs, root, item.path);
  if (!where.inside) return reject(reason::kPathOutsideRoot, where.why);

  auto stat = fs.Stat(where.resolved);
  if (!stat.ok()) return reject(reason::kUnreadable, stat.error().what);
  if (!stat.value().exists) return reject(reason::kMissingFile, "no file at '" + item.path + "'");
  if (!stat.value().regular) return reject(reason::kUnreadable, "'" + item.path + "' is not a regular file");
  if (stat.value().size > max_bytes) {
    return reject(reason::kTooLarge, std::to_string(stat.value().size) + " bytes exceeds limits.max_bytes " +
                                         std::to_string(max_bytes));
  }
  auto bytes = fs.ReadFile(where.resolved, max_bytes);
  if (!bytes.ok()) return reject(reason::kUnreadable, bytes.error().what);
  if (bytes.value().size() > max_bytes) {  // it grew after the size check: never read past the cap
    return reject(reason::kTooLarge, "more than limits.max_bytes " + std::to_string(max_bytes) +
                                         " bytes (the file grew while it was being read)");
  }
  std::string digest = Sha256Hex(bytes.value());
  if (digest != item.sha256) {
    return reject(reason::kInputChanged, "sha256 is " + digest + ", the manifest pins " + item.sha256);
  }
  const std::string& text = bytes.value();
  if (input == InputKind::kBytes) {
    if (text.empty()) return reject(reason::kEmptyInput, "the file is empty");
    out.text = std::move(bytes).value();
    return out;
  }
  if (text.find_first_not_of(" \t\r\n\f\v") == std::string::npos) {
    return reject(reason::kEmptyInput, text.empty() ? "the file is empty" : "the file holds only whitespace");
  }
  Utf8Check utf8 = CheckUtf8(text);
  if (!utf8.valid) return reject(reason::kInvalidEncoding, utf8.detail);
  out.text = std::move(bytes).value();
  return out;
}

}  // namespace pilot

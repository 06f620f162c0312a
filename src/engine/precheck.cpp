#include "pilot/precheck.h"

#include "pilot/fs.h"
#include "pilot/hash.h"
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
  // Opened once, never leaving the manifest's folder (a link swapped in meanwhile cannot lead
  // out), then sized, read and hashed through that one descriptor.
  BeneathOpen opened = fs.OpenBeneath(root, item.path);
  switch (opened.failure) {
    case BeneathOpen::Failure::kNone:
      break;
    case BeneathOpen::Failure::kOutside:
      return reject(reason::kPathOutsideRoot, opened.detail);
    case BeneathOpen::Failure::kMissing:
      return reject(reason::kMissingFile, opened.detail);
    case BeneathOpen::Failure::kNotRegular:
    case BeneathOpen::Failure::kUnreadable:
      return reject(reason::kUnreadable, opened.detail);
  }
  ReadableFile& file = *opened.file;
  if (file.size() > max_bytes) {
    return reject(reason::kTooLarge, std::to_string(file.size()) + " bytes exceeds limits.max_bytes " +
                                         std::to_string(max_bytes));
  }
  auto bytes = ReadAllCapped(file, max_bytes);
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

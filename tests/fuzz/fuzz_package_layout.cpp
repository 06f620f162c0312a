// Fuzzes ListZipEntries + CheckPackageLayout (a .pt2 package's central directory, read before
// libtorch's loader unpacks it): never throws or reads out of bounds; an accepted package
// has at least two entries, none of whose names could leave the folder it is unpacked in.
// Also ReadTorchArchiveFacts and ReadStoredZipEntry over the same bytes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "fuzz_check.h"
#include "pilot/fs.h"
#include "pilot/package_layout.h"

namespace {

class BytesFile : public pilot::ReadableFile {
 public:
  BytesFile(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  pilot::Result<std::size_t> ReadAt(std::uint64_t offset, char* buf, std::size_t n) override {
    if (offset >= size_) return std::size_t{0};
    n = std::min<std::size_t>(n, size_ - static_cast<std::size_t>(offset));
    std::memcpy(buf, data_ + offset, n);
    return n;
  }
  std::uint64_t size() const override { return size_; }
  const std::filesystem::path& path() const override { return path_; }

 private:
  const uint8_t* data_;
  size_t size_;
  std::filesystem::path path_ = "fuzz.pt2";
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pilot;
  BytesFile file(data, size);
  // The same bytes as a TorchScript archive (a model that did not load): only short,
  // printable facts come back, and an entry read is within the file.
  const TorchArchiveFacts facts = ReadTorchArchiveFacts(file, "fuzz.pt");
  if (facts.format_version) {
    PILOT_FUZZ_CHECK(!facts.format_version->empty() && facts.format_version->size() <= 16);
    PILOT_FUZZ_CHECK(facts.format_version->find_first_not_of("0123456789") == std::string::npos);
  }
  if (facts.saved_by) {
    PILOT_FUZZ_CHECK(!facts.saved_by->empty() && facts.saved_by->size() <= 64);
    for (unsigned char c : *facts.saved_by) PILOT_FUZZ_CHECK(c > 0x20 && c < 0x7f);
  }
  auto entries = ListZipEntries(file, "fuzz.pt2");
  if (!entries.ok()) {
    PILOT_FUZZ_CHECK(!entries.error().what.empty());
    return 0;
  }
  PILOT_FUZZ_CHECK(entries.value().size() <= kMaxPackageEntries);
  Status st = CheckPackageLayout(entries.value(), "fuzz.pt2");
  if (!st.ok()) return 0;
  PILOT_FUZZ_CHECK(entries.value().size() >= 2);
  for (const auto& e : entries.value()) {
    PILOT_FUZZ_CHECK(!e.name.empty() && e.name[0] != '/');
    // No component is "." or ".." (split here independently of the library).
    std::size_t start = 0;
    while (start <= e.name.size()) {
      std::size_t end = std::min(e.name.find('/', start), e.name.size());
      const std::string part = e.name.substr(start, end - start);
      PILOT_FUZZ_CHECK(part != "." && part != "..");
      start = end + 1;
    }
    PILOT_FUZZ_CHECK(e.name.find('\\') == std::string::npos);
    auto bytes = ReadStoredZipEntry(file, e, 4096, "fuzz.pt2");
    if (bytes.ok())
      PILOT_FUZZ_CHECK(bytes.value().size() == e.uncompressed_size && e.uncompressed_size <= size);
  }
  return 0;
}

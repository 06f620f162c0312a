#include "pilot/package_layout.h"

#include <algorithm>
#include <set>

#include "pilot/fs.h"

namespace pilot {
namespace {

constexpr std::uint32_t kEocdSig = 0x06054b50, kZip64LocatorSig = 0x07064b50, kZip64EocdSig = 0x06064b50,
                        kCentralSig = 0x02014b50;
constexpr std::size_t kEocdSize = 22, kCentralSize = 46;

std::uint64_t Le(const unsigned char* p, int bytes) {
  std::uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

Error NotZip(const std::string& where, const std::string& what) {
  return BadInput("the .pt2 package is not a readable ZIP archive: " + what, where,
                  "give a package written by torch._inductor.aoti_compile_and_package");
}

// Reads exactly n bytes at offset (the caller checked the bounds).
Status ReadExact(ReadableFile& file, std::uint64_t offset, unsigned char* buf, std::size_t n,
                 const std::string& where) {
  std::size_t done = 0;
  while (done < n) {
    auto got = file.ReadAt(offset + done, reinterpret_cast<char*>(buf) + done, n - done);
    if (!got.ok()) return got.error();
    if (got.value() == 0) return NotZip(where, "the file ended early");
    done += got.value();
  }
  return {};
}

bool BadName(const std::string& name) {
  if (name.empty() || name.size() > 1024 || name[0] == '/') return true;
  for (unsigned char c : name) {
    if (c < 0x20 || c == 0x7f || c == '\\') return true;
  }
  std::size_t start = 0;
  while (start <= name.size()) {
    std::size_t end = name.find('/', start);
    if (end == std::string::npos) end = name.size();
    std::string_view part(name.data() + start, end - start);
    if (part == "." || part == "..") return true;
    start = end + 1;
  }
  return false;
}

bool EndsWith(const std::string& s, std::string_view tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

Result<std::vector<ZipEntry>> ListZipEntries(ReadableFile& file, const std::string& where) {
  const std::uint64_t size = file.size();
  if (size < kEocdSize) return NotZip(where, "too short");
  // The end record: within the last 22 + 65535 (its comment) bytes.
  const std::uint64_t tail_len = std::min<std::uint64_t>(size, kEocdSize + 0xFFFF);
  std::vector<unsigned char> tail(tail_len);
  PILOT_TRY(ReadExact(file, size - tail_len, tail.data(), tail.size(), where));
  // The end record: the signature nearest the end with room for the record after it, as
  // miniz (libtorch's ZIP reader) finds it; its comment must then run exactly to the end.
  // A second, different reading of the archive is never left for miniz to find.
  std::int64_t eocd = -1;
  for (std::int64_t i = static_cast<std::int64_t>(tail_len - kEocdSize); i >= 0; --i) {
    if (Le(&tail[static_cast<std::size_t>(i)], 4) == kEocdSig) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) return NotZip(where, "no end-of-central-directory record");
  const unsigned char* e = &tail[static_cast<std::size_t>(eocd)];
  if (static_cast<std::uint64_t>(eocd) + kEocdSize + Le(e + 20, 2) != tail_len) {
    return NotZip(where, "the end record's comment does not end with the file");
  }
  const std::uint64_t eocd_pos = size - tail_len + static_cast<std::uint64_t>(eocd);
  std::uint64_t count = Le(e + 10, 2), cd_size = Le(e + 12, 4), cd_offset = Le(e + 16, 4);
  const bool sentinel = count == 0xFFFF || cd_size == 0xFFFFFFFF || cd_offset == 0xFFFFFFFF;
  // ZIP64: miniz uses a locator just before the end record, and the ZIP64 end record it
  // points at, whenever both are there, sentinels or not. So does pilot, and it refuses an
  // end record whose plain fields disagree with the ZIP64 ones.
  bool zip64 = false;
  if (eocd_pos >= 20) {
    unsigned char loc[20];
    PILOT_TRY(ReadExact(file, eocd_pos - 20, loc, sizeof loc, where));
    const std::uint64_t z64 = Le(loc + 8, 8);
    unsigned char rec[56];
    if (Le(loc, 4) == kZip64LocatorSig && z64 <= size && size - z64 >= sizeof rec) {
      PILOT_TRY(ReadExact(file, z64, rec, sizeof rec, where));
      if (Le(rec, 4) == kZip64EocdSig) {
        zip64 = true;
        const std::uint64_t c64 = Le(rec + 32, 8), s64 = Le(rec + 40, 8), o64 = Le(rec + 48, 8);
        if ((count != 0xFFFF && count != c64) || (cd_size != 0xFFFFFFFF && cd_size != s64) ||
            (cd_offset != 0xFFFFFFFF && cd_offset != o64)) {
          return NotZip(where, "the end record and the ZIP64 end record disagree");
        }
        count = c64;
        cd_size = s64;
        cd_offset = o64;
      }
    }
  }
  if (sentinel && !zip64) return NotZip(where, "a ZIP64 archive without its ZIP64 end record");
  if (count > kMaxPackageEntries) {
    return BadInput("the .pt2 package lists " + std::to_string(count) + " entries, more than " +
                        std::to_string(kMaxPackageEntries),
                    where);
  }
  if (cd_offset > size || cd_size > size - cd_offset)
    return NotZip(where, "the central directory is out of bounds");
  if (cd_size > kMaxCentralDirectoryBytes) {
    return BadInput("the .pt2 package's central directory is " + std::to_string(cd_size) +
                        " bytes, more than " + std::to_string(kMaxCentralDirectoryBytes),
                    where);
  }
  std::vector<unsigned char> cd(static_cast<std::size_t>(cd_size));
  PILOT_TRY(ReadExact(file, cd_offset, cd.data(), cd.size(), where));
  std::vector<ZipEntry> entries;
  entries.reserve(static_cast<std::size_t>(count));
  std::size_t pos = 0;
  for (std::uint64_t k = 0; k < count; ++k) {
    if (cd.size() - pos < kCentralSize || Le(&cd[pos], 4) != kCentralSig) {
      return NotZip(where, "central directory entry " + std::to_string(k) + " is damaged");
    }
    const unsigned char* h = &cd[pos];
    const std::size_t name_len = Le(h + 28, 2), extra_len = Le(h + 30, 2), comment_len = Le(h + 32, 2);
    if (cd.size() - pos - kCentralSize < name_len + extra_len + comment_len) {
      return NotZip(where, "central directory entry " + std::to_string(k) + " is truncated");
    }
    ZipEntry entry;
    entry.name.assign(reinterpret_cast<const char*>(h + kCentralSize), name_len);
    entry.compression = static_cast<std::uint16_t>(Le(h + 10, 2));
    entry.compressed_size = Le(h + 20, 4);
    entry.uncompressed_size = Le(h + 24, 4);
    entry.local_offset = Le(h + 42, 4);
    if (entry.uncompressed_size == 0xFFFFFFFF || entry.compressed_size == 0xFFFFFFFF ||
        entry.local_offset == 0xFFFFFFFF) {
      // The ZIP64 extra field (id 1) holds, in this order, the 8-byte uncompressed size,
      // compressed size and local header offset, each only where the plain field is saturated.
      const unsigned char* x = h + kCentralSize + name_len;
      bool found = false;
      for (std::size_t i = 0; i + 4 <= extra_len;) {
        const std::size_t id = Le(x + i, 2), len = Le(x + i + 2, 2);
        if (i + 4 + len > extra_len) break;
        if (id == 1) {
          std::size_t at = i + 4;
          found = true;
          for (std::uint64_t* field :
               {&entry.uncompressed_size, &entry.compressed_size, &entry.local_offset}) {
            if (*field != 0xFFFFFFFF) continue;
            if (at + 8 > i + 4 + len) {
              found = false;
              break;
            }
            *field = Le(x + at, 8);
            at += 8;
          }
          break;
        }
        i += 4 + len;
      }
      if (!found) return NotZip(where, "entry " + std::to_string(k) + " lacks its ZIP64 sizes");
    }
    entries.push_back(std::move(entry));
    pos += kCentralSize + name_len + extra_len + comment_len;
  }
  return entries;
}

Result<std::string> ReadStoredZipEntry(ReadableFile& file, const ZipEntry& entry, std::uint64_t max_bytes,
                                       const std::string& where) {
  constexpr std::uint32_t kLocalSig = 0x04034b50;
  constexpr std::size_t kLocalSize = 30;
  if (entry.compression != 0 || entry.compressed_size != entry.uncompressed_size) {
    return BadInput("the archive entry is compressed (pilot reads only stored ones)", where);
  }
  if (entry.uncompressed_size > max_bytes) {
    return BadInput("the archive entry holds " + std::to_string(entry.uncompressed_size) +
                        " bytes, more than " + std::to_string(max_bytes),
                    where);
  }
  if (entry.local_offset > file.size() || file.size() - entry.local_offset < kLocalSize) {
    return NotZip(where, "an entry's local header lies past the end of the file");
  }
  unsigned char h[kLocalSize];
  PILOT_TRY(ReadExact(file, entry.local_offset, h, kLocalSize, where));
  if (Le(h, 4) != kLocalSig) return NotZip(where, "an entry's local header is damaged");
  const std::uint64_t data = entry.local_offset + kLocalSize + Le(h + 26, 2) + Le(h + 28, 2);
  if (data > file.size() || file.size() - data < entry.uncompressed_size) {
    return NotZip(where, "an entry's data lies past the end of the file");
  }
  std::string out(static_cast<std::size_t>(entry.uncompressed_size), '\0');
  PILOT_TRY(ReadExact(file, data, reinterpret_cast<unsigned char*>(out.data()), out.size(), where));
  return out;
}

TorchArchiveFacts ReadTorchArchiveFacts(ReadableFile& file, const std::string& where) {
  TorchArchiveFacts facts;
  auto entries = ListZipEntries(file, where);
  if (!entries.ok()) return facts;
  facts.zip = true;
  // "<archive>/version" (torch 1.x) or "<archive>/.data/version" (2.x): a decimal number;
  // "<archive>/extra/torch_version": what the documented export stores (docs/models.md).
  auto small = [&](const ZipEntry& e, std::size_t cap) -> std::optional<std::string> {
    auto text = ReadStoredZipEntry(file, e, cap, where);
    if (!text.ok()) return std::nullopt;
    std::string v = text.value();
    while (!v.empty() && (v.back() == '\n' || v.back() == '\r' || v.back() == ' ')) v.pop_back();
    if (v.empty()) return std::nullopt;
    for (unsigned char c : v)
      if (c < 0x21 || c > 0x7e) return std::nullopt;  // printable ASCII alone: a number, a version
    return v;
  };
  for (const ZipEntry& e : entries.value()) {
    const auto slash = e.name.find('/');
    if (slash == std::string::npos) continue;
    const std::string rest = e.name.substr(slash + 1);
    if (rest == "version" || rest == ".data/version") {
      auto v = small(e, 16);
      if (v && v->find_first_not_of("0123456789") == std::string::npos) facts.format_version = *v;
    } else if (rest == "extra/torch_version") {
      facts.saved_by = small(e, 64);
    }
  }
  return facts;
}

std::string DescribeTorchArchive(const TorchArchiveFacts& facts) {
  if (!facts.zip) return "the file is not a ZIP archive, which torch.jit.save writes";
  std::string out = "archive format version " + facts.format_version.value_or("unknown");
  out += facts.saved_by ? ", saved by torch " + *facts.saved_by + " (extra/torch_version)"
                        : ", saving torch not recorded (no extra/torch_version)";
  return out;
}

namespace {

std::string Lower(std::string s) {
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return s;
}

// The first path component of a name, as libtorch's loader takes it ("" when there is none).
std::string FirstComponent(const std::string& name) {
  auto slash = name.find('/');
  return slash == std::string::npos ? name : name.substr(0, slash);
}

}  // namespace

Status CheckPackageLayout(const std::vector<ZipEntry>& entries, const std::string& where) {
  const std::string hint = "give a package written by torch._inductor.aoti_compile_and_package";
  if (entries.size() < 2) {
    return BadInput(
        "the .pt2 package has " + std::to_string(entries.size()) + " entries; a package has several", where,
        hint);
  }
  // The folder the loader unpacks from: "<prefix>data/aotinductor/model", where the prefix is
  // the first component of entries 0 and 1 when they share it (libtorch 2.11's rule).
  const std::string p0 = FirstComponent(entries[0].name), p1 = FirstComponent(entries[1].name);
  const std::string model_dir =
      (!p0.empty() && p0 == p1 ? p0 + "/" : std::string()) + "data/aotinductor/model";
  bool library = false;
  std::set<std::string> folded;  // miniz finds entries by name case-insensitively
  for (std::size_t k = 0; k < entries.size(); ++k) {
    const ZipEntry& e = entries[k];
    if (BadName(e.name)) {
      return BadInput("the .pt2 package's entry " + std::to_string(k) +
                          " has a name that could unpack outside its folder (empty, absolute, '..', '.', a "
                          "backslash or a control byte)",
                      where, hint);
    }
    const std::string lower = Lower(e.name);
    if (!folded.insert(lower).second) {
      return BadInput(
          "the .pt2 package's entry " + std::to_string(k) +
              " has the name of an earlier entry, up to letter case (the loader could take either)",
          where, hint);
    }
    if (EndsWith(lower, "_metadata.json") && e.uncompressed_size > kMaxPackageMetadataBytes) {
      return BadInput("the .pt2 package's entry " + std::to_string(k) + " (a metadata file) is " +
                          std::to_string(e.uncompressed_size) + " bytes, more than the " +
                          std::to_string(kMaxPackageMetadataBytes) + " a metadata file may be",
                      where, hint);
    }
    if (e.name.compare(0, model_dir.size(), model_dir) == 0 && EndsWith(e.name, ".so")) library = true;
  }
  if (!library) {
    return BadInput("the .pt2 package holds no compiled library where the loader looks (" + model_dir +
                        "/*.so): pilot does not compile packages, which would run the commands they name",
                    where, "export it with aoti_compile_and_package, which compiles it");
  }
  return {};
}

}  // namespace pilot

// ListZipEntries and CheckPackageLayout: a .pt2 package's central directory, read before
// libtorch's loader unpacks anything.
#include "pilot/package_layout.h"

#include <gtest/gtest.h>

#include <cstring>

#include "pilot/fs.h"

namespace pilot {
namespace {

class BytesFile : public ReadableFile {
 public:
  explicit BytesFile(std::string bytes) : bytes_(std::move(bytes)) {}
  Result<std::size_t> ReadAt(std::uint64_t offset, char* buf, std::size_t n) override {
    if (offset >= bytes_.size()) return std::size_t{0};
    n = std::min<std::size_t>(n, bytes_.size() - static_cast<std::size_t>(offset));
    std::memcpy(buf, bytes_.data() + offset, n);
    return n;
  }
  std::uint64_t size() const override { return bytes_.size(); }
  const stdfs::path& path() const override { return path_; }

 private:
  std::string bytes_;
  stdfs::path path_ = "pkg.pt2";
};

void Put(std::string& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xFF);
}

struct Member {
  std::string name, data;
  std::uint32_t claimed_size = 0xFFFFFFFE;  // 0xFFFFFFFE: the data's real size
};

// A stored (uncompressed) ZIP archive; `zip64` writes the ZIP64 end records and sizes.
std::string Zip(const std::vector<Member>& members, bool zip64 = false, std::uint64_t claimed_count = ~0ull) {
  std::string out, cd;
  for (const auto& m : members) {
    const std::uint64_t offset = out.size();
    const std::uint64_t size = m.claimed_size == 0xFFFFFFFE ? m.data.size() : m.claimed_size;
    Put(out, 0x04034b50, 4);
    Put(out, 20, 2);
    Put(out, 0, 2);
    Put(out, 0, 2);
    Put(out, 0, 2);
    Put(out, 0, 2);
    Put(out, 0, 4);
    Put(out, m.data.size(), 4);
    Put(out, m.data.size(), 4);
    Put(out, m.name.size(), 2);
    Put(out, 0, 2);
    out += m.name + m.data;
    std::string extra;
    if (zip64) {
      Put(extra, 1, 2);
      Put(extra, 8, 2);
      Put(extra, size, 8);
    }
    Put(cd, 0x02014b50, 4);
    Put(cd, 45, 2);
    Put(cd, 45, 2);
    Put(cd, 0, 2);
    Put(cd, 0, 2);
    Put(cd, 0, 2);
    Put(cd, 0, 2);
    Put(cd, 0, 4);
    Put(cd, m.data.size(), 4);
    Put(cd, zip64 ? 0xFFFFFFFF : size, 4);
    Put(cd, m.name.size(), 2);
    Put(cd, extra.size(), 2);
    Put(cd, 0, 2);
    Put(cd, 0, 2);
    Put(cd, 0, 2);
    Put(cd, 0, 4);
    Put(cd, offset, 4);
    cd += m.name + extra;
  }
  const std::uint64_t cd_offset = out.size();
  out += cd;
  const std::uint64_t count = claimed_count == ~0ull ? members.size() : claimed_count;
  if (zip64) {
    const std::uint64_t z64 = out.size();
    Put(out, 0x06064b50, 4);
    Put(out, 44, 8);
    Put(out, 45, 2);
    Put(out, 45, 2);
    Put(out, 0, 4);
    Put(out, 0, 4);
    Put(out, count, 8);
    Put(out, count, 8);
    Put(out, cd.size(), 8);
    Put(out, cd_offset, 8);
    Put(out, 0x07064b50, 4);
    Put(out, 0, 4);
    Put(out, z64, 8);
    Put(out, 1, 4);
  }
  Put(out, 0x06054b50, 4);
  Put(out, 0, 2);
  Put(out, 0, 2);
  Put(out, zip64 ? 0xFFFF : count, 2);
  Put(out, zip64 ? 0xFFFF : count, 2);
  Put(out, zip64 ? 0xFFFFFFFF : cd.size(), 4);
  Put(out, zip64 ? 0xFFFFFFFF : cd_offset, 4);
  Put(out, 0, 2);
  return out;
}

std::vector<Member> GoodPackage() {
  return {{"m/data/aotinductor/model/abc.wrapper.so",
           "\x7f"
           "ELF library"},
          {"m/data/aotinductor/model/abc.wrapper_metadata.json", R"({"AOTI_DEVICE_KEY": "cpu"})"},
          {"m/archive_format", "pt2"}};
}

Status Check(const std::string& bytes) {
  BytesFile f(bytes);
  auto entries = ListZipEntries(f, "models/m.pt2");
  if (!entries.ok()) return entries.error();
  return CheckPackageLayout(entries.value(), "models/m.pt2");
}

TEST(PackageLayout, ListsAWellFormedPackage) {
  BytesFile f(Zip(GoodPackage()));
  auto entries = ListZipEntries(f, "models/m.pt2");
  ASSERT_TRUE(entries.ok()) << entries.error().what;
  ASSERT_EQ(entries.value().size(), 3u);
  EXPECT_EQ(entries.value()[1].name, "m/data/aotinductor/model/abc.wrapper_metadata.json");
  EXPECT_EQ(entries.value()[2].uncompressed_size, 3u);
  EXPECT_TRUE(CheckPackageLayout(entries.value(), "models/m.pt2").ok());
}

TEST(PackageLayout, Zip64IsRead) {
  auto members = GoodPackage();
  members[1].claimed_size = 0xFFFFFFFE;
  EXPECT_TRUE(Check(Zip(members, true)).ok());
  members[1].claimed_size = 5u << 20;  // a huge metadata file, as the ZIP64 extra says
  Status st = Check(Zip(members, true));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().what.find("entry 1 (a metadata file) is 5242880 bytes"), std::string::npos)
      << st.error().what;
}

TEST(PackageLayout, NamesThatCouldUnpackOutsideAreRefused) {
  const std::vector<std::string> names = {"m/data/aotinductor/model/../../../../tmp/evil.so",
                                          "/etc/cron.d/x",
                                          "m/data/aotinductor/model/./x.so",
                                          "m\\data\\x.so",
                                          "m/a\nb",
                                          "",
                                          "m/data/aotinductor/model/..",
                                          std::string(2000, 'a')};
  for (const std::string& bad : names) {
    auto members = GoodPackage();
    members.push_back({bad, "x"});
    Status st = Check(Zip(members));
    ASSERT_FALSE(st.ok()) << bad;
    EXPECT_EQ(st.error().kind, ErrorKind::kBadInput);
    EXPECT_NE(st.error().what.find("entry 3"), std::string::npos) << st.error().what;
    EXPECT_NE(st.error().where.find("models/m.pt2"), std::string::npos);
  }
}

TEST(PackageLayout, APackageToCompileOrWithOneEntryIsRefused) {
  Status st =
      Check(Zip({{"m/data/aotinductor/model/abc.wrapper.cpp", "int main() {}"},
                 {"m/data/aotinductor/model/abc_compile_flags.json", "{\"compiler\": \"sh -c evil\"}"}}));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().what.find("does not compile"), std::string::npos) << st.error().what;
  st = Check(Zip({{"m/data/aotinductor/model/abc.wrapper.so", "x"}}));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().what.find("1 entries"), std::string::npos) << st.error().what;
}

TEST(PackageLayout, ArchivesThatLibtorchsReaderWouldReadDifferentlyAreRefused) {
  // A second, plain end record hidden in the real one's comment: miniz takes the last one.
  std::string hidden = Zip(GoodPackage());
  const std::string eocd = hidden.substr(hidden.size() - 22);
  std::string fake = eocd;
  fake[20] = 0x20;  // a comment length that does not reach the end
  hidden[hidden.size() - 2] = static_cast<char>(fake.size());
  hidden += fake;
  EXPECT_FALSE(Check(hidden).ok());
  // A ZIP64 end record that disagrees with the plain one (no sentinels): miniz uses the
  // ZIP64 one whenever its locator is there.
  std::string z = Zip(GoodPackage(), true);
  const std::size_t at = z.size() - 22;
  std::string plain = Zip(GoodPackage());
  std::string plain_eocd = plain.substr(plain.size() - 22);
  z.replace(at + 8, 12, plain_eocd.substr(8, 12));  // count 3, real size, offset 0 (wrong)
  z[at + 16] = 0;
  z[at + 17] = 0;
  z[at + 18] = 0;
  z[at + 19] = 0;
  Status st = Check(z);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().what.find("disagree"), std::string::npos) << st.error().what;
  // Names equal up to case: miniz may find either.
  auto members = GoodPackage();
  members.push_back({"m/data/aotinductor/model/ABC.WRAPPER_METADATA.JSON", "{}"});
  st = Check(Zip(members));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().what.find("letter case"), std::string::npos) << st.error().what;
  // A library outside the folder the loader unpacks (its prefix comes from entries 0 and 1).
  st = Check(Zip({{"a/x", "x"},
                  {"a/data/aotinductor/model/m.wrapper.cpp", "int x;"},
                  {"z/data/aotinductor/model/decoy.so", "x"}}));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().what.find("a/data/aotinductor/model/*.so"), std::string::npos) << st.error().what;
}

TEST(PackageLayout, DamagedArchivesAreRefusedNeverMisread) {
  const std::string good = Zip(GoodPackage());
  for (std::size_t cut = 0; cut < good.size(); ++cut) {
    EXPECT_FALSE(Check(good.substr(0, cut)).ok()) << "cut at " << cut;
  }
  // An end record claiming more entries than the directory holds, or than the cap.
  EXPECT_FALSE(Check(Zip(GoodPackage(), false, 7)).ok());
  EXPECT_FALSE(Check(Zip(GoodPackage(), true, kMaxPackageEntries + 1)).ok());
  // A directory offset pointing past the end.
  std::string far = good;
  far[far.size() - 6] = '\x7f';
  EXPECT_FALSE(Check(far).ok());
  EXPECT_FALSE(Check("PK\x05\x06").ok());
  EXPECT_FALSE(Check(std::string(100, '\0')).ok());
}

// What a TorchScript archive says of its origin, for the message of a model that does not
// load: the format version (1.x and 2.x places), the torch the documented export recorded,
// and nothing from a value that is not short and printable, or from an archive that is not one.
TEST(TorchArchive, ReadsTheFormatVersionAndTheSavingTorchTrustingNothingElse) {
  auto facts = [](const std::string& bytes) {
    BytesFile f(bytes);
    return ReadTorchArchiveFacts(f, "m.pt");
  };
  const TorchArchiveFacts v2 = facts(
      Zip({{"m/data.pkl", "x"}, {"m/.data/version", "10\n"}, {"m/extra/torch_version", "2.11.0+cu130"}}));
  EXPECT_TRUE(v2.zip);
  EXPECT_EQ(v2.format_version, "10");
  EXPECT_EQ(v2.saved_by, "2.11.0+cu130");
  EXPECT_EQ(DescribeTorchArchive(v2),
            "archive format version 10, saved by torch 2.11.0+cu130 (extra/torch_version)");
  const TorchArchiveFacts v1 = facts(Zip({{"langid/data.pkl", "x"}, {"langid/version", "3\n"}}, true));
  EXPECT_EQ(v1.format_version, "3");
  EXPECT_FALSE(v1.saved_by);
  EXPECT_EQ(DescribeTorchArchive(v1),
            "archive format version 3, saving torch not recorded (no extra/torch_version)");

  const TorchArchiveFacts hostile = facts(Zip({{"m/version", "1e9"},
                                               {"m/extra/torch_version", "2.0\x1b[31m"},
                                               {"m/.data/version", std::string(40, '7')}}));
  EXPECT_FALSE(hostile.format_version);
  EXPECT_FALSE(hostile.saved_by);
  EXPECT_FALSE(facts(Zip({{"m/extra/torch_version", std::string(65, 'v')}})).saved_by);
  // A size claimed beyond the data, and an archive that is none.
  Member liar{"m/extra/torch_version", "2.1", 1u << 30};
  EXPECT_FALSE(facts(Zip({liar})).saved_by);
  const TorchArchiveFacts none = facts("not a zip at all");
  EXPECT_FALSE(none.zip);
  EXPECT_EQ(DescribeTorchArchive(none), "the file is not a ZIP archive, which torch.jit.save writes");
  const std::string good = Zip({{"m/.data/version", "10"}, {"m/extra/torch_version", "2.11.0"}});
  for (std::size_t cut = 0; cut < good.size(); ++cut) {
    const TorchArchiveFacts partial = facts(good.substr(0, cut));
    EXPECT_FALSE(partial.zip && partial.saved_by && partial.saved_by != "2.11.0") << cut;
  }
}

}  // namespace
}  // namespace pilot

#include "pilot/hash.h"

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "pilot/fs.h"

namespace pilot {
namespace {

struct MdCtxDeleter {
  void operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }
};
using MdCtx = std::unique_ptr<EVP_MD_CTX, MdCtxDeleter>;

std::string ToHex(const unsigned char* digest, unsigned int len) {
  static const char* kHex = "0123456789abcdef";
  std::string out(len * 2, '0');
  for (unsigned int i = 0; i < len; ++i) {
    out[2 * i] = kHex[digest[i] >> 4];
    out[2 * i + 1] = kHex[digest[i] & 0xf];
  }
  return out;
}

MdCtx NewSha256() {
  MdCtx ctx(EVP_MD_CTX_new());
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) return nullptr;
  return ctx;
}

std::string Finish(EVP_MD_CTX* ctx) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx, digest.data(), &len);
  return ToHex(digest.data(), len);
}

}  // namespace

std::string Sha256Hex(std::string_view bytes) {
  MdCtx ctx = NewSha256();
  EVP_DigestUpdate(ctx.get(), bytes.data(), bytes.size());
  return Finish(ctx.get());
}

Result<std::string> Sha256File(FileSystem& fs, const std::filesystem::path& file, bool follow_symlinks) {
  auto in = fs.OpenRead(file, follow_symlinks);
  if (!in.ok()) return in.error();
  return Sha256Of(*in.value());
}

Result<std::string> Sha256Of(ReadableFile& file) {
  MdCtx ctx = NewSha256();
  std::vector<char> buf(1 << 16);
  for (std::uint64_t at = 0;;) {
    auto n = file.ReadAt(at, buf.data(), buf.size());
    if (!n.ok()) return BadInput("read error while hashing: " + n.error().what, file.path().string());
    if (n.value() == 0) break;
    EVP_DigestUpdate(ctx.get(), buf.data(), n.value());
    at += n.value();
  }
  return Finish(ctx.get());
}

Sha256Stream::Sha256Stream() : ctx_(NewSha256().release()) {}
Sha256Stream::~Sha256Stream() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_)); }
void Sha256Stream::Update(std::string_view bytes) {
  EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), bytes.data(), bytes.size());
}
std::string Sha256Stream::Finish() { return pilot::Finish(static_cast<EVP_MD_CTX*>(ctx_)); }

bool IsSha256Hex(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::vector<Result<std::string>> Sha256Files(FileSystem& fs, const std::vector<std::filesystem::path>& files,
                                             bool follow_symlinks, unsigned max_threads) {
  std::vector<Result<std::string>> out(files.size(), Result<std::string>(std::string()));
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i; (i = next++) < files.size();) out[i] = Sha256File(fs, files[i], follow_symlinks);
  };
  unsigned cores =
      max_threads ? max_threads : std::min(16u, std::max(1u, std::thread::hardware_concurrency()));
  std::size_t threads = std::min<std::size_t>(files.size(), cores);
  std::vector<std::thread> pool;
  for (std::size_t k = 1; k < threads; ++k) pool.emplace_back(work);
  work();
  for (auto& th : pool) th.join();
  return out;
}

}  // namespace pilot

// SHA-256 through OpenSSL's EVP interface. Thread-safe (no shared state).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "pilot/status.h"

namespace pilot {
class FileSystem;
class ReadableFile;
}  // namespace pilot

namespace pilot {

// Lower-case hex SHA-256 of bytes.
std::string Sha256Hex(std::string_view bytes);

// Lower-case hex SHA-256 of a regular file's contents, streamed (constant memory). A FIFO,
// device or folder is refused (never read); with follow_symlinks false, so is a symlink.
Result<std::string> Sha256File(FileSystem& fs, const std::filesystem::path& file,
                               bool follow_symlinks = true);

// Sha256File of a file already open (streamed from its start).
Result<std::string> Sha256Of(ReadableFile& file);

// Sha256File of each file, on up to `max_threads` threads (0: every core, at most 16): the
// fixity of a bag on all cores. Results in the order of `files`.
std::vector<Result<std::string>> Sha256Files(FileSystem& fs, const std::vector<std::filesystem::path>& files,
                                             bool follow_symlinks, unsigned max_threads = 0);

// Incremental SHA-256 (streamed input). Not copyable.
class Sha256Stream {
 public:
  Sha256Stream();
  ~Sha256Stream();
  Sha256Stream(const Sha256Stream&) = delete;
  Sha256Stream& operator=(const Sha256Stream&) = delete;
  void Update(std::string_view bytes);
  // Lower-case hex digest of everything added; call once.
  std::string Finish();

 private:
  void* ctx_;  // EVP_MD_CTX
};

// True for exactly 64 lower-case hex digits.
bool IsSha256Hex(std::string_view s);

}  // namespace pilot

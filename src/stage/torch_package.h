// A .pt2 package as the stage kinds load it: a private copy checked against its pin, and the
// libtorch symbols its compiled library needs. Internal to src/stage/.
#pragma once

#include <torch/version.h>

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 6)
#define PILOT_HAVE_AOTI 1
#include <fcntl.h>
#include <sys/stat.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <torch/script.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "pilot/fs.h"
#include "pilot/hash.h"
#include "pilot/model_contract.h"
#include "pilot/stage.h"
#include "pilot/status.h"

namespace pilot {

// A .pt2 package copied, while it is hashed, into a private folder (mode 0700, under $TMPDIR
// or /tmp) that is removed with it: what is loaded is exactly the bytes whose sha256 was
// checked, whatever happens to the original meanwhile. Nothing is unpacked before that check.
class PrivatePackage {
 public:
  static Result<std::unique_ptr<PrivatePackage>> Make(const std::filesystem::path& package,
                                                      const std::string& want_sha256) {
    const std::string where = package.string();
    if (!IsSha256Hex(want_sha256)) {
      return BadInput("a .pt2 package needs its sha256 pin", where, "set stage.model_sha256");
    }
    const char* env = std::getenv("TMPDIR");
    const std::string parent = env && *env ? env : "/tmp";
    // Another user who may rename entries of the parent could swap the checked copy.
    struct stat ps {};
    if (::stat(parent.c_str(), &ps) != 0 || !S_ISDIR(ps.st_mode)) {
      return EnvironmentError("the temporary folder is missing", parent, "set TMPDIR to a writable folder");
    }
    if ((ps.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (ps.st_mode & S_ISVTX) == 0) {
      return EnvironmentError(
          "the temporary folder is writable by other users and lacks the sticky bit, so the "
          "checked copy of the package could be swapped",
          parent, "set TMPDIR to a folder only you can write to");
    }
    std::string tmpl = parent + "/pilot-pt2-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) {
      return EnvironmentError(
          "cannot create a private folder to unpack the package: " + std::string(std::strerror(errno)), tmpl,
          "set TMPDIR to a writable folder");
    }
    std::unique_ptr<PrivatePackage> copy(new PrivatePackage(tmpl));
    auto in = RealFileSystem().OpenRead(package, true);
    if (!in.ok()) return in.error();
    copy->file_ = copy->dir_ / "model.pt2";
    int fd = ::open(copy->file_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
      return EnvironmentError("cannot write the private copy: " + std::string(std::strerror(errno)),
                              copy->file_.string());
    }
    Sha256Stream sha;
    std::vector<char> buf(1 << 20);
    std::uint64_t offset = 0;
    const std::uint64_t size = in.value()->size();  // a file that grows meanwhile is copied as it was
    Status st;
    while (offset < size) {
      auto n = in.value()->ReadAt(
          offset, buf.data(), static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), size - offset)));
      if (!n.ok()) {
        st = n.error();
        break;
      }
      if (n.value() == 0) break;
      sha.Update(std::string_view(buf.data(), n.value()));
      for (std::size_t done = 0; done < n.value();) {
        ssize_t w = ::write(fd, buf.data() + done, n.value() - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
          st = EnvironmentError("cannot write the private copy: " + std::string(std::strerror(errno)),
                                copy->file_.string(), "free space under TMPDIR");
          break;
        }
        done += static_cast<std::size_t>(w);
      }
      if (!st.ok()) break;
      offset += n.value();
    }
    if (::close(fd) != 0 && st.ok()) {
      st = EnvironmentError("cannot write the private copy: " + std::string(std::strerror(errno)),
                            copy->file_.string(), "free space under TMPDIR");
    }
    if (!st.ok()) return st.error();
    const std::string got = sha.Finish();
    if (got != want_sha256) {
      return BadInput("the package's sha256 is " + got + " but the parameters pin " + want_sha256, where,
                      "restore the pinned package, or update stage.model_sha256 if the change is intended");
    }
    return std::unique_ptr<PrivatePackage>(std::move(copy));
  }
  // Exactly what Make created, by name (no recursive walk: std::filesystem is also exported,
  // differently, by PyTorch 2.x's libtorch.so).
  ~PrivatePackage() {
    if (!file_.empty()) ::unlink(file_.c_str());
    ::rmdir(dir_.c_str());
  }
  const std::filesystem::path& file() const { return file_; }

 private:
  explicit PrivatePackage(std::filesystem::path dir) : dir_(std::move(dir)) {}
  std::filesystem::path dir_, file_;
};

// Makes libtorch's symbols global for the package's library, and answers its libtorch.so
// dependency (below).
void ExposeLibtorchSymbols();

// Loads the pinned package of `config` for `device`, each stage kind alike: the sha256 first
// (on a private copy), then the layout libtorch's loader would unpack, the metadata (the device
// it was compiled for, the contract's "pilot.*" facts), then the native code. Refuses (exit 2)
// naming the package; `export_script` is named in the hint for another device.
Status LoadAotiPackage(const StageConfig& config, const torch::Device& device,
                       const std::string& export_script, std::unique_ptr<PrivatePackage>& package,
                       std::unique_ptr<torch::inductor::AOTIModelPackageLoader>& loader,
                       ModelContract& contract);

}  // namespace pilot
#endif

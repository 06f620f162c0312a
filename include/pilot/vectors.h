// The embedding kind's vectors on disk.
//
// While a run works, each accepted item's vector goes to the sidecar, data/vectors.sidecar,
// keyed by id: it is appended and fsynced before the journal record that points at it
// (`vector_at`), so a kill at any instant leaves every journaled vector readable bit for
// bit. Rows cannot be numbered while processing (retries, resume and batching reorder
// items), so at finish the vectors are copied, in manifest order of the accepted items,
// into data/vectors.npy: NumPy's format 1.0, little-endian float32, C order, shape
// (accepted, dim), which `numpy.load` opens directly. No decimal text is involved anywhere,
// so no bit is lost.
//
// Sidecar layout (little-endian): "PILOTVEC" u32 version(1) u32 dim, then per entry:
// u32 id_length, the id's bytes, dim float32.
//
// Run format 4 stores the vectors once: the .npy is written in the dtype the parameters ask
// for (`vectors_dtype`: float32 '<f4', or float16 '<f2', rounded to nearest even), each
// accepted result carries the sha256 of its row's stored bytes (`vector_sha256`, written into
// the journal with the record, before the row exists), and the sidecar is removed once the
// .npy is whole, before the bag is sealed. Verify hashes every row against its result, and
// the result against the journal. Formats 1-3 keep the sidecar and verify against it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pilot/folder_files.h"
#include "pilot/fs.h"
#include "pilot/status.h"

namespace pilot {

inline constexpr std::size_t kSidecarHeaderBytes = 16;

// How data/vectors.npy stores each value.
enum class VectorDtype { kFloat32, kFloat16 };
std::string_view VectorDtypeName(VectorDtype dtype);  // "float32" | "float16" (the params' words)
std::string_view NpyDescr(VectorDtype dtype);         // "<f4" | "<f2"
inline std::size_t DtypeBytes(VectorDtype dtype) { return dtype == VectorDtype::kFloat16 ? 2 : 4; }
// "float32" / "float16"; nullopt for anything else.
std::optional<VectorDtype> ParseVectorDtype(std::string_view name);

// IEEE 754 binary16: round to nearest, ties to even; a finite float beyond kHalfMax (by more
// than half a unit) becomes infinity, which the embedding kind never lets through (it rejects
// the item instead). NaN stays NaN.
inline constexpr float kHalfMax = 65504.0f;
std::uint16_t FloatToHalf(float value);
float HalfToFloat(std::uint16_t half);
// True when `value` survives float16 storage as a finite number.
bool FitsHalf(float value);

// A vector's values as vectors.npy stores them (little-endian, dtype bytes each).
std::string StoredVector(const float* values, std::size_t count, VectorDtype dtype);
// A float32 row (a sidecar entry's raw bytes) in the stored dtype.
std::string StoredFromRaw(std::string_view raw_float32, VectorDtype dtype);
// A stored row's values as floats.
std::vector<float> StoredToFloats(std::string_view stored, VectorDtype dtype);
// The digest a format-4 result carries: the sha256 (lower-case hex) of the row's stored bytes.
std::string VectorDigest(std::string_view stored);

std::string SidecarHeader(std::uint32_t dim);
std::string SidecarEntry(std::string_view id, const std::vector<float>& vector);
inline std::uint64_t SidecarEntryBytes(std::size_t id_bytes, std::uint32_t dim) {
  return 4 + id_bytes + 4ull * dim;
}
// The dim a sidecar header declares; an error naming `where` if the bytes are not one.
Result<std::uint32_t> ParseSidecarHeader(std::string_view header, const std::string& where);

// Reads entries by offset, checking that each holds the id it is asked for.
class SidecarReader {
 public:
  static Result<SidecarReader> Open(FileSystem& fs, const std::filesystem::path& file, std::uint32_t dim);
  // The entry at `offset` as raw little-endian float32 bytes (dim * 4 of them).
  Result<std::string> ReadRaw(std::uint64_t offset, std::string_view id);
  std::uint64_t size() const { return size_; }

 private:
  SidecarReader(std::unique_ptr<ReadableFile> in, std::uint32_t dim, std::uint64_t size)
      : in_(std::move(in)), dim_(dim), size_(size) {}
  std::unique_ptr<ReadableFile> in_;
  std::uint32_t dim_;
  std::uint64_t size_;
};

// The .npy header (magic, version 1.0, the dict, padded with spaces to a 64-byte boundary).
std::string NpyHeader(std::uint64_t rows, std::uint32_t dim, VectorDtype dtype = VectorDtype::kFloat32);

struct NpyShape {
  std::uint64_t rows = 0, cols = 0;
  std::uint64_t data_offset = 0;  // where row 0 starts
  VectorDtype dtype = VectorDtype::kFloat32;
  std::uint64_t row_bytes() const { return cols * DtypeBytes(dtype); }
};
// Parses an .npy header from the file's first bytes, accepting only what `pilot` writes:
// descr '<f4' or '<f2', fortran_order False, a 2-D shape. Anything else is an error naming
// `where`.
Result<NpyShape> ParseNpyHeader(std::string_view prefix, const std::string& where);

}  // namespace pilot

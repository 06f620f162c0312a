#include "pilot/vectors.h"

#include <cmath>
#include <cstring>

#include "pilot/escape.h"
#include "pilot/fs.h"
#include "pilot/hash.h"
#include "pilot/limits.h"
#include "pilot/utf8.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the vectors sidecar and .npy writer assume a little-endian host"
#endif

namespace pilot {

namespace {

constexpr char kMagic[8] = {'P', 'I', 'L', 'O', 'T', 'V', 'E', 'C'};

void PutU32(std::string& out, std::uint32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); }

std::uint32_t GetU32(const char* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

}  // namespace

std::string SidecarHeader(std::uint32_t dim) {
  std::string h(kMagic, sizeof kMagic);
  PutU32(h, 1);
  PutU32(h, dim);
  return h;
}

std::string SidecarEntry(std::string_view id, const std::vector<float>& vector) {
  std::string e;
  e.reserve(SidecarEntryBytes(id.size(), static_cast<std::uint32_t>(vector.size())));
  PutU32(e, static_cast<std::uint32_t>(id.size()));
  e.append(id);
  e.append(reinterpret_cast<const char*>(vector.data()), vector.size() * sizeof(float));
  return e;
}

Result<std::uint32_t> ParseSidecarHeader(std::string_view header, const std::string& where) {
  if (header.size() < kSidecarHeaderBytes || std::memcmp(header.data(), kMagic, sizeof kMagic) != 0) {
    return BadInput("is not a pilot vectors sidecar (no PILOTVEC header)", where);
  }
  if (GetU32(header.data() + 8) != 1) {
    return BadInput("is a vectors sidecar of unknown version " + std::to_string(GetU32(header.data() + 8)),
                    where, "it was written by a newer pilot");
  }
  std::uint32_t dim = GetU32(header.data() + 12);
  if (dim == 0 || dim > limits::kEmbeddingDim) {
    return BadInput(
        "declares dim " + std::to_string(dim) + ", outside 1.." + std::to_string(limits::kEmbeddingDim),
        where);
  }
  return dim;
}

Result<SidecarReader> SidecarReader::Open(FileSystem& fs, const std::filesystem::path& file,
                                          std::uint32_t dim) {
  auto in = fs.OpenRead(file, /*follow_symlinks=*/false);
  if (!in.ok()) return in.error();
  const std::uint64_t size = in.value()->size();
  char header[kSidecarHeaderBytes];
  if (size < kSidecarHeaderBytes || !ReadExactAt(*in.value(), 0, header, sizeof header).ok()) {
    return BadInput("the vectors sidecar is shorter than its header", file.string());
  }
  auto declared = ParseSidecarHeader(std::string_view(header, sizeof header), file.string());
  if (!declared.ok()) return declared.error();
  if (declared.value() != dim) {
    return BadInput("the vectors sidecar declares dim " + std::to_string(declared.value()) +
                        ", the run's stage " + std::to_string(dim),
                    file.string());
  }
  return SidecarReader(std::move(in).value(), dim, size);
}

Result<std::string> SidecarReader::ReadRaw(std::uint64_t offset, std::string_view id) {
  const std::uint64_t need = SidecarEntryBytes(id.size(), dim_);
  if (offset < kSidecarHeaderBytes || offset > size_ || size_ - offset < need) {
    return BadInput("item '" + std::string(id) + "' points at vector offset " + std::to_string(offset) +
                        ", outside the sidecar's " + std::to_string(size_) + " bytes",
                    in_->path().string());
  }
  std::string buf(need, '\0');
  if (!ReadExactAt(*in_, offset, buf.data(), need).ok()) {
    return BadInput("cannot read the vectors sidecar", in_->path().string());
  }
  if (GetU32(buf.data()) != id.size() || std::string_view(buf).substr(4, id.size()) != id) {
    return BadInput(
        "the vector at offset " + std::to_string(offset) + " is not item '" + std::string(id) + "'s",
        in_->path().string(), "the sidecar or the journal is damaged");
  }
  return buf.substr(4 + id.size());
}

std::string_view VectorDtypeName(VectorDtype dtype) {
  return dtype == VectorDtype::kFloat16 ? "float16" : "float32";
}

std::string_view NpyDescr(VectorDtype dtype) { return dtype == VectorDtype::kFloat16 ? "<f2" : "<f4"; }

std::optional<VectorDtype> ParseVectorDtype(std::string_view name) {
  if (name == "float32") return VectorDtype::kFloat32;
  if (name == "float16") return VectorDtype::kFloat16;
  return std::nullopt;
}

namespace {

std::uint32_t Bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float FromBits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace

// Fabian Giesen's float_to_half_fast3_rtne (public domain): exact round to nearest even
// through the float unit's own rounding for subnormal results, a bias trick for normal ones.
std::uint16_t FloatToHalf(float value) {
  const std::uint32_t f32_infinity = 255u << 23;
  const std::uint32_t f16_max = (127u + 16u) << 23;  // 65536.0f: at or past it, infinity
  const float denorm_magic = FromBits(((127u - 15u) + (23u - 10u) + 1u) << 23);
  std::uint32_t u = Bits(value);
  const std::uint32_t sign = u & 0x80000000u;
  u ^= sign;
  std::uint16_t out;
  if (u >= f16_max) {
    out = u > f32_infinity ? 0x7e00 : 0x7c00;  // NaN (quiet) or infinity
  } else if (u < (113u << 23)) {               // below float16's smallest normal: subnormal or zero
    const float aligned = FromBits(u) + denorm_magic;
    out = static_cast<std::uint16_t>(Bits(aligned) - Bits(denorm_magic));
  } else {
    const std::uint32_t mantissa_odd = (u >> 13) & 1u;
    u += (static_cast<std::uint32_t>(15 - 127) << 23) + 0xfffu;
    u += mantissa_odd;
    out = static_cast<std::uint16_t>(u >> 13);
  }
  return static_cast<std::uint16_t>(out | (sign >> 16));
}

float HalfToFloat(std::uint16_t half) {
  const float magic = FromBits(113u << 23);
  const std::uint32_t shifted_exp = 0x7c00u << 13;
  std::uint32_t u = (half & 0x7fffu) << 13;
  const std::uint32_t exp = shifted_exp & u;
  u += (127u - 15u) << 23;
  float f;
  if (exp == shifted_exp) {  // infinity or NaN
    f = FromBits(u + ((128u - 16u) << 23));
  } else if (exp == 0) {  // zero or subnormal
    f = FromBits(u + (1u << 23)) - magic;
  } else {
    f = FromBits(u);
  }
  return FromBits(Bits(f) | (static_cast<std::uint32_t>(half & 0x8000u) << 16));
}

bool FitsHalf(float value) { return std::isfinite(value) && (FloatToHalf(value) & 0x7c00u) != 0x7c00u; }

std::string StoredVector(const float* values, std::size_t count, VectorDtype dtype) {
  if (dtype == VectorDtype::kFloat32) return std::string(reinterpret_cast<const char*>(values), count * 4);
  std::string out(count * 2, '\0');
  for (std::size_t k = 0; k < count; ++k) {
    const std::uint16_t h = FloatToHalf(values[k]);
    std::memcpy(out.data() + 2 * k, &h, 2);
  }
  return out;
}

std::string StoredFromRaw(std::string_view raw, VectorDtype dtype) {
  if (dtype == VectorDtype::kFloat32) return std::string(raw);
  std::vector<float> values(raw.size() / 4);
  std::memcpy(values.data(), raw.data(), values.size() * 4);
  return StoredVector(values.data(), values.size(), dtype);
}

std::vector<float> StoredToFloats(std::string_view stored, VectorDtype dtype) {
  std::vector<float> values(stored.size() / DtypeBytes(dtype));
  if (dtype == VectorDtype::kFloat32) {
    std::memcpy(values.data(), stored.data(), values.size() * 4);
    return values;
  }
  for (std::size_t k = 0; k < values.size(); ++k) {
    std::uint16_t h;
    std::memcpy(&h, stored.data() + 2 * k, 2);
    values[k] = HalfToFloat(h);
  }
  return values;
}

std::string VectorDigest(std::string_view stored) { return Sha256Hex(stored); }

std::string NpyHeader(std::uint64_t rows, std::uint32_t dim, VectorDtype dtype) {
  std::string dict = "{'descr': '" + std::string(NpyDescr(dtype)) + "', 'fortran_order': False, 'shape': (" +
                     std::to_string(rows) + ", " + std::to_string(dim) + "), }";
  std::string h = "\x93NUMPY";
  h += '\x01';
  h += '\x00';
  std::size_t total = 10 + dict.size() + 1;
  std::size_t padded = (total + 63) / 64 * 64;
  dict.append(padded - total, ' ');
  dict += '\n';
  std::uint16_t len = static_cast<std::uint16_t>(dict.size());
  h.append(reinterpret_cast<const char*>(&len), 2);
  return h + dict;
}

namespace {

// Consumes `word` at `at`; false (at unchanged) if it is not there.
bool Eat(std::string_view s, std::size_t& at, std::string_view word) {
  if (s.substr(at, word.size()) != word) return false;
  at += word.size();
  return true;
}

// 1-18 decimal digits (no overflow possible), at `at`.
bool Count(std::string_view s, std::size_t& at, std::uint64_t& out) {
  std::size_t start = at;
  out = 0;
  while (at < s.size() && at - start < 18 && s[at] >= '0' && s[at] <= '9')
    out = out * 10 + static_cast<unsigned>(s[at++] - '0');
  return at > start && !(at < s.size() && s[at] >= '0' && s[at] <= '9');
}

}  // namespace

// A scanner, not a regex: linear in the header's length, no recursion, whatever the bytes.
Result<NpyShape> ParseNpyHeader(std::string_view p, const std::string& where) {
  auto bad = [&](const std::string& what) { return BadInput("vectors.npy " + what, where); };
  if (p.size() < 10 || p.substr(0, 6) != std::string_view("\x93NUMPY", 6)) return bad("is not an .npy file");
  if (p[6] != 1 || p[7] != 0) return bad("is not .npy format version 1.0");
  std::uint16_t len;
  std::memcpy(&len, p.data() + 8, 2);
  if (p.size() < 10u + len) return bad("has a header longer than the file");
  std::string_view dict = p.substr(10, len);
  if ((10u + len) % 64 != 0 || dict.empty() || dict.back() != '\n')
    return bad("has a header that is not padded to 64 bytes");
  std::size_t at = 0;
  if (!Eat(dict, at, "{'descr': '")) return bad("has a header pilot does not write (want a 2-D shape)");
  std::size_t quote = dict.find('\'', at);
  if (quote == std::string_view::npos || quote - at > 16)
    return bad("has a header pilot does not write (want a 2-D shape)");
  std::string descr(dict.substr(at, quote - at));
  at = quote + 1;
  std::string order;
  if (Eat(dict, at, ", 'fortran_order': ")) {
    if (Eat(dict, at, "False")) {
      order = "False";
    } else if (Eat(dict, at, "True")) {
      order = "True";
    }
  }
  NpyShape s;
  bool shaped = !order.empty() && Eat(dict, at, ", 'shape': (") && Count(dict, at, s.rows) &&
                Eat(dict, at, ", ") && Count(dict, at, s.cols) && Eat(dict, at, "), }");
  if (!shaped) return bad("has a header pilot does not write (want a 2-D shape)");
  while (at < dict.size() && dict[at] == ' ') ++at;
  if (at != dict.size() - 1) return bad("has a header pilot does not write (want a 2-D shape)");
  if (descr == "<f2") {
    s.dtype = VectorDtype::kFloat16;
  } else if (descr != "<f4") {
    return bad("has dtype '" + EscapeTerminal(descr) + "', not little-endian float32 '<f4' or float16 '<f2'");
  }
  if (order != "False") return bad("is in Fortran order, not C order");
  s.data_offset = 10u + len;
  return s;
}

}  // namespace pilot

// Ids in the order they were added, each with a 64-bit value, held compactly: every id in
// one arena and an 8-byte open-addressing slot (hash and position), about 40 bytes an id
// against ~100 for a node-based map. What the run keeps per manifest item (the manifest's ids while
// validating and verifying, the journal's id -> record offset), so that memory at a million
// items stays a few tens of megabytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pilot {

class IdIndex {
 public:
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);
  // At most this many ids (the slots hold 32-bit positions).
  static constexpr std::size_t kMaxIds = (std::size_t{1} << 31) - 1;

  // Adds `id` with `value`; false, and nothing changed, if it is already present or the
  // index is full.
  bool Insert(std::string_view id, std::uint64_t value = 0);
  // The position `id` was added at, or npos.
  std::size_t Find(std::string_view id) const;
  // As Find, trying position `hint` first: a scan in the order the ids were added (a
  // journal read in manifest order) then touches memory in order instead of at random.
  std::size_t Find(std::string_view id, std::size_t hint) const {
    return hint < size() && Id(hint) == id ? hint : Find(id);
  }
  bool Contains(std::string_view id) const { return Find(id) != npos; }
  std::string_view Id(std::size_t k) const {
    return std::string_view(arena_).substr(k == 0 ? 0 : ends_[k - 1], ends_[k] - (k == 0 ? 0 : ends_[k - 1]));
  }
  std::uint64_t Value(std::size_t k) const { return values_[k]; }
  std::size_t size() const { return ends_.size(); }
  bool empty() const { return ends_.empty(); }
  // Room for `n` ids without rehashing; the caller caps `n` (a hostile count must not
  // allocate without bound).
  void Reserve(std::size_t n);

 private:
  static std::uint32_t Hash(std::string_view id);
  void Rehash(std::size_t slots);

  std::string arena_;
  std::vector<std::uint64_t> ends_;  // id k is arena_[ends_[k-1], ends_[k])
  std::vector<std::uint64_t> values_;
  std::vector<std::uint64_t>
      slots_;  // hash << 32 | position + 1; 0 is empty. A power of two, under half full
};

}  // namespace pilot

#include "pilot/id_index.h"

#include <functional>

namespace pilot {

// A slot holds the id's 32-bit hash (high half) and its position + 1 (low half; 0: empty).
// Probing compares hashes before touching the arena, and a rehash never reads an id again.
std::uint32_t IdIndex::Hash(std::string_view id) {
  std::size_t h = std::hash<std::string_view>{}(id);
  return static_cast<std::uint32_t>(h ^ (h >> 32));
}

void IdIndex::Rehash(std::size_t slots) {
  std::vector<std::uint64_t> fresh(slots, 0);
  const std::size_t mask = slots - 1;
  for (std::uint64_t slot : slots_) {
    if (slot == 0) continue;
    std::size_t at = static_cast<std::uint32_t>(slot >> 32) & mask;
    while (fresh[at] != 0) at = (at + 1) & mask;
    fresh[at] = slot;
  }
  slots_ = std::move(fresh);
}

void IdIndex::Reserve(std::size_t n) {
  ends_.reserve(n);
  values_.reserve(n);
  std::size_t want = 16;
  while (want < 2 * n) want <<= 1;
  if (want > slots_.size()) Rehash(want);
}

std::size_t IdIndex::Find(std::string_view id) const {
  if (slots_.empty()) return npos;
  const std::uint32_t hash = Hash(id);
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t at = hash & mask;; at = (at + 1) & mask) {
    const std::uint64_t slot = slots_[at];
    if (slot == 0) return npos;
    const std::size_t k = static_cast<std::uint32_t>(slot) - 1;
    if (static_cast<std::uint32_t>(slot >> 32) == hash && Id(k) == id) return k;
  }
}

bool IdIndex::Insert(std::string_view id, std::uint64_t value) {
  if (ends_.size() >= kMaxIds) return false;
  if (slots_.empty() || 2 * (ends_.size() + 1) > slots_.size())
    Rehash(slots_.empty() ? 16 : 2 * slots_.size());
  const std::uint32_t hash = Hash(id);
  const std::size_t mask = slots_.size() - 1;
  std::size_t at = hash & mask;
  for (; slots_[at] != 0; at = (at + 1) & mask) {
    const std::uint64_t slot = slots_[at];
    if (static_cast<std::uint32_t>(slot >> 32) == hash && Id(static_cast<std::uint32_t>(slot) - 1) == id)
      return false;
  }
  arena_.append(id);
  ends_.push_back(arena_.size());
  values_.push_back(value);
  slots_[at] = (static_cast<std::uint64_t>(hash) << 32) | ends_.size();
  return true;
}

}  // namespace pilot

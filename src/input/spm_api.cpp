#include "spm_api.h"

#include <sentencepiece_processor.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

namespace {

using sentencepiece::SentencePieceProcessor;

void Say(char* error, std::size_t size, const std::string& what) {
  if (!error || size == 0) return;
  const std::size_t n = what.size() < size - 1 ? what.size() : size - 1;
  std::memcpy(error, what.data(), n);
  error[n] = '\0';
}

}  // namespace

extern "C" {

void* pilot_spm_load(const char* bytes, std::size_t size, char* error, std::size_t error_size) {
  try {
    auto* sp = new SentencePieceProcessor();
    const auto status = sp->LoadFromSerializedProto(std::string_view(bytes, size));
    if (!status.ok()) {
      Say(error, error_size, status.ToString());
      delete sp;
      return nullptr;
    }
    return sp;
  } catch (const std::exception& e) {
    Say(error, error_size, e.what());
    return nullptr;
  }
}

void pilot_spm_free(void* model) { delete static_cast<SentencePieceProcessor*>(model); }

int* pilot_spm_encode(const void* model, const char* text, std::size_t size, std::size_t* count) {
  *count = 0;
  try {
    std::vector<int> ids;
    if (!static_cast<const SentencePieceProcessor*>(model)->Encode(std::string_view(text, size), &ids).ok()) {
      return nullptr;
    }
    int* out = static_cast<int*>(std::malloc((ids.empty() ? 1 : ids.size()) * sizeof(int)));
    if (!out) return nullptr;
    if (!ids.empty()) std::memcpy(out, ids.data(), ids.size() * sizeof(int));
    *count = ids.size();
    return out;
  } catch (const std::exception&) {
    return nullptr;
  }
}

void pilot_spm_free_ids(int* ids) { std::free(ids); }

int pilot_spm_bos(const void* model) { return static_cast<const SentencePieceProcessor*>(model)->bos_id(); }
int pilot_spm_eos(const void* model) { return static_cast<const SentencePieceProcessor*>(model)->eos_id(); }
int pilot_spm_size(const void* model) {
  return static_cast<const SentencePieceProcessor*>(model)->GetPieceSize();
}

int pilot_spm_piece_id(const void* model, const char* piece, std::size_t size) {
  try {
    const auto* sp = static_cast<const SentencePieceProcessor*>(model);
    const std::string_view p(piece, size);
    const int id = sp->PieceToId(p);
    if (id < 0 || (id == sp->unk_id() && sp->IdToPiece(id) != p)) return -1;
    return id;
  } catch (const std::exception&) {
    return -1;
  }
}

}  // extern "C"

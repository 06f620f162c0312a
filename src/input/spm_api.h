// A C interface to libsentencepiece, so that it can be loaded in isolation
// (src/input/spm_api.cpp): built into libpilot-spm.so, which tokenizer_spm.cpp opens with
// RTLD_LOCAL | RTLD_DEEPBIND in the binaries that also load libtorch, or linked directly into
// those that do not (the unit tests, the fuzzers). libsentencepiece carries its own protobuf
// and exports it; in one symbol scope with libtorch's protobuf the two bind to each other's
// functions (docs/tokenizers.md, "SentencePiece"). Internal to src/input/.
#pragma once

#include <cstddef>

extern "C" {

// A loaded model, or null with `error` (NUL-terminated, cut to `error_size`) saying why.
void* pilot_spm_load(const char* bytes, std::size_t size, char* error, std::size_t error_size);
void pilot_spm_free(void* model);
// The ids of UTF-8 `text`: a malloc'd array of `*count` ids (free it with pilot_spm_free_ids),
// or null on a failure (then *count is 0). An empty result is a non-null array of 0 ids.
int* pilot_spm_encode(const void* model, const char* text, std::size_t size, std::size_t* count);
void pilot_spm_free_ids(int* ids);
// The model's <s>, </s>, <unk> ids (-1 when it has none) and its number of pieces.
int pilot_spm_bos(const void* model);
int pilot_spm_eos(const void* model);
int pilot_spm_size(const void* model);
// The id of `piece`, or -1 when the model has no such piece.
int pilot_spm_piece_id(const void* model, const char* piece, std::size_t size);
}

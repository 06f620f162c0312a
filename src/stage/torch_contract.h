// What the torch stage kinds and the adaptation trainer share about a TorchScript module.
// Internal to src/stage/.
#pragma once

#include <torch/script.h>

#include <cstdint>
#include <exception>
#include <filesystem>
#include <string>

#include "pilot/model_contract.h"

namespace pilot {

// The bounds on an n-gram model's declared settings, checked by the stage and the trainer alike.
inline constexpr std::int64_t kMaxNgram = 16;
inline constexpr std::int64_t kMaxBuckets = (std::int64_t{1} << 31) - 1;
inline constexpr std::int64_t kMaxChars = 1 << 20;

// The contract a module declares in its attributes (labels, dim, input kind, output,
// n-gram settings); absent attributes stay unset. Throws c10::Error on an attribute of
// another type than the contract's (callers catch it).
ModelContract ContractOfModule(const torch::jit::Module& m);

// What a TorchScript file that failed to load says of its origin, and the libtorch in use:
// "archive format version 10, saved by torch 2.11.0 (extra/torch_version); this pilot runs
// libtorch 1.13.0 (cpu build)". And what to do about it (kLoadFailureHint).
std::string LoadFailureContext(const std::filesystem::path& model);
extern const char* const kLoadFailureHint;

// A libtorch exception's message without the C++ backtrace c10 errors carry.
std::string TorchErrorMessage(const std::exception& e);

// Converts the module's floating-point parameters and buffers to `dtype`, as Python's
// nn.Module.to(dtype) does: integer and bool buffers (a Hugging Face model's position_ids and
// token_type_ids) keep their type. torch::jit::Module::to(dtype) would convert every tensor.
void ToFloatingDtype(torch::jit::Module& m, torch::Dtype dtype);

// The dtype the module's floating-point parameters and buffers hold: one name, several
// joined with '+' in sorted order ("bfloat16+float32"), or "none" without any.
std::string HeldDtype(const torch::jit::Module& m);

}  // namespace pilot

// What the torch stage kinds and the adaptation trainer share about a TorchScript module.
// Internal to src/stage/.
#pragma once

#include <torch/script.h>

#include <exception>
#include <string>

#include "pilot/model_contract.h"

namespace pilot {

// The contract a module declares in its attributes (labels, dim, input kind, output,
// n-gram settings); absent attributes stay unset. Throws c10::Error on an attribute of
// another type than the contract's (callers catch it).
ModelContract ContractOfModule(const torch::jit::Module& m);

// A libtorch exception's message without the C++ backtrace c10 errors carry.
std::string TorchErrorMessage(const std::exception& e);

}  // namespace pilot

// SentencePiece in a build that cannot carry it: the builds on Debian's libtorch 1.13
// (presets debian and asan), whose libprotobuf.so.32 and the protobuf libsentencepiece
// carries bind to each other's functions, so that a binary with both crashes as it starts.
// Their torch-loading binaries link this instead of tokenizer_spm.cpp (CMakeLists.txt,
// pilot_spm_none); the rest of pilot is the same.
#include "pilot/tokenizer.h"

namespace pilot {

Result<std::unique_ptr<Tokenizer>> ParseSentencePieceModel(std::string_view, const std::string& source, bool,
                                                           bool, bool) {
  return EnvironmentError(
      "this build has no SentencePiece: it links Debian's libtorch 1.13, whose libprotobuf clashes with the "
      "protobuf libsentencepiece carries",
      source,
      "use the default build (PyTorch's libtorch from PyPI); see docs/tokenizers.md, 'SentencePiece'");
}

}  // namespace pilot

#include "pilot/status.h"

namespace pilot {

std::string Error::ToString() const {
  std::string s = what;
  if (!where.empty()) s += " (" + where + ")";
  if (!hint.empty()) s += " — " + hint;
  return s;
}

Error BadInput(std::string what, std::string where, std::string hint) {
  return Error{ErrorKind::kBadInput, std::move(what), std::move(where), std::move(hint)};
}

Error EnvironmentError(std::string what, std::string where, std::string hint) {
  return Error{ErrorKind::kEnvironment, std::move(what), std::move(where), std::move(hint)};
}

Error WorkFailed(std::string what, std::string where, std::string hint) {
  return Error{ErrorKind::kWorkFailed, std::move(what), std::move(where), std::move(hint)};
}

}  // namespace pilot

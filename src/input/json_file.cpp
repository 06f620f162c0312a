#include "pilot/json_file.h"

#include "pilot/json_util.h"

namespace pilot {

Result<nlohmann::json> ReadJsonFile(FileSystem& fsys, const std::filesystem::path& file, std::uint64_t cap,
                                    const std::string& what) {
  auto text = ReadCapped(fsys, file, cap, what);
  if (!text.ok()) return text.error();
  auto parsed = ParseJson(text.value(), file.string());
  if (!parsed.ok()) return parsed.error();
  if (!parsed.value().is_object()) return BadInput("not a JSON object", file.string());
  return std::move(parsed).value();
}

}  // namespace pilot

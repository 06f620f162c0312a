// The closed set of rejection reason codes (docs/formats.md, "Reason codes").
#pragma once

#include <string_view>
#include <vector>

namespace pilot::reason {

inline constexpr std::string_view kMissingFile = "missing_file";
inline constexpr std::string_view kUnreadable = "unreadable";
inline constexpr std::string_view kPathOutsideRoot = "path_outside_root";
inline constexpr std::string_view kInputChanged = "input_changed";
inline constexpr std::string_view kEmptyInput = "empty_input";
inline constexpr std::string_view kTooLarge = "too_large";
inline constexpr std::string_view kInvalidEncoding = "invalid_encoding";
inline constexpr std::string_view kLowConfidence = "low_confidence";
inline constexpr std::string_view kCategoryNotAllowed = "category_not_allowed";
inline constexpr std::string_view kStageError = "stage_error";
inline constexpr std::string_view kDeviceOutOfMemory = "device_out_of_memory";
// The model's output for this item is not finite, outside [0, 1], or names no valid label.
inline constexpr std::string_view kInvalidOutput = "invalid_output";
// The text takes more tokens than stage.tokenizer.max_length, with truncation "reject".
inline constexpr std::string_view kTooManyTokens = "too_many_tokens";
// A generator's prompt whose tokens plus generation.max_new_tokens exceed the model's context.
inline constexpr std::string_view kPromptTooLong = "prompt_too_long";

const std::vector<std::string_view>& All();
bool IsKnown(std::string_view code);

}  // namespace pilot::reason

// How a generator picks each token (docs/generation.md, "Decoding"): greedily, or by sampling
// from a counter-based generator keyed by the seed, the item's id and the step. A draw depends
// on nothing else: not on the batch an item shares, its slot, the order of items, a resume or
// a shard, so the same item gives the same completion wherever it runs (outside near-ties).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "pilot/params.h"

namespace pilot {

// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11): the
// block of four 32-bit words for `counter` under `key`.
std::array<std::uint32_t, 4> Philox4x32(std::array<std::uint32_t, 4> counter,
                                        std::array<std::uint32_t, 2> key);

// One item's stream: the seed, and the first 8 bytes of sha256(id) big-endian.
struct SamplingKey {
  std::uint64_t seed = 0;
  std::uint64_t item = 0;
};
SamplingKey SamplingKeyFor(std::uint64_t seed, std::string_view item_id);

// The uniform draw in [0, 1) for `step` (the completion's token index) of the stream: 53 bits
// of the block at counter (step, item).
double SamplingUniform(const SamplingKey& key, std::uint64_t step);

// A decision closer than this is a near-tie: a greedy step whose two largest logits differ by
// less; a sampled step whose draw lies this close (in probability) to an edge of its token's
// interval, or whose top_k cut (the last kept logit against the first left out) or top_p cut
// (the threshold against the mass on either side of the last kept token) is this close. Another
// batch size or device can flip such a step by rounding alone.
inline constexpr double kNearTieMargin = 1e-4;

struct TokenChoice {
  std::int64_t id = -1;  // -1: the row holds a NaN or +inf, or nothing above -inf
  bool near_tie = false;
};

// Picks the token of one row of `n` float32 logits. temperature 0: the first largest logit (as
// torch.argmax). Above 0: logits / temperature, the top_k largest kept (ties to the lower id),
// softmax in double, the smallest set of them, by falling probability, whose mass reaches top_p,
// then the token whose interval of the cumulative mass, walked in token-id order (so that two
// nearly equal logits sorting either way move no interval), holds the draw.
// `scratch` holds n entries (the caller's, reused between rows).
TokenChoice ChooseToken(const float* logits, std::size_t n, const GenerationSettings& settings,
                        const SamplingKey& key, std::uint64_t step, std::size_t* scratch);

}  // namespace pilot

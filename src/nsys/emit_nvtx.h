// The range texts PyTorch's torch.autograd.profiler.emit_nvtx writes, one
// per op (torch/csrc/profiler/stubs/cuda.cpp, getNvtxStr):
//   "aten::mm, seq = 3, op_id = 12"
//   "aten::mm, op_id = 12, sizes = [[8, 16], [16, 4]], input_op_ids = [(11, 0)]"
// (seq only for ops autograd records; sizes only with record_shapes=True).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace jarvis::nsys {

struct EmitNvtxText {
  std::string_view name;  // the op name, before the first ", "
  int64_t op_id = -1;
  int64_t seq = -1;  // -1 when absent
  // sizes = [[...], ...], one list per input ([] for a non-tensor input);
  // empty optional when the text records no sizes.
  std::optional<std::vector<std::vector<int64_t>>> sizes;
};

// The parts of an emit_nvtx text, or nullopt for any other range text (one
// without ", op_id = N"). A malformed sizes list is left out, not guessed.
std::optional<EmitNvtxText> parse_emit_nvtx(std::string_view text);

}  // namespace jarvis::nsys

// The HLO modules an XSpace carries: the `/host:metadata` plane holds one
// event metadata per compiled XLA program ("jit_forward_3d_conv(15)", the
// number is the program id GPU kernels carry in their program_id stat) with a
// bytes stat "Hlo Proto": a serialized xla.HloProto. hlo.cpp decodes it by
// hand against the field numbers of xla/service/hlo.proto and
// xla/xla_data.proto (named constants there), every length checked, keeping
// what the analyses read: per instruction its name, opcode, result shape,
// operands, custom-call target, backend config, convolution / dot dimension
// numbers, window and the op metadata (JAX op path, source line).
//
// A GPU kernel event names its instruction with the hlo_module and hlo_op
// stats (and program_id); Space::find_hlo_module and HloModule::find join
// them. No protobuf type appears here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "trace/expansion_budget.h"

namespace jarvis::xplane {

// xla.PrimitiveType as HLO text spells it ("bf16", "f32", "pred", "s32",
// "f8e4m3fnuz", "token", ...); "type<N>" for a number this build does not know.
std::string primitive_type_name(int64_t type);
// Bytes per element of an array type (0 for tuples, tokens, sub-byte and
// unknown types).
int primitive_type_bytes(int64_t type);

inline constexpr int64_t kHloTuple = 13;

// absl::CEscape, as XLA escapes the strings it prints in HLO text.
std::string hlo_escape(std::string_view s);

struct HloShape {
  int64_t element_type = 0;
  std::vector<int64_t> dims;
  std::vector<int64_t> minor_to_major;  // the layout, when has_layout
  bool has_layout = false;
  std::vector<HloShape> tuple_shapes;

  bool is_tuple() const { return element_type == kHloTuple; }
  // As XLA prints a shape with its layout: "bf16[1,16,32]{2,1,0}", "f32[]",
  // a tuple "(bf16[2]{0}, u8[7]{0})" (a "/*index=5*/" before every fifth
  // element, as XLA marks long tuples).
  std::string text() const;
  // Product of dims (1 for a scalar); 0 for a tuple.
  int64_t element_count() const;
};

// xla.OpMetadata: the framework op behind an instruction.
struct HloOpMetadata {
  std::string op_type, op_name, source_file;
  int64_t source_line = 0;
  std::string deduplicated_name, scheduling_name;
  bool empty() const { return op_type.empty() && op_name.empty() && source_file.empty(); }
  // As XLA prints it inside metadata={...}:
  // op_name="jit(f)/conv_general_dilated" source_file="/w/x.py" source_line=77
  std::string text() const;
};

struct HloConvDimensions {
  int64_t input_batch = 0, input_feature = 0;
  std::vector<int64_t> input_spatial;
  int64_t kernel_input_feature = 0, kernel_output_feature = 0;
  std::vector<int64_t> kernel_spatial;
  int64_t output_batch = 0, output_feature = 0;
  std::vector<int64_t> output_spatial;
  // XLA's dim_labels, e.g. "b012f_o012i->b012f" (b/f batch and feature,
  // i/o kernel input and output feature, digits the spatial dimensions).
  std::string labels() const;
};

struct HloDotDimensions {
  std::vector<int64_t> lhs_contracting, rhs_contracting, lhs_batch, rhs_batch;
  // "lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0},
  // rhs_contracting_dims={1}" (empty lists left out), as HLO text has it.
  std::string text() const;
};

struct HloWindowDimension {
  int64_t size = 0, stride = 0, padding_low = 0, padding_high = 0;
  int64_t window_dilation = 0, base_dilation = 0;
  bool reversal = false;
};

struct HloInstruction {
  int64_t id = 0;
  std::string name;    // "cudnn-conv.1.0" (what a kernel's hlo_op names)
  std::string opcode;  // "custom-call", "fusion", "dot", "all-gather-start", ...
  HloShape shape;
  std::vector<int64_t> operand_ids;
  std::vector<int64_t> called_computation_ids;
  HloOpMetadata metadata;
  std::string custom_call_target;  // custom-call only
  std::string backend_config;      // text (JSON or an MLIR attribute dictionary)
  std::string fusion_kind;         // "kLoop", "kInput", "kCustom", ...
  std::optional<HloConvDimensions> conv_dims;
  std::optional<HloDotDimensions> dot_dims;
  std::vector<HloWindowDimension> window;
  int64_t feature_group_count = 0, batch_group_count = 0;
  std::vector<std::vector<int64_t>> replica_groups;  // collectives
  int64_t channel_id = 0;
};

struct HloComputation {
  int64_t id = 0;
  int64_t root_id = -1;  // the id of the instruction the computation returns
  std::string name;
  std::vector<HloInstruction> instructions;  // operands before their users
};

class HloModule {
 public:
  std::string label;        // the /host:metadata event name: "jit_forward_3d_conv(15)"
  int64_t program_id = -1;  // the number in the label (else the metadata id)
  std::string name;         // HloModuleProto.name: "jit_forward_3d_conv"
  int64_t id = 0;
  std::string entry_computation_name;
  std::vector<HloComputation> computations;
  // HloModuleProto.device_assignment: replicas and partitions (its
  // computation_count); 0 when the module has none.
  int64_t replica_count = 0, partition_count = 0;

  // Builds the lookups; call once the computations are in place.
  void index();
  // The instruction named `instruction` ("%" prefix allowed), or nullptr.
  const HloInstruction* find(std::string_view instruction) const;
  // The computation with this id, or nullptr.
  const HloComputation* computation(int64_t id) const;
  // The computation holding an instruction found by find().
  const HloComputation* computation_of(const HloInstruction& inst) const;
  // The operands of an instruction, in operand order (nullptr for an id
  // that names no instruction of the module).
  std::vector<const HloInstruction*> operands(const HloInstruction& inst) const;
  size_t instruction_count() const;
  // Whether the instruction is its computation's root (XLA prints it "ROOT ...").
  bool is_root(const HloInstruction& inst) const;

 private:
  struct Where {
    uint32_t computation, instruction;
  };
  const HloInstruction* at(Where w) const {
    return &computations[w.computation].instructions[w.instruction];
  }
  std::unordered_map<std::string, Where> by_name_;
  // Per computation, id -> instruction index: operand ids are local to a
  // computation in XLA (a module-wide fallback covers older writers).
  std::vector<std::unordered_map<int64_t, uint32_t>> local_ids_;
  std::unordered_map<int64_t, Where> by_id_;
};

// What the collective analyses read of an XLA collective instruction:
// all-reduce, all-gather, reduce-scatter, all-to-all, collective-permute,
// their -start / -done forms, and async-start / async-done wrapping one of
// them. The opcode alone decides: a fusion is never a collective, whatever
// its name says.
struct HloCollective {
  // The collective as PyTorch's record_param_comms names it (what
  // collectives::collective_type reads): allreduce, allgather,
  // reducescatter, all_to_all, collective_permute.
  std::string collective;
  std::string opcode;        // the collective's own opcode ("all-reduce", "reduce-scatter", ...)
  int64_t element_type = 0;  // of every array operand; 0 when they differ
  int64_t in_nelems = 0;     // elements of the array operands (a tuple operand: its arrays)
  int64_t out_nelems = -1;   // elements of the result (all-gather, reduce-scatter); -1 unknown
  // Devices in one group: the size of the replica groups (all of one size),
  // else the module's partition count (with a channel id) or replica count;
  // 2 for collective-permute (one source, one target per transfer); 0 unknown.
  int64_t group_size = 0;
  std::vector<std::vector<int64_t>> replica_groups;  // the collective's own (empty: all)
};
std::optional<HloCollective> hlo_collective(const HloModule& module, const HloInstruction& inst);

// Decodes a serialized xla.HloProto (its hlo_module). Throws TraceError naming `label` and the
// message and problem: "jit_f(15): a damaged HloProto (HloInstructionProto:
// a length past the end of the data)", or past `budget` (instructions and the
// replica groups iota lists expand to are charged to it).
HloModule decode_hlo_module(std::string_view bytes, const std::string& label,
                            ExpansionBudget& budget);

}  // namespace jarvis::xplane

// Hand-written decoder of the serialized xla.HloProto in an XSpace's
// /host:metadata plane. Field numbers are those of xla/service/hlo.proto and
// xla/xla_data.proto; only the fields hlo.h keeps are read, the rest skipped
// as protobuf skips unknown fields. Every length is checked by wire::Reader;
// the one input-controlled recursion (tuple shapes inside tuple shapes) is
// bounded.
#include "xplane/hlo.h"

#include <algorithm>

#include <fmt/format.h>

#include "base/utf8.h"
#include "trace/trace.h"
#include "xplane/wire.h"

namespace jarvis::xplane {

namespace {

using wire::expect;
using wire::Field;
using wire::kLength;
using wire::kVarint;
using wire::Reader;

// message HloProto
constexpr uint32_t kProtoModule = 1;
// message HloModuleProto
constexpr uint32_t kModuleName = 1, kModuleEntryName = 2, kModuleComputations = 3, kModuleId = 5,
                   kModuleDeviceAssignment = 15;
// message DeviceAssignmentProto
constexpr uint32_t kAssignReplicaCount = 1, kAssignComputationCount = 2;
// message HloComputationProto
constexpr uint32_t kCompName = 1, kCompInstructions = 2, kCompId = 5, kCompRootId = 6;
// message HloInstructionProto
constexpr uint32_t kInstName = 1, kInstOpcode = 2, kInstShape = 3, kInstMetadata = 7,
                   kInstFusionKind = 11, kInstWindow = 15, kInstConvDims = 16, kInstChannelId = 26,
                   kInstCustomCallTarget = 28, kInstDotDims = 30, kInstId = 35,
                   kInstOperandIds = 36, kInstCalledIds = 38, kInstBackendConfig = 43,
                   kInstReplicaGroups = 49, kInstFeatureGroupCount = 50, kInstBatchGroupCount = 58,
                   kInstCollectiveDeviceList = 87;
// message ShapeProto / LayoutProto
constexpr uint32_t kShapeElementType = 2, kShapeDims = 3, kShapeTuple = 4, kShapeLayout = 5;
constexpr uint32_t kLayoutMinorToMajor = 1;
// message OpMetadata
constexpr uint32_t kMetaOpType = 1, kMetaOpName = 2, kMetaSourceFile = 3, kMetaSourceLine = 4,
                   kMetaDedupName = 12, kMetaSchedulingName = 16;
// message ConvolutionDimensionNumbers
constexpr uint32_t kConvKernelIn = 3, kConvKernelOut = 4, kConvKernelSpatial = 6,
                   kConvInputBatch = 7, kConvInputFeature = 8, kConvOutputBatch = 9,
                   kConvOutputFeature = 10, kConvInputSpatial = 11, kConvOutputSpatial = 12;
// message DotDimensionNumbers
constexpr uint32_t kDotLhsContracting = 1, kDotRhsContracting = 2, kDotLhsBatch = 3,
                   kDotRhsBatch = 4;
// message Window / WindowDimension
constexpr uint32_t kWindowDims = 1;
constexpr uint32_t kWinSize = 1, kWinStride = 2, kWinPadLow = 3, kWinPadHigh = 4, kWinDilation = 5,
                   kWinBaseDilation = 6, kWinReversal = 7;
// message ReplicaGroup / CollectiveDeviceListProto / IotaReplicaGroupListProto
constexpr uint32_t kGroupIds = 1;
constexpr uint32_t kDeviceListGroups = 1, kDeviceListIota = 2;
constexpr uint32_t kIotaGroups = 1, kIotaPerGroup = 2, kIotaReshape = 3, kIotaPerm = 4;

constexpr int kMaxShapeDepth = 64;

int64_t as_int64(uint64_t v) {
  return static_cast<int64_t>(v);
}

std::string text_of(const Field& f, const Reader& r, const char* field) {
  expect(f, kLength, r, field);
  return valid_utf8(f.bytes);
}

int64_t int_of(const Field& f, const Reader& r, const char* field) {
  expect(f, kVarint, r, field);
  return as_int64(f.varint);
}

HloShape read_shape(std::string_view bytes, int depth) {
  if (depth > kMaxShapeDepth)
    throw wire::DecodeError(
        fmt::format("ShapeProto: tuple shapes nested deeper than {}", kMaxShapeDepth));
  Reader r(bytes, "ShapeProto");
  HloShape s;
  while (!r.done()) {
    Field f = r.next();
    switch (f.number) {
      case kShapeElementType:
        s.element_type = int_of(f, r, "element_type");
        break;
      case kShapeDims:
        wire::append_int64s(f, r, "ShapeProto.dimensions", s.dims);
        break;
      case kShapeTuple:
        expect(f, kLength, r, "tuple_shapes");
        s.tuple_shapes.push_back(read_shape(f.bytes, depth + 1));
        break;
      case kShapeLayout: {
        expect(f, kLength, r, "layout");
        s.has_layout = true;
        Reader l(f.bytes, "LayoutProto");
        while (!l.done()) {
          Field g = l.next();
          if (g.number == kLayoutMinorToMajor)
            wire::append_int64s(g, l, "LayoutProto.minor_to_major", s.minor_to_major);
        }
        break;
      }
      default:
        break;
    }
  }
  return s;
}

HloOpMetadata read_metadata(std::string_view bytes) {
  Reader r(bytes, "OpMetadata");
  HloOpMetadata m;
  while (!r.done()) {
    Field f = r.next();
    switch (f.number) {
      case kMetaOpType:
        m.op_type = text_of(f, r, "op_type");
        break;
      case kMetaOpName:
        m.op_name = text_of(f, r, "op_name");
        break;
      case kMetaSourceFile:
        m.source_file = text_of(f, r, "source_file");
        break;
      case kMetaSourceLine:
        m.source_line = static_cast<int32_t>(int_of(f, r, "source_line"));  // int32 field
        break;
      case kMetaDedupName:
        m.deduplicated_name = text_of(f, r, "deduplicated_name");
        break;
      case kMetaSchedulingName:
        m.scheduling_name = text_of(f, r, "scheduling_name");
        break;
      default:
        break;
    }
  }
  return m;
}

HloConvDimensions read_conv_dims(std::string_view bytes) {
  Reader r(bytes, "ConvolutionDimensionNumbers");
  HloConvDimensions d;
  while (!r.done()) {
    Field f = r.next();
    switch (f.number) {
      case kConvInputBatch:
        d.input_batch = int_of(f, r, "input_batch_dimension");
        break;
      case kConvInputFeature:
        d.input_feature = int_of(f, r, "input_feature_dimension");
        break;
      case kConvInputSpatial:
        wire::append_int64s(f, r, "input_spatial_dimensions", d.input_spatial);
        break;
      case kConvKernelIn:
        d.kernel_input_feature = int_of(f, r, "kernel_input_feature_dimension");
        break;
      case kConvKernelOut:
        d.kernel_output_feature = int_of(f, r, "kernel_output_feature_dimension");
        break;
      case kConvKernelSpatial:
        wire::append_int64s(f, r, "kernel_spatial_dimensions", d.kernel_spatial);
        break;
      case kConvOutputBatch:
        d.output_batch = int_of(f, r, "output_batch_dimension");
        break;
      case kConvOutputFeature:
        d.output_feature = int_of(f, r, "output_feature_dimension");
        break;
      case kConvOutputSpatial:
        wire::append_int64s(f, r, "output_spatial_dimensions", d.output_spatial);
        break;
      default:
        break;
    }
  }
  return d;
}

HloDotDimensions read_dot_dims(std::string_view bytes) {
  Reader r(bytes, "DotDimensionNumbers");
  HloDotDimensions d;
  while (!r.done()) {
    Field f = r.next();
    switch (f.number) {
      case kDotLhsContracting:
        wire::append_int64s(f, r, "lhs_contracting_dimensions", d.lhs_contracting);
        break;
      case kDotRhsContracting:
        wire::append_int64s(f, r, "rhs_contracting_dimensions", d.rhs_contracting);
        break;
      case kDotLhsBatch:
        wire::append_int64s(f, r, "lhs_batch_dimensions", d.lhs_batch);
        break;
      case kDotRhsBatch:
        wire::append_int64s(f, r, "rhs_batch_dimensions", d.rhs_batch);
        break;
      default:
        break;
    }
  }
  return d;
}

std::vector<HloWindowDimension> read_window(std::string_view bytes) {
  Reader r(bytes, "Window");
  std::vector<HloWindowDimension> out;
  while (!r.done()) {
    Field f = r.next();
    if (f.number != kWindowDims) continue;
    expect(f, kLength, r, "dimensions");
    Reader d(f.bytes, "WindowDimension");
    HloWindowDimension w;
    while (!d.done()) {
      Field g = d.next();
      switch (g.number) {
        case kWinSize:
          w.size = int_of(g, d, "size");
          break;
        case kWinStride:
          w.stride = int_of(g, d, "stride");
          break;
        case kWinPadLow:
          w.padding_low = int_of(g, d, "padding_low");
          break;
        case kWinPadHigh:
          w.padding_high = int_of(g, d, "padding_high");
          break;
        case kWinDilation:
          w.window_dilation = int_of(g, d, "window_dilation");
          break;
        case kWinBaseDilation:
          w.base_dilation = int_of(g, d, "base_dilation");
          break;
        case kWinReversal:
          w.reversal = int_of(g, d, "window_reversal") != 0;
          break;
        default:
          break;
      }
    }
    out.push_back(w);
  }
  return out;
}

std::vector<int64_t> read_group(std::string_view bytes) {
  Reader r(bytes, "ReplicaGroup");
  std::vector<int64_t> ids;
  while (!r.done()) {
    Field f = r.next();
    if (f.number == kGroupIds) wire::append_int64s(f, r, "replica_ids", ids);
  }
  return ids;
}

// IotaReplicaGroupListProto: the groups are iota(prod(reshape)) reshaped,
// transposed by perm, then read row-major in num_groups rows of
// per_group ids. Bounded: a list larger than 2^20 ids is left out, and the
// ids (a few bytes of file for up to 2^20 of them) are charged to `budget`
// before they are made.
std::vector<std::vector<int64_t>> read_iota_groups(std::string_view bytes,
                                                   ExpansionBudget& budget) {
  Reader r(bytes, "IotaReplicaGroupListProto");
  int64_t groups = 0, per_group = 0;
  std::vector<int64_t> reshape, perm;
  while (!r.done()) {
    Field f = r.next();
    switch (f.number) {
      case kIotaGroups:
        groups = int_of(f, r, "num_replica_groups");
        break;
      case kIotaPerGroup:
        per_group = int_of(f, r, "num_devices_per_group");
        break;
      case kIotaReshape:
        wire::append_int64s(f, r, "iota_reshape_dims", reshape);
        break;
      case kIotaPerm:
        wire::append_int64s(f, r, "iota_transpose_perm", perm);
        break;
      default:
        break;
    }
  }
  constexpr int64_t kMaxIds = int64_t{1} << 20;
  if (groups <= 0 || per_group <= 0 || groups > kMaxIds || per_group > kMaxIds / groups) return {};
  const int64_t total = groups * per_group;
  if (reshape.empty()) reshape = {total};
  if (perm.empty())
    for (size_t k = 0; k < reshape.size(); ++k) perm.push_back(static_cast<int64_t>(k));
  int64_t product = 1;
  for (int64_t d : reshape) {
    if (d <= 0 || d > total) return {};
    product *= d;
    if (product > total) return {};
  }
  if (product != total || perm.size() != reshape.size()) return {};
  std::vector<bool> seen(perm.size(), false);
  for (int64_t p : perm) {
    if (p < 0 || static_cast<size_t>(p) >= perm.size() || seen[static_cast<size_t>(p)]) return {};
    seen[static_cast<size_t>(p)] = true;
  }
  // Strides of the reshaped iota, then walk the transposed index space.
  const size_t rank = reshape.size();
  std::vector<int64_t> stride(rank, 1);
  for (size_t k = rank - 1; k > 0; --k) stride[k - 1] = stride[k] * reshape[k];
  std::vector<int64_t> tdims(rank), tstride(rank);
  for (size_t k = 0; k < rank; ++k) {
    tdims[k] = reshape[static_cast<size_t>(perm[k])];
    tstride[k] = stride[static_cast<size_t>(perm[k])];
  }
  // The flat ids, then each group a vector of its own (a heap block of at
  // least 32 bytes besides the vector: 2^20 groups of one take 64 MiB).
  const uint64_t group_heap = std::max<uint64_t>(32, 16 + static_cast<uint64_t>(per_group) * 8);
  budget.charge(static_cast<uint64_t>(total) * sizeof(int64_t) +
                    static_cast<uint64_t>(groups) * (sizeof(std::vector<int64_t>) + group_heap),
                "iota replica group lists");
  std::vector<int64_t> idx(rank, 0), flat;
  flat.reserve(static_cast<size_t>(total));
  for (int64_t n = 0; n < total; ++n) {
    int64_t v = 0;
    for (size_t k = 0; k < rank; ++k) v += idx[k] * tstride[k];
    flat.push_back(v);
    for (size_t k = rank; k-- > 0;) {
      if (++idx[k] < tdims[k]) break;
      idx[k] = 0;
    }
  }
  std::vector<std::vector<int64_t>> out(static_cast<size_t>(groups));
  for (int64_t g = 0; g < groups; ++g)
    out[static_cast<size_t>(g)].assign(flat.begin() + g * per_group,
                                       flat.begin() + (g + 1) * per_group);
  return out;
}

// The explicit groups, or the iota list when there is one. A singular
// message field given several times is the last one (protobuf merges them;
// XLA writes one), so only that one is expanded, once.
std::vector<std::vector<int64_t>> read_device_list(std::string_view bytes,
                                                   ExpansionBudget& budget) {
  Reader r(bytes, "CollectiveDeviceListProto");
  std::vector<std::vector<int64_t>> groups;
  std::optional<std::string_view> iota;
  while (!r.done()) {
    Field f = r.next();
    if (f.number == kDeviceListGroups) {
      expect(f, kLength, r, "replica_groups");
      groups.push_back(read_group(f.bytes));
      budget.charge(sizeof(groups.back()) + groups.back().size() * sizeof(int64_t),
                    "replica group lists");
    } else if (f.number == kDeviceListIota) {
      expect(f, kLength, r, "iota_replica_group_list");
      iota = f.bytes;
    }
  }
  if (iota) return read_iota_groups(*iota, budget);
  return groups;
}

HloInstruction read_instruction(std::string_view bytes, ExpansionBudget& budget) {
  Reader r(bytes, "HloInstructionProto");
  HloInstruction in;
  std::vector<std::vector<int64_t>> legacy_groups;
  while (!r.done()) {
    Field f = r.next();
    switch (f.number) {
      case kInstName:
        in.name = text_of(f, r, "name");
        break;
      case kInstOpcode:
        in.opcode = text_of(f, r, "opcode");
        break;
      case kInstShape:
        expect(f, kLength, r, "shape");
        in.shape = read_shape(f.bytes, 0);
        break;
      case kInstMetadata:
        expect(f, kLength, r, "metadata");
        in.metadata = read_metadata(f.bytes);
        break;
      case kInstFusionKind:
        in.fusion_kind = text_of(f, r, "fusion_kind");
        break;
      case kInstWindow:
        expect(f, kLength, r, "window");
        in.window = read_window(f.bytes);
        break;
      case kInstConvDims:
        expect(f, kLength, r, "convolution_dimension_numbers");
        in.conv_dims = read_conv_dims(f.bytes);
        break;
      case kInstChannelId:
        in.channel_id = int_of(f, r, "channel_id");
        break;
      case kInstCustomCallTarget:
        in.custom_call_target = text_of(f, r, "custom_call_target");
        break;
      case kInstDotDims:
        expect(f, kLength, r, "dot_dimension_numbers");
        in.dot_dims = read_dot_dims(f.bytes);
        break;
      case kInstId:
        in.id = int_of(f, r, "id");
        break;
      case kInstOperandIds:
        wire::append_int64s(f, r, "operand_ids", in.operand_ids);
        break;
      case kInstCalledIds:
        wire::append_int64s(f, r, "called_computation_ids", in.called_computation_ids);
        break;
      case kInstBackendConfig:
        in.backend_config = text_of(f, r, "backend_config");
        break;
      case kInstReplicaGroups:
        expect(f, kLength, r, "replica_groups");
        legacy_groups.push_back(read_group(f.bytes));
        budget.charge(sizeof(legacy_groups.back()) + legacy_groups.back().size() * sizeof(int64_t),
                      "replica group lists");
        break;
      case kInstFeatureGroupCount:
        in.feature_group_count = int_of(f, r, "feature_group_count");
        break;
      case kInstBatchGroupCount:
        in.batch_group_count = int_of(f, r, "batch_group_count");
        break;
      case kInstCollectiveDeviceList:
        expect(f, kLength, r, "collective_device_list");
        in.replica_groups = read_device_list(f.bytes, budget);
        break;
      default:
        break;
    }
  }
  if (in.replica_groups.empty()) in.replica_groups = std::move(legacy_groups);
  return in;
}

HloComputation read_computation(std::string_view bytes, ExpansionBudget& budget) {
  Reader r(bytes, "HloComputationProto");
  HloComputation c;
  while (!r.done()) {
    Field f = r.next();
    switch (f.number) {
      case kCompName:
        c.name = text_of(f, r, "name");
        break;
      case kCompInstructions:
        expect(f, kLength, r, "instructions");
        budget.charge(sizeof(HloInstruction), "HLO instructions");
        c.instructions.push_back(read_instruction(f.bytes, budget));
        break;
      case kCompId:
        c.id = int_of(f, r, "id");
        break;
      case kCompRootId:
        c.root_id = int_of(f, r, "root_id");
        break;
      default:
        break;
    }
  }
  return c;
}

void read_device_assignment(std::string_view bytes, HloModule& m) {
  Reader r(bytes, "DeviceAssignmentProto");
  while (!r.done()) {
    Field f = r.next();
    if (f.number == kAssignReplicaCount) m.replica_count = int_of(f, r, "replica_count");
    if (f.number == kAssignComputationCount) m.partition_count = int_of(f, r, "computation_count");
  }
}

void read_module(std::string_view bytes, HloModule& m, ExpansionBudget& budget) {
  Reader r(bytes, "HloModuleProto");
  while (!r.done()) {
    Field f = r.next();
    switch (f.number) {
      case kModuleName:
        m.name = text_of(f, r, "name");
        break;
      case kModuleEntryName:
        m.entry_computation_name = text_of(f, r, "entry_computation_name");
        break;
      case kModuleComputations:
        expect(f, kLength, r, "computations");
        m.computations.push_back(read_computation(f.bytes, budget));
        break;
      case kModuleId:
        m.id = int_of(f, r, "id");
        break;
      case kModuleDeviceAssignment:
        expect(f, kLength, r, "device_assignment");
        read_device_assignment(f.bytes, m);
        break;
      default:
        break;
    }
  }
}

}  // namespace

// absl::CEscape, as XLA escapes metadata strings.
std::string hlo_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\'':
        out += "\\'";
        break;
      case '\\':
        out += "\\\\";
        break;
      default:
        if (c < 0x20 || c >= 0x7f)
          out += fmt::format("\\{:03o}", c);
        else
          out.push_back(ch);
    }
  }
  return out;
}

namespace {

std::string join_ints(const std::vector<int64_t>& v, std::string_view sep = ",") {
  std::string out;
  for (size_t k = 0; k < v.size(); ++k) {
    if (k) out += sep;
    out += std::to_string(v[k]);
  }
  return out;
}

}  // namespace

std::string primitive_type_name(int64_t type) {
  switch (type) {
    case 1:
      return "pred";
    case 2:
      return "s8";
    case 3:
      return "s16";
    case 4:
      return "s32";
    case 5:
      return "s64";
    case 6:
      return "u8";
    case 7:
      return "u16";
    case 8:
      return "u32";
    case 9:
      return "u64";
    case 10:
      return "f16";
    case 11:
      return "f32";
    case 12:
      return "f64";
    case 13:
      return "tuple";
    case 14:
      return "opaque";
    case 15:
      return "c64";
    case 16:
      return "bf16";
    case 17:
      return "token";
    case 18:
      return "c128";
    case 19:
      return "f8e5m2";
    case 20:
      return "f8e4m3fn";
    case 21:
      return "s4";
    case 22:
      return "u4";
    case 23:
      return "f8e4m3b11fnuz";
    case 24:
      return "f8e5m2fnuz";
    case 25:
      return "f8e4m3fnuz";
    case 26:
      return "s2";
    case 27:
      return "u2";
    case 28:
      return "f8e4m3";
    case 29:
      return "f8e3m4";
    case 30:
      return "s1";
    case 31:
      return "u1";
    case 32:
      return "f4e2m1fn";
    case 33:
      return "f8e8m0fnu";
    case 34:
      return "buffer";
    default:
      return fmt::format("type{}", type);
  }
}

int primitive_type_bytes(int64_t type) {
  switch (type) {
    case 1:   // pred
    case 2:   // s8
    case 6:   // u8
    case 19:  // f8 types
    case 20:
    case 23:
    case 24:
    case 25:
    case 28:
    case 29:
    case 33:
      return 1;
    case 3:   // s16
    case 7:   // u16
    case 10:  // f16
    case 16:  // bf16
      return 2;
    case 4:   // s32
    case 8:   // u32
    case 11:  // f32
      return 4;
    case 5:   // s64
    case 9:   // u64
    case 12:  // f64
    case 15:  // c64
      return 8;
    case 18:  // c128
      return 16;
    default:
      return 0;
  }
}

std::string HloShape::text() const {
  if (is_tuple()) {
    std::string out = "(";
    for (size_t k = 0; k < tuple_shapes.size(); ++k) {
      if (k) out += ", ";
      if (k && k % 5 == 0) out += fmt::format("/*index={}*/", k);
      out += tuple_shapes[k].text();
    }
    return out + ")";
  }
  std::string out = fmt::format("{}[{}]", primitive_type_name(element_type), join_ints(dims));
  // XLA prints no "{}" for a scalar's layout.
  if (has_layout && !dims.empty()) out += fmt::format("{{{}}}", join_ints(minor_to_major));
  return out;
}

int64_t HloShape::element_count() const {
  if (is_tuple()) return 0;
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::string HloOpMetadata::text() const {
  std::vector<std::string> parts;
  auto quoted = [&](std::string_view key, const std::string& value) {
    if (!value.empty()) parts.push_back(fmt::format("{}=\"{}\"", key, hlo_escape(value)));
  };
  quoted("op_type", op_type);
  quoted("op_name", op_name);
  quoted("source_file", source_file);
  if (source_line != 0) parts.push_back(fmt::format("source_line={}", source_line));
  quoted("deduplicated_name", deduplicated_name);
  quoted("scheduling_name", scheduling_name);
  std::string out;
  for (size_t k = 0; k < parts.size(); ++k) {
    if (k) out += " ";
    out += parts[k];
  }
  return out;
}

std::string HloConvDimensions::labels() const {
  // One character per dimension of each operand, as XLA's
  // ConvolutionDimensionNumbersToString: b / f (or i / o) and the spatial
  // dimension's index; '?' where the numbers leave a dimension unnamed.
  auto render = [](size_t rank, std::vector<std::pair<int64_t, char>> named,
                   const std::vector<int64_t>& spatial) {
    std::string s(rank, '?');
    for (auto [dim, c] : named)
      if (dim >= 0 && static_cast<size_t>(dim) < rank) s[static_cast<size_t>(dim)] = c;
    for (size_t k = 0; k < spatial.size(); ++k) {
      int64_t dim = spatial[k];
      if (dim >= 0 && static_cast<size_t>(dim) < rank)
        s[static_cast<size_t>(dim)] = k < 10 ? static_cast<char>('0' + k) : '?';
    }
    return s;
  };
  std::string in =
      render(input_spatial.size() + 2, {{input_batch, 'b'}, {input_feature, 'f'}}, input_spatial);
  std::string kernel =
      render(kernel_spatial.size() + 2, {{kernel_output_feature, 'o'}, {kernel_input_feature, 'i'}},
             kernel_spatial);
  std::string out = render(output_spatial.size() + 2, {{output_batch, 'b'}, {output_feature, 'f'}},
                           output_spatial);
  return fmt::format("{}_{}->{}", in, kernel, out);
}

std::string HloDotDimensions::text() const {
  std::vector<std::string> parts;
  auto add = [&](std::string_view name, const std::vector<int64_t>& v) {
    if (!v.empty()) parts.push_back(fmt::format("{}={{{}}}", name, join_ints(v)));
  };
  add("lhs_batch_dims", lhs_batch);
  add("lhs_contracting_dims", lhs_contracting);
  add("rhs_batch_dims", rhs_batch);
  add("rhs_contracting_dims", rhs_contracting);
  std::string out;
  for (size_t k = 0; k < parts.size(); ++k) {
    if (k) out += ", ";
    out += parts[k];
  }
  return out;
}

void HloModule::index() {
  by_name_.clear();
  by_id_.clear();
  local_ids_.assign(computations.size(), {});
  for (uint32_t c = 0; c < computations.size(); ++c) {
    const auto& insts = computations[c].instructions;
    for (uint32_t i = 0; i < insts.size(); ++i) {
      Where w{c, i};
      by_name_.emplace(insts[i].name, w);
      local_ids_[c].emplace(insts[i].id, i);
      by_id_.emplace(insts[i].id, w);
    }
  }
}

const HloInstruction* HloModule::find(std::string_view instruction) const {
  if (!instruction.empty() && instruction.front() == '%') instruction.remove_prefix(1);
  auto it = by_name_.find(std::string(instruction));
  return it == by_name_.end() ? nullptr : at(it->second);
}

const HloComputation* HloModule::computation(int64_t id) const {
  for (const HloComputation& c : computations)
    if (c.id == id) return &c;
  return nullptr;
}

const HloComputation* HloModule::computation_of(const HloInstruction& inst) const {
  auto it = by_name_.find(inst.name);
  return it == by_name_.end() ? nullptr : &computations[it->second.computation];
}

std::vector<const HloInstruction*> HloModule::operands(const HloInstruction& inst) const {
  std::vector<const HloInstruction*> out;
  auto where = by_name_.find(inst.name);
  for (int64_t id : inst.operand_ids) {
    if (where != by_name_.end()) {
      uint32_t c = where->second.computation;
      auto local = local_ids_[c].find(id);
      if (local != local_ids_[c].end()) {
        out.push_back(at({c, local->second}));
        continue;
      }
    }
    auto any = by_id_.find(id);
    out.push_back(any == by_id_.end() ? nullptr : at(any->second));
  }
  return out;
}

bool HloModule::is_root(const HloInstruction& inst) const {
  const HloComputation* c = computation_of(inst);
  return c && c->root_id == inst.id;
}

size_t HloModule::instruction_count() const {
  size_t n = 0;
  for (const auto& c : computations) n += c.instructions.size();
  return n;
}

namespace {

// Adds the elements of the arrays of a shape (a tuple: its arrays) to
// `nelems`; `type` (-1 before the first array) becomes their element type, 0
// once two differ. False for a token, opaque, a negative or overflowing
// dimension product, or nesting past kMaxShapeDepth.
bool count_arrays(const HloShape& s, int64_t& nelems, int64_t& type, int depth = 0) {
  if (depth > kMaxShapeDepth) return false;
  if (s.is_tuple()) {
    for (const HloShape& t : s.tuple_shapes)
      if (!count_arrays(t, nelems, type, depth + 1)) return false;
    return true;
  }
  if (primitive_type_bytes(s.element_type) == 0) return false;
  if (type == -1)
    type = s.element_type;
  else if (type != s.element_type)
    type = 0;
  int64_t n = 1;
  for (int64_t d : s.dims)
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return false;
  return !__builtin_add_overflow(nelems, n, &nelems);
}

// record_param_comms's name of a collective opcode ("" for none).
std::string_view collective_of(std::string_view opcode) {
  static const std::pair<std::string_view, std::string_view> names[] = {
      {"all-reduce", "allreduce"},
      {"all-gather", "allgather"},
      {"reduce-scatter", "reducescatter"},
      {"all-to-all", "all_to_all"},
      {"collective-permute", "collective_permute"}};
  for (auto [op, name] : names)
    if (op == opcode) return name;
  return {};
}

}  // namespace

std::optional<HloCollective> hlo_collective(const HloModule& module, const HloInstruction& inst) {
  const HloInstruction* op = &inst;
  // async-done / X-done: the start they complete.
  auto done_to_start = [&](const HloInstruction* i) -> const HloInstruction* {
    if (!i->opcode.ends_with("-done")) return i;
    auto ops = module.operands(*i);
    return ops.size() == 1 && ops[0] ? ops[0] : nullptr;
  };
  op = done_to_start(op);
  if (!op) return std::nullopt;
  // async-start: the collective its called computation returns.
  if (op->opcode == "async-start") {
    if (op->called_computation_ids.empty()) return std::nullopt;
    const HloComputation* c = module.computation(op->called_computation_ids.front());
    if (!c) return std::nullopt;
    const HloInstruction* root = nullptr;
    for (const HloInstruction& i : c->instructions)
      if (i.id == c->root_id) root = &i;
    if (!root) return std::nullopt;
    op = root;
  }
  std::string_view opcode = op->opcode;
  const bool start = opcode.ends_with("-start");
  if (start) opcode.remove_suffix(6);
  std::string_view name = collective_of(opcode);
  if (name.empty()) return std::nullopt;
  HloCollective c;
  c.collective = std::string(name);
  c.opcode = std::string(opcode);
  int64_t type = -1;
  for (const HloInstruction* operand : module.operands(*op)) {
    if (!operand || !count_arrays(operand->shape, c.in_nelems, type)) return std::nullopt;
  }
  if (type == -1) return std::nullopt;  // no array operand
  c.element_type = type;
  if (name == "allreduce" || name == "all_to_all" || name == "collective_permute") {
    c.out_nelems = c.in_nelems;
  } else {
    // The result: the instruction's shape, or for all-gather-start the
    // second half of its (operands, results) tuple.
    const HloShape* result = &op->shape;
    if (start)
      result = op->shape.is_tuple() && op->shape.tuple_shapes.size() == 2
                   ? &op->shape.tuple_shapes[1]
                   : nullptr;
    int64_t out = 0, out_type = -1;
    if (result && count_arrays(*result, out, out_type)) c.out_nelems = out;
  }
  c.replica_groups = op->replica_groups;
  if (name == "collective_permute") {
    c.group_size = 2;
  } else if (!op->replica_groups.empty()) {
    const size_t size = op->replica_groups.front().size();
    bool same = true;
    for (const auto& g : op->replica_groups) same = same && g.size() == size;
    c.group_size = same ? static_cast<int64_t>(size) : 0;
  } else {
    c.group_size = op->channel_id != 0 ? module.partition_count : module.replica_count;
  }
  return c;
}

HloModule decode_hlo_module(std::string_view bytes, const std::string& label,
                            ExpansionBudget& budget) {
  HloModule m;
  m.label = label;
  try {
    Reader r(bytes, "HloProto");
    bool found = false;
    while (!r.done()) {
      Field f = r.next();
      if (f.number != kProtoModule) continue;
      expect(f, kLength, r, "hlo_module");
      read_module(f.bytes, m, budget);
      found = true;
    }
    if (!found) r.fail("no hlo_module");
  } catch (const wire::DecodeError& e) {
    throw TraceError(fmt::format("{}: a damaged HloProto ({})", label, e.what()));
  }
  m.index();
  return m;
}

}  // namespace jarvis::xplane

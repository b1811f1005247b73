// Nsight Systems input: the SQLite export of a report (`nsys export --type
// sqlite`), read in the export's own terms (NVIDIA's export schema, 3.x):
//   * CUPTI_ACTIVITY_KIND_KERNEL / _MEMCPY / _MEMSET / _SYNCHRONIZATION: GPU
//     activity with start/end ns, deviceId, streamId and the correlationId of
//     the CUDA API call that caused it;
//   * CUPTI_ACTIVITY_KIND_RUNTIME: CUDA runtime calls (nameId, globalTid);
//   * NVTX_EVENTS: NVTX ranges (text or textId, globalTid); PyTorch's
//     `emit_nvtx` writes one per op ("aten::mm, seq = 3, op_id = 12[, sizes =
//     [[8, 16], [16, 4]], input_op_ids = ...]");
//   * StringIds, ThreadNames, PROCESSES, TARGET_INFO_GPU (absent in some
//     exports), META_DATA_EXPORT (the schema version).
// Several processes and GPUs may share one capture (one process per rank).
// Timestamps stay integer nanoseconds on the capture's clock.
//
// The file is opened read-only (SQLITE_OPEN_READONLY, `mode=ro` URI) and
// never written; a file another process holds locked gets a clear error.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "trace/trace.h"

namespace jarvis::nsys {

// globalTid / globalPid pack the OS ids: pid in bits 24..47, tid in bits 0..23.
inline int64_t pid_of(int64_t global_id) {
  return (global_id >> 24) & 0xFFFFFF;
}
inline int64_t tid_of(int64_t global_id) {
  return global_id & 0xFFFFFF;
}

struct Kernel {
  int64_t start_ns = 0, end_ns = 0;
  int64_t device_id = 0, stream_id = 0, context_id = 0;
  int64_t correlation_id = kNoInt;
  int64_t global_pid = 0;
  int64_t demangled_name = 0;  // StringIds id
  int64_t short_name = 0;      // StringIds id
  int32_t grid[3] = {1, 1, 1};
  int32_t block[3] = {1, 1, 1};
  int32_t registers_per_thread = 0;
  int64_t shared_memory_bytes = 0;  // static + dynamic
};

// A memcpy (bytes, copy kind) or memset (bytes) on a stream.
struct MemoryOp {
  int64_t start_ns = 0, end_ns = 0;
  int64_t device_id = 0, stream_id = 0;
  int64_t correlation_id = kNoInt;
  int64_t global_pid = 0;
  int64_t bytes = 0;
  int copy_kind = 0;                 // ENUM_CUDA_MEMCPY_OPER (memcpy only)
  int src_kind = -1, dst_kind = -1;  // ENUM_CUDA_MEM_KIND, -1 when absent
};

struct Synchronization {
  int64_t start_ns = 0, end_ns = 0;
  int64_t device_id = 0, stream_id = 0;
  int64_t correlation_id = kNoInt;
  int64_t global_pid = 0;
  int sync_type = 0;  // ENUM_CUPTI_SYNC_TYPE
};

struct RuntimeCall {
  int64_t start_ns = 0, end_ns = 0;
  int64_t global_tid = 0;
  int64_t correlation_id = kNoInt;
  int64_t name = 0;  // StringIds id ("cudaLaunchKernel_v7000")
};

// A closed NVTX range (push/pop or start/end); marks and open ranges are
// not kept.
struct NvtxRange {
  int64_t start_ns = 0, end_ns = 0;
  int64_t global_tid = 0;
  int64_t domain_id = 0;
  std::string text;  // text, or StringIds[textId]
};

struct Export {
  std::string path;
  std::string schema_version;   // META_DATA_EXPORT EXPORT_SCHEMA_VERSION ("3.25.0"), "" if absent
  std::string product_version;  // EXPORT_PRODUCT_VERSION
  std::unordered_map<int64_t, std::string> strings;  // StringIds
  std::vector<Kernel> kernels;                       // table order
  std::vector<MemoryOp> memcpys, memsets;
  std::vector<Synchronization> syncs;
  std::vector<RuntimeCall> runtime;
  std::vector<NvtxRange> nvtx;
  std::unordered_map<int64_t, std::string> thread_names;   // by globalTid
  std::unordered_map<int64_t, std::string> process_names;  // by OS pid
  std::unordered_map<int64_t, std::string> gpu_names;      // by device id (TARGET_INFO_GPU)
  uint64_t file_bytes = 0;

  std::string_view string(int64_t id) const;
};

// True when the file starts with the SQLite header ("SQLite format 3\0"):
// every SQLite file is judged an export here, so that load_export can say
// precisely why one is not (rather than a JSON parser's "not JSON").
bool is_nsys_input(const std::string& path);

// Reads an export. Throws TraceError naming the file and the problem: not
// SQLite, damaged or truncated, locked, an SQLite database that is not an
// Nsight Systems export, or an export whose schema lacks a table or column
// jarvis reads (with the schema version and the fix).
Export load_export(const std::string& path);

// The event model for an export (mapping in to_trace.cpp):
//   kernels / memcpy / memset -> kernel / gpu_memcpy / gpu_memset events,
//     pid = device id, tid = stream id (as Kineto lays out GPU rows), args
//     stream, device, correlation, grid / block for kernels;
//   synchronizations -> cuda_sync events on the same rows;
//   runtime calls -> cuda_runtime events on (OS pid, OS tid), name without
//     the API version suffix ("cudaLaunchKernel"), linked to their GPU work
//     by correlation (made unique per process when several share a capture);
//   NVTX ranges -> cpu_op events for emit_nvtx texts (the op name, "Sequence
//     number", "Input Dims" when sizes were recorded), user_annotation
//     events for any other range; on their thread, so the call tree nests
//     launches (and their kernels) under the ops.
// Platform CUDA; deviceProperties from TARGET_INFO_GPU when present; a
// top-level "nsys_export" member marks the source.
Trace to_trace(const Export& ex);

// The processes of a capture that ran GPU work (kernels, memcpy, memset),
// one per rank as `torchrun` under `nsys profile` gives: ordered by their
// lowest device id (then OS pid), rank = position.
struct RankProcess {
  int64_t pid = 0;  // OS pid
  int64_t rank = 0;
  int64_t first_device = 0;
  std::set<int64_t> devices;
};
std::vector<RankProcess> rank_processes(const Export& ex);

// One Trace per rank process (its GPU rows, its threads' runtime calls and
// NVTX ranges; host rows of processes without GPU work are left out), each
// with a `distributedInfo` {rank, world_size} as a Kineto rank trace has, so
// the multi-rank analyses (critical path, collectives) take the capture as
// its ranks. A capture with one such process (or none) gives to_trace(ex).
std::vector<Trace> to_rank_traces(const Export& ex);

// True for a Trace made by to_trace or to_rank_traces.
bool is_nsys_trace(const Trace& trace);

}  // namespace jarvis::nsys

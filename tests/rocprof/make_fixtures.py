#!/usr/bin/env python3
"""Builds the rocprofv3 CSV fixture set in tests/rocprof/csv_908/ from the
rocprofv3 JSON results file of ../shared/rocprof/mi350_aorta_train/.

Usage: python3 tests/rocprof/make_fixtures.py ../shared/rocprof/mi350_aorta_train/908_results.json.gz

What comes from the JSON (same kernels, same dispatches):
  * 908_kernel_trace.csv: the first 3 dispatches of each kernel in KERNELS,
    in file order, with the columns rocprofv3 (ROCprofiler-SDK >= 0.6) writes;
    Kernel_Name is the truncated name (rocprofv3 --truncate-kernels), the
    name TraceLens's rocprof report uses; Agent_Id is rocprofv3's default
    "Agent <logical node id>"; LDS_Block_Size is group_segment_size.
  * 908_agent_info.csv: every agent of the JSON, rocprofv3's agent_info
    columns (nested JSON fields written as 0).
  * 908_kernel_stats.csv: rocprofv3's per-kernel statistics of those
    dispatches (population standard deviation).
What is synthetic (the JSON run collected no counters and no copies):
  * 908_counter_collection.csv: for the dispatches of COUNTED, the counters
    GRBM_GUI_ACTIVE = round(duration_ns * 2.2) * 8 (2200 MHz, 8 XCCs),
    SQ_BUSY_CU_CYCLES = round(GRBM_GUI_ACTIVE / 8 * 256 / 4 * busy) with
    busy = 0.5, 0.6, 0.7 for the 1st..3rd dispatch of a kernel,
    SQ_WAVES = launched waves (workgroups x ceil(workgroup size / 64)),
    SQ_INSTS_VALU = 1000 * (k + 1) + 10 * j, SQ_INSTS_MFMA = VALU * 3 / 4 for
    GEMM kernels and 0 otherwise (k = kernel index in COUNTED, j = dispatch).
  * 908_memory_copy_trace.csv: two host-to-device copies, one overlapping
    the first kernel, one in the gap before the second.
And tests/rocprof/908_subset_results.json: the same 21 dispatches (JSON
records, kernel symbols, agents, metadata) with the same synthetic counters
as callback_records.counter_collection, each value split over two counter
instances the way rocprofv3 writes per-dimension values.
"""
import csv, gzip, json, math, statistics, sys
from pathlib import Path

# Prefixes; each names the first kernel whose truncated name starts with it.
KERNELS = [
    "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT64x32x256_MI16x16x1_SN_LDSB0_AFC0",
    "vectorized_elementwise_kernel",
    "ncclDevKernel_Generic_1",
    "__amd_rocclr_copyBuffer.kd",
    "vectorized_layer_norm_kernel",
    "attn_fwd.kd",
    "reduce_kernel",
]
COUNTED = KERNELS[:2]
OUT = Path(__file__).resolve().parent / "csv_908"


def q(v):
    return '"%s"' % v if isinstance(v, str) else str(v)


def write(name, header, rows):
    with open(OUT / name, "w") as f:
        f.write(",".join(q(h) for h in header) + "\n")
        for r in rows:
            f.write(",".join(q(v) for v in r) + "\n")


def main(src):
    tool = json.load(gzip.open(src))["rocprofiler-sdk-tool"][0]
    syms = {s["kernel_id"]: s for s in tool["kernel_symbols"]}
    agents = {a["id"]["handle"]: a for a in tool["agents"]}
    dispatches = tool["buffer_records"]["kernel_dispatch"]
    full = {}
    for d in dispatches:
        name = syms[d["dispatch_info"]["kernel_id"]]["truncated_kernel_name"]
        for prefix in KERNELS:
            if name.startswith(prefix):
                full.setdefault(prefix, name)
    counted = [full[p] for p in COUNTED]
    picked, seen = [], {}
    for d in dispatches:
        name = syms[d["dispatch_info"]["kernel_id"]]["truncated_kernel_name"]
        if name in full.values() and seen.get(name, 0) < 3:
            seen[name] = seen.get(name, 0) + 1
            picked.append((name, d))
    OUT.mkdir(exist_ok=True)
    kt = []
    for name, d in picked:
        i, s = d["dispatch_info"], syms[d["dispatch_info"]["kernel_id"]]
        ag = agents[i["agent_id"]["handle"]]
        kt.append(["KERNEL_DISPATCH", "Agent %d" % ag["logical_node_id"], i["queue_id"]["handle"],
                   d["stream_id"]["handle"], d["thread_id"], i["dispatch_id"], i["kernel_id"], name,
                   d["correlation_id"]["internal"], d["start_timestamp"], d["end_timestamp"],
                   i["group_segment_size"], i["private_segment_size"], s["arch_vgpr_count"],
                   s["accum_vgpr_count"], s["sgpr_count"], i["workgroup_size"]["x"],
                   i["workgroup_size"]["y"], i["workgroup_size"]["z"], i["grid_size"]["x"],
                   i["grid_size"]["y"], i["grid_size"]["z"]])
    write("908_kernel_trace.csv",
          ["Kind", "Agent_Id", "Queue_Id", "Stream_Id", "Thread_Id", "Dispatch_Id", "Kernel_Id",
           "Kernel_Name", "Correlation_Id", "Start_Timestamp", "End_Timestamp", "LDS_Block_Size",
           "Scratch_Size", "VGPR_Count", "Accum_VGPR_Count", "SGPR_Count", "Workgroup_Size_X",
           "Workgroup_Size_Y", "Workgroup_Size_Z", "Grid_Size_X", "Grid_Size_Y", "Grid_Size_Z"], kt)

    cols = ["Node_Id", "Logical_Node_Id", "Agent_Type", "Cpu_Cores_Count", "Simd_Count",
            "Cpu_Core_Id_Base", "Simd_Id_Base", "Max_Waves_Per_Simd", "Lds_Size_In_Kb",
            "Gds_Size_In_Kb", "Num_Gws", "Wave_Front_Size", "Num_Xcc", "Cu_Count", "Array_Count",
            "Num_Shader_Banks", "Simd_Arrays_Per_Engine", "Cu_Per_Simd_Array", "Simd_Per_Cu",
            "Max_Slots_Scratch_Cu", "Gfx_Target_Version", "Vendor_Id", "Device_Id", "Location_Id",
            "Domain", "Drm_Render_Minor", "Num_Sdma_Engines", "Num_Sdma_Xgmi_Engines",
            "Num_Sdma_Queues_Per_Engine", "Num_Cp_Queues", "Max_Engine_Clk_Ccompute",
            "Max_Engine_Clk_Fcompute", "Sdma_Fw_Version", "Fw_Version", "Capability",
            "Cu_Per_Engine", "Max_Waves_Per_Cu", "Family_Id", "Workgroup_Max_Size",
            "Grid_Max_Size", "Local_Mem_Size", "Hive_Id", "Gpu_Id", "Workgroup_Max_Dim_X",
            "Workgroup_Max_Dim_Y", "Workgroup_Max_Dim_Z", "Grid_Max_Dim_X", "Grid_Max_Dim_Y",
            "Grid_Max_Dim_Z", "Name", "Vendor_Name", "Product_Name", "Model_Name"]
    rows = []
    for a in sorted(tool["agents"], key=lambda a: a["node_id"]):
        r = []
        for c in cols:
            k = c.lower()
            if c == "Agent_Type":
                r.append({1: "CPU", 2: "GPU"}.get(a["type"], "UNK"))
            elif k.endswith(("_dim_x", "_dim_y", "_dim_z")):
                r.append(a[k[:-2]][k[-1]])
            else:
                v = a.get(k, 0)
                r.append(v if isinstance(v, (int, str)) else 0)
        rows.append(r)
    write("908_agent_info.csv", cols, rows)

    stats = {}
    for name, d in picked:
        stats.setdefault(name, []).append(d["end_timestamp"] - d["start_timestamp"])
    total = sum(sum(v) for v in stats.values())
    srows = [[n, len(v), sum(v), sum(v) / len(v), 100.0 * sum(v) / total, min(v), max(v),
              statistics.pstdev(v)] for n, v in stats.items()]
    srows.sort(key=lambda r: -r[2])
    write("908_kernel_stats.csv", ["Name", "Calls", "TotalDurationNs", "AverageNs", "Percentage",
                                   "MinNs", "MaxNs", "StdDev"], srows)

    crows = []
    counter_ids = {"GRBM_GUI_ACTIVE": 1, "SQ_BUSY_CU_CYCLES": 2, "SQ_INSTS_MFMA": 3,
                   "SQ_INSTS_VALU": 4, "SQ_WAVES": 5}
    json_counters = []
    for k, kname in enumerate(counted):
        j = 0
        for name, d in picked:
            if name != kname:
                continue
            i, s = d["dispatch_info"], syms[d["dispatch_info"]["kernel_id"]]
            dur = d["end_timestamp"] - d["start_timestamp"]
            grbm = round(dur * 2.2) * 8
            busy = round(grbm / 8 * 256 / 4 * (0.5 + 0.1 * j))
            g, w = i["grid_size"], i["workgroup_size"]
            wgs = math.ceil(g["x"] / w["x"]) * math.ceil(g["y"] / w["y"]) * math.ceil(g["z"] / w["z"])
            waves = wgs * math.ceil(w["x"] * w["y"] * w["z"] / 64)
            valu = 1000 * (k + 1) + 10 * j
            mfma = valu * 3 // 4 if kname.startswith("Cijk") else 0
            base = [d["correlation_id"]["internal"], i["dispatch_id"], "Agent 2",
                    i["queue_id"]["handle"], 908, d["thread_id"], g["x"] * g["y"] * g["z"],
                    i["kernel_id"], name, w["x"] * w["y"] * w["z"], i["group_segment_size"],
                    i["private_segment_size"], s["arch_vgpr_count"], s["accum_vgpr_count"],
                    s["sgpr_count"]]
            values = [("GRBM_GUI_ACTIVE", grbm), ("SQ_BUSY_CU_CYCLES", busy),
                      ("SQ_INSTS_MFMA", mfma), ("SQ_INSTS_VALU", valu), ("SQ_WAVES", waves)]
            for cname, val in values:
                crows.append(base + [cname, val, d["start_timestamp"], d["end_timestamp"]])
            # JSON: one record per counter instance; split each value over two
            # instances (XCC halves) as rocprofv3 reports per-dimension values.
            records = []
            for cname, val in values:
                half = val // 2
                records += [{"counter_id": {"handle": counter_ids[cname]}, "value": half},
                            {"counter_id": {"handle": counter_ids[cname]}, "value": val - half}]
            json_counters.append({
                "dispatch_data": {"size": 0, "correlation_id": d["correlation_id"],
                                  "start_timestamp": d["start_timestamp"],
                                  "end_timestamp": d["end_timestamp"], "dispatch_info": i},
                "records": records, "thread_id": d["thread_id"],
                "arch_vgpr_count": s["arch_vgpr_count"], "sgpr_count": s["sgpr_count"],
                "lds_block_size_v": i["group_segment_size"]})
            j += 1
    write("908_counter_collection.csv",
          ["Correlation_Id", "Dispatch_Id", "Agent_Id", "Queue_Id", "Process_Id", "Thread_Id",
           "Grid_Size", "Kernel_Id", "Kernel_Name", "Workgroup_Size", "LDS_Block_Size",
           "Scratch_Size", "VGPR_Count", "Accum_VGPR_Count", "SGPR_Count", "Counter_Name",
           "Counter_Value", "Start_Timestamp", "End_Timestamp"], crows)

    # The same dispatches and counters as a (small) JSON results file.
    used = {d["dispatch_info"]["kernel_id"] for _, d in picked}
    subset = {k: v for k, v in tool.items()
              if k in ("metadata", "agents", "strings", "host_functions", "summary")}
    subset["metadata"] = dict(tool["metadata"], config={})
    subset["code_objects"] = []
    # Agents keep their scalar fields (the nested caches / io_links / memory
    # banks are most of the file's size and nothing reads them).
    subset["agents"] = [{k: v for k, v in a.items() if not isinstance(v, list)}
                        for a in tool["agents"]]
    subset["kernel_symbols"] = [s for s in tool["kernel_symbols"] if s["kernel_id"] in used]
    subset["counters"] = [{"id": {"handle": h}, "is_constant": 0, "is_derived": 0, "name": n,
                           "description": "", "block": "", "expression": ""}
                          for n, h in counter_ids.items()]
    subset["callback_records"] = {"counter_collection": json_counters}
    subset["buffer_records"] = {"kernel_dispatch": [d for _, d in picked], "memory_copy": []}
    subset["strings"] = {}
    with open(OUT.parent / "908_subset_results.json", "w") as f:
        json.dump({"rocprofiler-sdk-tool": [subset]}, f, separators=(",", ":"))

    first, second = picked[0][1], picked[1][1]
    copies = [["MEMORY_COPY", "MEMORY_COPY_HOST_TO_DEVICE", 0, "Agent 0", "Agent 2", 0,
               first["start_timestamp"] - 1000, first["start_timestamp"] + 1000],
              ["MEMORY_COPY", "MEMORY_COPY_HOST_TO_DEVICE", 0, "Agent 0", "Agent 2", 0,
               second["start_timestamp"] - 3000, second["start_timestamp"] - 2000]]
    write("908_memory_copy_trace.csv", ["Kind", "Direction", "Stream_Id", "Source_Agent_Id",
                                        "Destination_Agent_Id", "Correlation_Id",
                                        "Start_Timestamp", "End_Timestamp"], copies)


if __name__ == "__main__":
    main(sys.argv[1])

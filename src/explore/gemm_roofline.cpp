#include "explore/gemm_roofline.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "categories/category_analysis.h"
#include "categories/prepare.h"
#include "categories/prepare_trace.h"
#include "insights/autocast.h"
#include "pycompat/numeric.h"
#include "pycompat/text.h"
#include "report/gpu_timeline.h"
#include "report/op_regime.h"

namespace jarvis::analysis {

namespace {

double num(const Table& t, size_t r, std::string_view col) {
  return cell_number(cell_at(t, r, col));
}

ojson num_or_null(double v) {
  return std::isnan(v) ? ojson(nullptr) : ojson(v);
}

// Dimensions and counts: integers in JSON (M=4096, not 4096.0), null when
// unknown. Values outside the exactly-representable range stay doubles.
ojson int_or_null(double v) {
  if (std::isnan(v)) return nullptr;
  if (v == std::floor(v) && std::fabs(v) < 9007199254740992.0)  // 2^53
    return ojson(static_cast<int64_t>(v));
  return ojson(v);
}

// First dtype of a dtype_A_B cell "('c10::BFloat16', 'c10::BFloat16')".
std::string first_dtype(const Cell* c) {
  if (!c || is_na(*c)) return "";
  auto v = try_parse_py_literal(c->to_csv_text(false));
  if (v && v->is_seq() && !v->list.empty()) return v->list[0].str();
  return c->to_csv_text(false);
}

bool quantized(const std::string& op, const std::string& precision, const std::string& dtype) {
  std::string l = pycompat::ascii_lower(op);
  for (const char* m : {"w8a8", "int8", "fp8", "w4a16", "w4a4", "fp4", "mxfp4"})
    if (l.find(m) != std::string::npos) return true;
  std::string d = pycompat::ascii_lower(dtype);
  return precision == "fp8" || precision == "fp4" || d.find("int8") != std::string::npos ||
         d == "signed char" || d.find("float8") != std::string::npos;
}

std::string fmt(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string xml_escape(const std::string& in) {
  std::string out;
  for (char c : in) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else if (c == '"')
      out += "&quot;";
    else
      out += c;
  }
  return out;
}

// Shapes as (M, N, K) for forward / backward pairing.
struct Mnk {
  double m, n, k;
  bool operator==(const Mnk&) const = default;
};

}  // namespace

bool gemm_is_tiny(double m, double n, double k) {
  return std::max({m, n, k}) <= 256 || std::min({m, n, k}) <= 16;
}

bool gemm_batching_pattern(double m, double n, double k, double batch, double count) {
  return gemm_is_tiny(m, n, k) && (count >= 1000 || batch >= 64);
}

std::string gemm_priority(double pct, std::optional<double> eff, bool batching) {
  bool low30 = eff && *eff < 30, low40 = eff && *eff < 40;
  if (pct > 15 && low30) return "Critical";
  if (pct > 10 || low40) return "High";
  if (pct > 5 || batching) return "Medium";
  return "Low";
}

namespace {

// Bytes per element of a precision name ("fp32" 4, "bf16" 2, "fp8" 1).
double element_bytes(const std::string& precision) {
  if (precision == "fp32" || precision == "tf32") return 4;
  if (precision == "bf16" || precision == "fp16") return 2;
  if (precision == "fp8") return 1;
  return 0;
}

struct KernelPrecision {
  std::string name;             // what the kernels compute in ("" unknown)
  std::optional<double> peak;   // its peak, set only when narrower than the recorded one
  double bytes_ratio = 1;       // recorded element size / the kernels' element size
  std::optional<size_t> wraps;  // the enclosed row of the same M, N, K in that precision
};

// What the shape finder needs of every row before the rows are built.
struct RowKey {
  std::optional<Uid> uid;
  Mnk mnk;
  std::string precision;  // recorded
};

// The precision a row's GEMM kernels compute in (in.kernel_precision), when
// narrower than the recorded one: its peak and element size, and the
// enclosed row of the same M, N, K recorded in it (autocast's inner call),
// whose kernels the wrapper's subtree time counts again.
KernelPrecision kernel_precision_of(const GemmRooflineInputs& in, size_t r,
                                    const std::vector<RowKey>& keys, const ojson& maf) {
  KernelPrecision out;
  const RowKey& me = keys[r];
  const double from = element_bytes(me.precision);
  if (!me.uid || from == 0 || !in.kernel_precision) return out;
  out.name = in.kernel_precision(*me.uid);
  const double to = element_bytes(out.name);
  const std::string spec = "matrix_" + out.name;
  if (to == 0 || to >= from || !maf.contains(spec)) return out;  // only a narrower math dtype
  out.peak = maf[spec].get<double>();
  out.bytes_ratio = from / to;
  if (in.encloses)
    for (size_t b = 0; b < keys.size() && !out.wraps; ++b)
      if (b != r && keys[b].uid && keys[b].mnk == me.mnk && keys[b].precision == out.name &&
          in.encloses(*me.uid, *keys[b].uid))
        out.wraps = b;
  return out;
}

}  // namespace

ojson gemm_roofline(const GemmRooflineInputs& in, const GemmRooflineFilters& f) {
  if (!in.gemm_sheet)
    throw std::invalid_argument("the report has no GEMM sheet (no modeled GEMM in the trace)");
  if (!in.arch.is_object() || !in.arch.contains("mem_bw_gbps") ||
      !in.arch.contains("max_achievable_tflops"))
    throw std::invalid_argument(
        "a GPU arch is needed for the roofline (mem_bw_gbps, max_achievable_tflops)");
  Table g = pandas_roundtrip(*in.gemm_sheet);
  double bw_tbs = in.arch["mem_bw_gbps"].get<double>() / 1000.0;
  const ojson& maf = in.arch["max_achievable_tflops"];
  // The sheet sums each op's subtree kernels, so kernels other ops launch
  // inside a GEMM op (autocast's dtype casts, memsets) count there too; the
  // headline total counts each kernel once, under the op that launched it,
  // as ops_summary and category_filter's direct time do.
  double sheet_time = pycompat::pandas_series_sum(column_numbers(g, kKernelSum));
  double gemm_time = in.ops_by_category
                         ? direct_kernel_time_ms_by_key(*in.ops_by_category)["gemm"] * 1000
                         : sheet_time;
  double compute_time = in.computation_time_us > 0 ? in.computation_time_us : gemm_time;

  // The platform's kernel latency floor, from this trace's own cheapest ops
  // (report/op_regime.h): GEMMs whose roofline is below it are latency-bound.
  Table unified = in.unified ? pandas_roundtrip(*in.unified) : Table();
  double floor_us = latency_floor_us(unified);

  std::vector<RowKey> keys;
  for (size_t r = 0; r < g.rows.size(); ++r) {
    RowKey key;
    double uid_value = num(g, r, "UID_first");
    if (!std::isnan(uid_value)) key.uid = static_cast<Uid>(uid_value);
    key.mnk = {num(g, r, "param: M"), num(g, r, "param: N"), num(g, r, "param: K")};
    key.precision = torch_dtype_precision(first_dtype(cell_at(g, r, "param: dtype_A_B")));
    keys.push_back(key);
  }

  std::vector<ojson> shapes;
  std::vector<Mnk> mnk;
  std::vector<bool> backward;
  for (size_t r = 0; r < g.rows.size(); ++r) {
    std::string op = cell_text(cell_at(g, r, "name"));
    double m = num(g, r, "param: M"), n = num(g, r, "param: N"), k = num(g, r, "param: K");
    double batch = num(g, r, "param: B");
    if (std::isnan(batch)) batch = 1;
    double count = num(g, r, "name_count");
    double gflops = num(g, r, "GFLOPS_first");
    double mb = num(g, r, "Data Moved (MB)_first");
    double fpb = num(g, r, "FLOPS/Byte_first");
    double kernel_us = num(g, r, kKernelSum);
    std::string spec = cell_text(cell_at(g, r, "Compute Spec"));
    std::string dtype = first_dtype(cell_at(g, r, "param: dtype_A_B"));
    std::string precision = torch_dtype_precision(dtype);
    std::optional<double> peak;
    if (!spec.empty() && maf.contains(spec)) peak = maf[spec].get<double>();
    double tflops = num(g, r, "TFLOPS/s_mean"), tbs = num(g, r, "TB/s_mean");
    std::optional<Uid> uid = keys[r].uid;
    // Autocast: judged at the precision the kernels compute in (its peak; the
    // bytes scale with the element size when every operand is cast).
    KernelPrecision kp = kernel_precision_of(in, r, keys, maf);
    // flops_per_byte, bytes and TB/s stay TraceLens's (recorded dtype); the
    // bound and the efficiency use the kernels' element size.
    std::optional<double> peak_recorded = peak;
    double fpb_judged = fpb, tbs_judged = tbs;
    if (kp.peak) {
      peak = kp.peak;
      fpb_judged = fpb * kp.bytes_ratio;
      tbs_judged = tbs / kp.bytes_ratio;
    }

    ojson s = ojson::object();
    s["op"] = op;
    s["uid"] = int_or_null(num(g, r, "UID_first"));
    s["M"] = int_or_null(m);
    s["N"] = int_or_null(n);
    s["K"] = int_or_null(k);
    s["batch"] = int_or_null(batch);
    s["dtype"] = dtype;
    s["precision"] = precision.empty() ? ojson(nullptr) : ojson(precision);
    const Cell* tr = cell_at(g, r, "param: transpose");
    s["transpose"] = tr && !is_na(*tr) ? ojson(tr->to_csv_text(false)) : ojson(nullptr);
    s["count"] = int_or_null(count);
    s["flops"] = num_or_null(gflops * 1e9);
    s["bytes"] = num_or_null(mb * 1024 * 1024);
    s["flops_per_byte"] = num_or_null(fpb);
    s["compute_spec"] = spec.empty() ? ojson(nullptr) : ojson(spec);
    s["peak_tflops"] = peak ? ojson(*peak) : ojson(nullptr);
    double ridge = peak ? *peak / bw_tbs : NAN;
    s["ridge_point"] = num_or_null(ridge);
    std::string bound;
    if (peak && !std::isnan(fpb_judged)) bound = fpb_judged >= ridge ? "compute" : "memory";
    s["bound"] = bound.empty() ? ojson(nullptr) : ojson(bound);
    s["roofline_bound_tracelens"] = cell_text(cell_at(g, r, "Roofline Bound_first"));
    s["achieved_tflops"] = num_or_null(tflops);
    s["achieved_tbs"] = num_or_null(tbs);
    std::optional<double> eff;
    if (bound == "compute" && !std::isnan(tflops)) eff = tflops / *peak * 100;
    if (bound == "memory" && !std::isnan(tbs_judged)) eff = tbs_judged / bw_tbs * 100;
    s["efficiency_percent"] = eff ? ojson(*eff) : ojson(nullptr);
    // Above 100 % the kernels beat the model, not the hardware: the figure is
    // kept (it is what the trace measured) and the reason stated (issue 73
    // point 9).
    s["efficiency_above_roof_reason"] = nullptr;
    if (eff && *eff > 100)
      s["efficiency_above_roof_reason"] =
          bound == "memory"
              ? "above 100 %: the byte model reads every operand once from HBM, while the "
                "kernels reuse operands from L2 (or read fewer bytes), so they move less than "
                "modeled; the shape is closer to compute-bound than the model says"
              : "above 100 %: the kernels run faster than the arch file's achievable peak for "
                "this precision (boost clocks, or a peak set below the silicon's): read the "
                "shape as at the roof, with no tuning headroom";
    s["kernel_precision"] = kp.name.empty() ? ojson(nullptr) : ojson(kp.name);
    s["efficiency_percent_recorded_dtype"] = nullptr;
    if (kp.peak) {
      s["compute_spec_of_kernels"] = "matrix_" + kp.name;
      s["flops_per_byte_of_kernels"] = num_or_null(fpb_judged);
      if (peak_recorded && !std::isnan(fpb)) {
        bool compute = fpb >= *peak_recorded / bw_tbs;
        double v = compute ? tflops / *peak_recorded * 100 : tbs / bw_tbs * 100;
        if (!std::isnan(v)) s["efficiency_percent_recorded_dtype"] = v;
      }
    }
    s["pct_roofline_mean"] = num_or_null(num(g, r, "Pct Roofline_mean"));
    double roofline_us = num(g, r, "Roofline Time (µs)_first");
    std::optional<double> roofline;
    if (!std::isnan(roofline_us)) roofline = roofline_us;
    OpRegime regime =
        classify_op_regime(roofline, floor_us, s["roofline_bound_tracelens"].get<std::string>());
    s["roofline_time_us"] = num_or_null(roofline_us);
    s["regime"] = std::string(regime_name(regime));
    double mean_us = num(g, r, "Kernel Time (µs)_mean");
    auto headroom = tuning_headroom_us(mean_us, roofline, floor_us, regime);
    s["tuning_headroom_us"] =
        headroom && !std::isnan(count) ? ojson(*headroom * count) : ojson(nullptr);
    s["kernel_time_us"] = num_or_null(kernel_us);
    double pct = compute_time > 0 ? kernel_us / compute_time * 100 : 0;
    s["percent_of_compute"] = pct;
    s["percent_of_gemm"] = sheet_time > 0 ? kernel_us / sheet_time * 100 : 0;
    s["percent_of_total"] =
        in.total_time_us > 0 ? ojson(kernel_us / in.total_time_us * 100) : ojson(nullptr);
    bool tiny = gemm_is_tiny(m, n, k);
    bool batching = gemm_batching_pattern(m, n, k, batch, count);
    bool quant = quantized(op, precision, dtype);
    s["flags"] = {{"tiny", tiny}, {"batching_pattern", batching}, {"quantized", quant}};
    s["priority"] = gemm_priority(pct, eff, batching);
    s["kernels"] = cell_text(cell_at(g, r, "trunc_kernel_details"));
    bool bwd = false;
    if (in.is_backward && uid) bwd = in.is_backward(*uid);
    s["pass"] = bwd ? "backward" : "forward";
    s["wraps_shape"] = kp.wraps ? ojson(*kp.wraps) : ojson(nullptr);
    shapes.push_back(s);
    mnk.push_back({m, n, k});
    backward.push_back(bwd);
  }

  // Linear layers: forward (M, N, K) with backward (M, K, N) and (N, K, M).
  ojson linear = ojson::array();
  for (size_t a = 0; a < shapes.size(); ++a) {
    if (backward[a]) continue;
    Mnk want_dx{mnk[a].m, mnk[a].k, mnk[a].n}, want_dw{mnk[a].n, mnk[a].k, mnk[a].m};
    ojson dx = nullptr, dw = nullptr;
    for (size_t b = 0; b < shapes.size(); ++b) {
      if (b == a || !backward[b]) continue;
      if (dx.is_null() && mnk[b] == want_dx)
        dx = b;
      else if (dw.is_null() && mnk[b] == want_dw)
        dw = b;
    }
    if (dx.is_null() && dw.is_null()) continue;
    linear.push_back({{"forward", a},
                      {"grad_input", dx},
                      {"grad_weight", dw},
                      {"M", int_or_null(mnk[a].m)},
                      {"N", int_or_null(mnk[a].n)},
                      {"K", int_or_null(mnk[a].k)}});
  }

  // GEMM-category rows of unified_perf_summary without a perf model.
  ojson missing = ojson::array();
  if (in.unified) {
    const Table& u = unified;
    for (size_t r = 0; r < u.rows.size(); ++r) {
      std::string cat = normalize_category(cell_at(u, r, "op category")).first;
      if (cat != "gemm" && !cat.starts_with("groupedgemm")) continue;
      const Cell* hp = cell_at(u, r, "has_perf_model");
      bool has_model = hp && !is_na(*hp) && cell_number(hp) != 0;
      if (has_model && !std::isnan(num(u, r, "GFLOPS"))) continue;
      missing.push_back({{"op", cell_text(cell_at(u, r, "name"))},
                         {"Input Dims", cell_text(cell_at(u, r, "Input Dims"))},
                         {"count", int_or_null(num(u, r, "operation_count"))},
                         {"kernel_time_us", num_or_null(num(u, r, kKernelSum))}});
    }
  }

  // Order by kernel time, then filter.
  std::vector<size_t> idx(shapes.size());
  for (size_t k = 0; k < idx.size(); ++k) idx[k] = k;
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    return shapes[a]["kernel_time_us"].get<double>() > shapes[b]["kernel_time_us"].get<double>();
  });
  ojson out_shapes = ojson::array();
  std::map<std::string, int> priority_counts;
  size_t quant_count = 0, batching_count = 0;
  for (size_t k : idx) {
    ojson s = shapes[k];
    s["index"] = k;
    priority_counts[s["priority"].get<std::string>()]++;
    quant_count += s["flags"]["quantized"].get<bool>();
    batching_count += s["flags"]["batching_pattern"].get<bool>();
    if (!f.op_contains.empty() &&
        s["op"].get<std::string>().find(f.op_contains) == std::string::npos)
      continue;
    if (!f.dtype.empty() && s["precision"] != f.dtype) continue;
    if (s["percent_of_compute"].get<double>() < f.min_percent) continue;
    if (out_shapes.size() >= f.top_n) break;
    out_shapes.push_back(s);
  }
  ojson summary = ojson::object();
  for (const char* p : {"Critical", "High", "Medium", "Low"}) summary[p] = priority_counts[p];
  ojson r = ojson::object();
  r["arch"] = in.arch.value("name", "");
  r["peak_hbm_bw_tbs"] = bw_tbs;
  r["latency_floor_us"] = floor_us;
  r["gemm_time_us"] = gemm_time;
  r["gemm_sheet_kernel_time_us"] = sheet_time;
  r["computation_time_us"] = compute_time;
  r["gemm_percent_of_compute"] = compute_time > 0 ? gemm_time / compute_time * 100 : 0;
  r["shape_count"] = shapes.size();
  r["shapes"] = out_shapes;
  r["priority_counts"] = summary;
  r["quantized_shape_count"] = quant_count;
  r["batching_pattern_count"] = batching_count;
  r["missing_perf_model"] = missing;
  r["linear_layers"] = linear;
  return r;
}

ojson gemm_roofline_for_report(const Trace& trace, const CallTree& tree, const Report& report,
                               const std::string& arch, const GemmRooflineFilters& filters) {
  GemmRooflineInputs in;
  in.gemm_sheet = report.find("GEMM");
  in.unified = report.find("unified_perf_summary");
  in.ops_by_category = report.find("ops_summary_by_category");
  in.arch = load_arch_json(arch);
  in.computation_time_us = report.timeline.computation_time;
  in.total_time_us = report.timeline.total_time;
  in.is_backward = [&](Uid uid) {
    for (Uid p = uid; p != kNoUid && p < trace.events.size(); p = tree.parent(p))
      if (trace.name(p).starts_with("autograd::engine::evaluate_function")) return true;
    return false;
  };
  in.kernel_precision = [&](Uid uid) { return insights::gemm_compute_precision(trace, tree, uid); };
  in.encloses = [&](Uid outer, Uid inner) {
    if (outer >= trace.events.size() || inner >= trace.events.size()) return false;
    for (Uid p = tree.parent(inner); p != kNoUid; p = tree.parent(p))
      if (p == outer) return true;
    return false;
  };
  return gemm_roofline(in, filters);
}

ojson gemm_roofline_for_trace(const Trace& trace, const CallTree& tree, const std::string& arch,
                              const GemmRooflineFilters& filters) {
  Report report = perf_report(trace, tree, arch);  // its timeline too: computed once
  return gemm_roofline_for_report(trace, tree, report, arch, filters);
}

std::string gemm_roofline_svg(const ojson& rf) {
  const double W = 720, H = 480, L = 70, R = 20, T = 30, B = 50;
  double bw = rf.value("peak_hbm_bw_tbs", 1.0);
  double peak = 0;
  for (const auto& s : rf["shapes"])
    if (s["peak_tflops"].is_number()) peak = std::max(peak, s["peak_tflops"].get<double>());
  if (peak <= 0) peak = 1000;
  double x0 = -1, x1 = 4, y0 = -2, y1 = std::ceil(std::log10(peak * 2));
  auto px = [&](double fpb) { return L + (std::log10(fpb) - x0) / (x1 - x0) * (W - L - R); };
  auto py = [&](double tf) { return H - B - (std::log10(tf) - y0) / (y1 - y0) * (H - T - B); };
  auto clampx = [&](double v) { return std::clamp(v, std::pow(10, x0), std::pow(10, x1)); };
  auto clampy = [&](double v) { return std::clamp(v, std::pow(10, y0), std::pow(10, y1)); };
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + fmt(W, 0) +
                    "\" height=\"" + fmt(H, 0) +
                    "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += "<text x=\"" + fmt(W / 2, 0) +
         "\" y=\"18\" text-anchor=\"middle\" font-size=\"13\">GEMM roofline (" +
         xml_escape(rf.value("arch", std::string("?"))) + ")</text>\n";
  for (int e = static_cast<int>(x0); e <= static_cast<int>(x1); ++e)
    svg += "<line x1=\"" + fmt(px(std::pow(10, e)), 1) + "\" y1=\"" + fmt(T, 0) + "\" x2=\"" +
           fmt(px(std::pow(10, e)), 1) + "\" y2=\"" + fmt(H - B, 0) +
           "\" stroke=\"#eee\"/><text x=\"" + fmt(px(std::pow(10, e)), 1) + "\" y=\"" +
           fmt(H - B + 15, 0) + "\" text-anchor=\"middle\">1e" + std::to_string(e) + "</text>\n";
  for (int e = static_cast<int>(y0); e <= static_cast<int>(y1); ++e)
    svg += "<line x1=\"" + fmt(L, 0) + "\" y1=\"" + fmt(py(std::pow(10, e)), 1) + "\" x2=\"" +
           fmt(W - R, 0) + "\" y2=\"" + fmt(py(std::pow(10, e)), 1) +
           "\" stroke=\"#eee\"/><text x=\"" + fmt(L - 5, 0) + "\" y=\"" +
           fmt(py(std::pow(10, e)) + 4, 1) + "\" text-anchor=\"end\">1e" + std::to_string(e) +
           "</text>\n";
  svg += "<text x=\"" + fmt(W / 2, 0) + "\" y=\"" + fmt(H - 10, 0) +
         "\" text-anchor=\"middle\">arithmetic intensity (FLOPs/byte)</text>\n";
  svg += "<text x=\"15\" y=\"" + fmt(H / 2, 0) + "\" transform=\"rotate(-90 15 " + fmt(H / 2, 0) +
         ")\" text-anchor=\"middle\">TFLOPS/s</text>\n";
  // Roof for each distinct peak (one per compute spec).
  std::vector<double> peaks;
  for (const auto& s : rf["shapes"])
    if (s["peak_tflops"].is_number() &&
        std::find(peaks.begin(), peaks.end(), s["peak_tflops"].get<double>()) == peaks.end())
      peaks.push_back(s["peak_tflops"].get<double>());
  if (peaks.empty()) peaks.push_back(peak);
  for (double p : peaks) {
    double ridge = p / bw;
    double xa = std::pow(10, x0), xb = std::pow(10, x1);
    svg += "<polyline fill=\"none\" stroke=\"#c33\" stroke-width=\"2\" points=\"" + fmt(px(xa), 1) +
           "," + fmt(py(clampy(bw * xa)), 1) + " " + fmt(px(clampx(ridge)), 1) + "," +
           fmt(py(p), 1) + " " + fmt(px(xb), 1) + "," + fmt(py(p), 1) + "\"/>\n";
    svg += "<line x1=\"" + fmt(px(clampx(ridge)), 1) + "\" y1=\"" + fmt(py(p), 1) + "\" x2=\"" +
           fmt(px(clampx(ridge)), 1) + "\" y2=\"" + fmt(H - B, 0) +
           "\" stroke=\"#c33\" stroke-dasharray=\"4,3\"/><text x=\"" +
           fmt(px(clampx(ridge)) + 4, 1) + "\" y=\"" + fmt(py(p) - 4, 1) + "\">ridge " +
           fmt(ridge, 1) + " (" + fmt(p, 0) + " TFLOPS)</text>\n";
  }
  for (const auto& s : rf["shapes"]) {
    if (!s["flops_per_byte"].is_number() || !s["achieved_tflops"].is_number()) continue;
    double x = clampx(s["flops_per_byte"].get<double>()),
           y = clampy(s["achieved_tflops"].get<double>());
    std::string color = s["priority"] == "Critical" ? "#d00"
                        : s["priority"] == "High"   ? "#e80"
                        : s["priority"] == "Medium" ? "#cc0"
                                                    : "#39c";
    svg += "<circle cx=\"" + fmt(px(x), 1) + "\" cy=\"" + fmt(py(y), 1) + "\" r=\"5\" fill=\"" +
           color + "\" opacity=\"0.8\"><title>" + xml_escape(s["op"].get<std::string>()) +
           " M=" + s["M"].dump() + " N=" + s["N"].dump() + " K=" + s["K"].dump() +
           "</title></circle><text x=\"" + fmt(px(x) + 6, 1) + "\" y=\"" + fmt(py(y) - 6, 1) +
           "\">#" + s["index"].dump() + "</text>\n";
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace jarvis::analysis

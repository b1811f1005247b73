#include "charts/timeline_view.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "charts/charts.h"
#include "charts/html.h"

namespace jarvis::charts {

namespace {

using nlohmann::json;

bool is_cpu_slice(Cat c) {
  return c == Cat::CpuOp || c == Cat::UserAnnotation || c == Cat::CudaRuntime ||
         c == Cat::CudaDriver;
}

// Slice kinds, as the script colours them.
enum Kind : int { kOp = 0, kAnnotation = 1, kRuntime = 2, kKernel = 3, kComm = 4, kMemcpy = 5 };

int kind_of(const Trace& trace, Uid u) {
  const Event& e = trace.events[u];
  switch (e.cat) {
    case Cat::UserAnnotation:
      return kAnnotation;
    case Cat::CudaRuntime:
    case Cat::CudaDriver:
      return kRuntime;
    case Cat::GpuMemcpy:
    case Cat::GpuMemset:
      return kMemcpy;
    case Cat::Kernel: {
      std::string_view n = trace.name(u);
      return n.find("nccl") != std::string_view::npos || n.find("rccl") != std::string_view::npos
                 ? kComm
                 : kKernel;
    }
    default:
      return kOp;
  }
}

std::string lane_name(const Trace& trace, const Event& e) {
  if (e.is_gpu()) {
    std::string stream = trace.stream(e) == kNoInt ? "?" : std::to_string(trace.stream(e));
    if (trace.device(e) == kNoInt) return "GPU stream " + stream;
    return fmt::format("GPU {} stream {}", trace.device(e), stream);
  }
  std::string tid = trace.proc_id_text(trace.tid(e));
  std::string name = trace.thread_name(trace.pid(e), trace.tid(e));
  return name == "Unknown" || name.empty() ? "thread " + tid : fmt::format("{} ({})", name, tid);
}

// Microseconds kept to the nanosecond (shorter JSON).
double to_ns_precision(double us) {
  return std::round(us * 1e3) / 1e3;
}

int64_t ns_key(double us) {
  return static_cast<int64_t>(std::llround(us * 1e3));
}

bool is_step(const Trace& trace, Uid u) {
  return trace.events[u].cat == Cat::UserAnnotation && trace.name(u).starts_with("ProfilerStep#");
}

struct SliceWindow {
  size_t first = 0, count = 0;
  std::string label;  // what the window is, for the caption
};

// The slices a long trace shows (`picked` sorted by start). With
// ProfilerStep#N steps: whole steps, the longest run that fits ending with the
// last step (the steady state a person reads first; a step's slices run from
// its start to the next step's, so its GPU tail comes with it); when even the
// last step has more, that step's first slices. Without steps: the middle.
SliceWindow window_of(const Trace& trace, const std::vector<Uid>& picked, size_t max_slices) {
  std::vector<size_t> starts;  // index in `picked` of each step's first slice
  for (size_t i = 0; i < picked.size(); ++i)
    if (is_step(trace, picked[i]) && (starts.empty() || trace.events[picked[starts.back()]].ts_ns !=
                                                            trace.events[picked[i]].ts_ns))
      starts.push_back(i);
  if (starts.empty()) {
    const size_t first = (picked.size() - max_slices) / 2;
    return {first, max_slices,
            fmt::format("{} consecutive slices of {} from the middle of the trace (it has no "
                        "ProfilerStep#N steps to choose whole ones)",
                        max_slices, picked.size())};
  }
  const size_t end = picked.size();
  size_t k = starts.size() - 1;  // first step of the window
  if (end - starts[k] > max_slices)
    return {starts[k], max_slices,
            fmt::format("the first {} slices of {} ({} slices; {} in the trace)", max_slices,
                        trace.name(picked[starts[k]]), end - starts[k], picked.size())};
  while (k > 0 && end - starts[k - 1] <= max_slices) --k;
  const std::string first_name(trace.name(picked[starts[k]]));
  const std::string last_name(trace.name(picked[starts.back()]));
  return {starts[k], end - starts[k],
          fmt::format("{} slices of {}: {} (whole steps, to the trace's end)", end - starts[k],
                      picked.size(),
                      k + 1 == starts.size() ? first_name : first_name + " to " + last_name)};
}

}  // namespace

TimelineViewData timeline_view_data(const Trace& trace, const critical_path::Analysis* path,
                                    size_t max_slices) {
  TimelineViewData out;
  std::vector<Uid> picked;
  for (Uid u = 0; u < trace.events.size(); ++u) {
    const Event& e = trace.events[u];
    if (e.ph != Phase::Complete || !e.has_ts() || !e.has_dur()) continue;
    if (e.is_gpu() || is_cpu_slice(e.cat)) picked.push_back(u);
  }
  out.total = picked.size();
  if (picked.empty() || max_slices == 0) return out;
  std::stable_sort(picked.begin(), picked.end(), [&](Uid a, Uid b) {
    const Event &x = trace.events[a], &y = trace.events[b];
    return x.ts_ns != y.ts_ns ? x.ts_ns < y.ts_ns : x.dur_ns > y.dur_ns;  // parents first
  });
  if (picked.size() > max_slices) {
    const SliceWindow w = window_of(trace, picked, max_slices);
    out.window_label = w.label;
    picked = std::vector<Uid>(picked.begin() + static_cast<std::ptrdiff_t>(w.first),
                              picked.begin() + static_cast<std::ptrdiff_t>(w.first + w.count));
  }
  out.slices = picked.size();
  out.window_start_us = trace.events[picked.front()].ts();
  out.window_end_us = out.window_start_us;
  for (Uid u : picked) out.window_end_us = std::max(out.window_end_us, trace.events[u].end());
  const double t0 = out.window_start_us;

  // Lanes: CPU threads first (in order of first slice), then GPU streams.
  std::map<std::pair<bool, std::string>, size_t> lane_order;  // (gpu, name) -> first index
  std::vector<size_t> lane_of(picked.size());
  std::vector<std::string> lane_label;
  for (size_t i = 0; i < picked.size(); ++i) {
    const Event& e = trace.events[picked[i]];
    std::string name = lane_name(trace, e);
    auto key = std::make_pair(e.is_gpu(), name);
    auto [it, added] = lane_order.emplace(key, lane_order.size());
    lane_of[i] = it->second;
    if (added) lane_label.push_back(name);
  }
  // Sorted lanes: CPU (by first appearance) before GPU (by name).
  std::vector<std::pair<std::pair<bool, size_t>, size_t>> ordering;  // ((gpu, order), id)
  for (const auto& [key, id] : lane_order)
    ordering.push_back({{key.first, key.first ? 0 : id}, id});
  std::stable_sort(ordering.begin(), ordering.end());
  std::vector<size_t> position(lane_order.size());
  json lanes = json::array();
  for (size_t p = 0; p < ordering.size(); ++p) {
    size_t id = ordering[p].second;
    position[id] = p;
    lanes.push_back({{"name", lane_label[id]}, {"gpu", ordering[p].first.first}, {"depth", 1}});
  }

  // Critical-path slices: GPU ops and host calls on the path, by start time.
  std::map<int64_t, int> on_path;  // start (ns) -> 1 for gpu, 2 for host call
  json path_json = json::array();
  if (path)
    for (const auto& it : path->iterations)
      for (const auto& s : it.path) {
        if (s.start_us + s.dur_us < t0 || s.start_us > out.window_end_us) continue;
        const std::string label(!s.kernel().empty()     ? s.kernel()
                                : !s.op().empty()       ? s.op()
                                : !s.category().empty() ? s.category()
                                                        : s.kind());
        path_json.push_back({to_ns_precision(s.start_us - t0), to_ns_precision(s.dur_us), label,
                             s.kind(), it.name});
        if (s.kind() == "gpu") on_path[ns_key(s.start_us)] |= 1;
        if (s.kind() == "host_call") on_path[ns_key(s.start_us)] |= 2;
      }

  // Slices with their nesting depth per lane (a stack of open ends).
  std::vector<std::string> names;
  std::unordered_map<uint32_t, size_t> name_index;
  std::vector<std::vector<double>> open_ends(lane_order.size());
  std::vector<int> max_depth(lane_order.size(), 0);
  json slices = json::array();
  json steps = json::array();
  for (size_t i = 0; i < picked.size(); ++i) {
    const Event& e = trace.events[picked[i]];
    size_t lane = position[lane_of[i]];
    auto& stack = open_ends[lane];
    while (!stack.empty() && stack.back() <= e.ts()) stack.pop_back();
    int depth = e.is_gpu() ? 0 : static_cast<int>(stack.size());
    if (!e.is_gpu()) stack.push_back(e.end());
    max_depth[lane] = std::max(max_depth[lane], depth);
    auto [nit, added] = name_index.emplace(e.name, names.size());
    if (added) names.emplace_back(trace.name(picked[i]));
    int flags = 0;
    if (auto p = on_path.find(e.ts_ns); p != on_path.end()) {
      bool gpu_hit = e.is_gpu() && (p->second & 1);
      bool host_hit = e.is_runtime() && (p->second & 2);
      if (gpu_hit || host_hit) flags = 1, ++out.path_marked;
    }
    // [lane, start, dur, name, depth, kind, on critical path]
    slices.push_back({lane, to_ns_precision(e.ts() - t0), e.dur(), nit->second, depth,
                      kind_of(trace, picked[i]), flags});
    if (is_step(trace, picked[i]))
      steps.push_back({to_ns_precision(e.ts() - t0), e.dur(), std::string(trace.name(picked[i]))});
  }
  for (size_t l = 0; l < lanes.size(); ++l) lanes[l]["depth"] = max_depth[l] + 1;
  json data = {{"t0_us", t0},      {"end_us", to_ns_precision(out.window_end_us - t0)},
               {"lanes", lanes},   {"names", names},
               {"slices", slices}, {"steps", steps},
               {"path", path_json}};
  out.json = data.dump(-1, ' ', false, json::error_handler_t::replace);
  return out;
}

namespace {

// Draws the data of a <script type="application/json" class="timeline-data">
// into the canvas beside it. The canvas carries the visible window in
// data-view-start / data-view-end (us from the window start) for tests.
constexpr const char* kTimelineScript = R"JS(
(function () {
  var box = document.getElementById('timeline-view');
  if (!box) return;
  var data = JSON.parse(box.querySelector('script.timeline-data').textContent);
  var canvas = box.querySelector('canvas'), tip = box.querySelector('.tl-tip');
  var ctx = canvas.getContext('2d');
  var GUTTER = 190, ROW = 14, GAP = 6, TOP = 22;
  var colours = ['#4c78a8', '#9d755d', '#bab0ac', '#2a9d8f', '#54a24b', '#b279a2'];
  var pathColours = {gpu: '#d62728', host_call: '#ff7f0e'};
  var rows = [], y = TOP;
  // Lane 0 is the critical path when there is one.
  if (data.path.length) { rows.push({name: 'critical path', y: y, h: ROW, path: true}); y += ROW + GAP; }
  data.lanes.forEach(function (l) { rows.push({name: l.name, y: y, h: l.depth * ROW, lane: true}); y += l.depth * ROW + GAP; });
  var laneRow = rows.filter(function (r) { return r.lane; });
  var view = {start: 0, end: Math.max(data.end_us, 1e-3)};
  var dpr = window.devicePixelRatio || 1;
  function size() {
    var w = box.clientWidth;
    canvas.style.width = w + 'px'; canvas.style.height = y + 'px';
    canvas.width = Math.round(w * dpr); canvas.height = Math.round(y * dpr);
  }
  function xOf(t) { return GUTTER + (t - view.start) / (view.end - view.start) * (canvas.width / dpr - GUTTER); }
  function fmt(us) {
    if (Math.abs(us) >= 1e3) return (us / 1e3).toFixed(us >= 1e5 ? 0 : 2) + ' ms';
    return us.toFixed(us >= 100 ? 0 : 2) + ' us';
  }
  function draw() {
    var W = canvas.width / dpr;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, W, y);
    ctx.font = '11px Helvetica, Arial, sans-serif';
    ctx.textBaseline = 'middle';
    // Steps: a band on top and a line down the lanes at each step's start.
    data.steps.forEach(function (s, i) {
      var a = Math.max(xOf(s[0]), GUTTER), b = Math.min(xOf(s[0] + s[1]), W);
      if (b < GUTTER || a > W) return;
      ctx.fillStyle = i % 2 ? '#e8eef7' : '#d3dff0';
      ctx.fillRect(a, 2, b - a, TOP - 6);
      ctx.fillStyle = '#333';
      if (b - a > 60) ctx.fillText(s[2] + ' (' + fmt(s[1]) + ')', a + 3, 2 + (TOP - 6) / 2, b - a - 6);
      ctx.strokeStyle = '#6a8ec8'; ctx.beginPath(); ctx.moveTo(a, TOP - 4); ctx.lineTo(a, y); ctx.stroke();
    });
    data.slices.forEach(function (s) {
      var r = laneRow[s[0]], a = xOf(s[1]), b = xOf(s[1] + s[2]);
      if (b < GUTTER || a > W) return;
      a = Math.max(a, GUTTER); var w = Math.max(b - a, 0.5), top = r.y + s[4] * ROW;
      ctx.fillStyle = colours[s[5]];
      ctx.fillRect(a, top + 1, w, ROW - 2);
      if (s[6]) { ctx.strokeStyle = '#d62728'; ctx.lineWidth = 2; ctx.strokeRect(a, top + 1, w, ROW - 2); ctx.lineWidth = 1; }
      if (w > 40) { ctx.fillStyle = '#fff'; ctx.fillText(data.names[s[3]], a + 2, top + ROW / 2, w - 4); }
    });
    var pr = rows[0];
    if (pr && pr.path) data.path.forEach(function (p) {
      var a = xOf(p[0]), b = xOf(p[0] + p[1]);
      if (b < GUTTER || a > W) return;
      a = Math.max(a, GUTTER);
      ctx.fillStyle = pathColours[p[3]] || '#8c564b';
      ctx.fillRect(a, pr.y + 1, Math.max(b - a, 0.5), ROW - 2);
    });
    // Lane names over a white gutter.
    ctx.fillStyle = '#fff'; ctx.fillRect(0, 0, GUTTER, y);
    rows.forEach(function (r) {
      ctx.fillStyle = r.path ? '#d62728' : '#222';
      ctx.fillText(r.name, 4, r.y + ROW / 2, GUTTER - 8);
      ctx.strokeStyle = '#eee'; ctx.beginPath(); ctx.moveTo(0, r.y + r.h + GAP / 2); ctx.lineTo(W, r.y + r.h + GAP / 2); ctx.stroke();
    });
    ctx.fillStyle = '#555';
    ctx.fillText(fmt(view.start) + ' .. ' + fmt(view.end) + ' (' + fmt(view.end - view.start) + ' shown)', 4, 10, GUTTER - 8);
    canvas.dataset.viewStart = view.start; canvas.dataset.viewEnd = view.end;
  }
  function timeAt(px) { return view.start + (px - GUTTER) / (canvas.width / dpr - GUTTER) * (view.end - view.start); }
  canvas.addEventListener('wheel', function (ev) {
    ev.preventDefault();
    var rect = canvas.getBoundingClientRect(), px = ev.clientX - rect.left;
    if (px < GUTTER) return;
    var t = timeAt(px), k = Math.exp(ev.deltaY * 0.002), span = (view.end - view.start) * k;
    span = Math.max(span, 0.01);
    view.start = t - (t - view.start) * k; view.end = view.start + span;
    draw();
  }, {passive: false});
  var drag = null;
  canvas.addEventListener('mousedown', function (ev) { drag = {x: ev.clientX, start: view.start, end: view.end}; });
  window.addEventListener('mouseup', function () { drag = null; });
  canvas.addEventListener('dblclick', function () { view.start = 0; view.end = Math.max(data.end_us, 1e-3); draw(); });
  canvas.addEventListener('mousemove', function (ev) {
    var rect = canvas.getBoundingClientRect(), px = ev.clientX - rect.left, py = ev.clientY - rect.top;
    if (drag) {
      var dt = (ev.clientX - drag.x) / (canvas.width / dpr - GUTTER) * (drag.end - drag.start);
      view.start = drag.start - dt; view.end = drag.end - dt; draw(); return;
    }
    var t = timeAt(px), hit = null;
    var r = rows.filter(function (r) { return py >= r.y && py < r.y + r.h; })[0];
    if (r && r.path) data.path.forEach(function (p) { if (t >= p[0] && t <= p[0] + p[1]) hit = p[2] + ' (critical path, ' + p[3] + ', ' + p[4] + '): ' + fmt(p[1]); });
    else if (r && px >= GUTTER) {
      var lane = laneRow.indexOf(r), depth = Math.floor((py - r.y) / ROW);
      data.slices.forEach(function (s) { if (s[0] === lane && s[4] === depth && t >= s[1] && t <= s[1] + s[2]) hit = data.names[s[3]] + ': ' + fmt(s[2]) + ' at ' + fmt(s[1]) + (s[6] ? ' (on the critical path)' : ''); });
    }
    tip.textContent = hit || ''; tip.style.visibility = hit ? 'visible' : 'hidden';
    tip.style.left = Math.min(px + 12, box.clientWidth - 300) + 'px'; tip.style.top = (py + 12) + 'px';
  });
  canvas.addEventListener('mouseleave', function () { tip.style.visibility = 'hidden'; });
  window.addEventListener('resize', function () { size(); draw(); });
  size(); draw();
})();
)JS";

}  // namespace

std::string timeline_view_html(const TimelineViewData& data) {
  if (data.json.empty()) return "";
  std::string scope =
      data.slices == data.total ? fmt::format("all {} slices", data.total) : data.window_label;
  // "</" cannot end the script early: JSON may escape the slash.
  std::string payload;
  payload.reserve(data.json.size());
  for (size_t i = 0; i < data.json.size(); ++i) {
    if (data.json[i] == '<' && i + 1 < data.json.size() && data.json[i + 1] == '/')
      payload += "<\\";
    else
      payload += data.json[i];
  }
  return fmt::format(
      "<div id=\"timeline-view\" style=\"position:relative\">\n"
      "<canvas aria-label=\"timeline of CPU threads and GPU streams\"></canvas>\n"
      "<div class=\"tl-tip\" style=\"position:absolute;visibility:hidden;background:#fffbe6;"
      "border:1px solid #ccc;padding:2px 6px;font-size:12px;max-width:300px;pointer-events:none\">"
      "</div>\n<script type=\"application/json\" class=\"timeline-data\">{}</script>\n</div>\n"
      "<p class=\"note\">CPU threads (ops blue, annotations brown, runtime calls grey; nested) "
      "and GPU streams (kernels teal, communication green, memcpy/memset purple) over {} ({} "
      "window); ProfilerStep#N steps along the top; the critical path in its own lane (GPU ops "
      "red, host calls orange, host gaps and launch latency brown), its slices outlined in red "
      "in their lanes ({} outlined). Wheel: zoom at the pointer; drag: pan; double click: whole "
      "window.</p>\n<script>{}</script>\n",
      payload, html_escape(scope),
      html_escape(format_value(data.window_end_us - data.window_start_us, Unit::Microseconds)),
      data.path_marked, kTimelineScript);
}

}  // namespace jarvis::charts

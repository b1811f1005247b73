// The report page's interactive timeline: one lane per CPU thread (ops,
// annotations and runtime calls, nested by depth) and per GPU stream
// (kernels, memcpy, memset), the ProfilerStep#N steps as a band on top, and
// the measured critical path as a lane of its own, with the slices on it
// outlined in their thread or stream lane. Drawn on a canvas by a small
// script in the page (no library, no network): the wheel zooms around the
// pointer, a drag pans, a double click resets, hovering shows a slice.
#pragma once

#include <cstddef>
#include <string>

#include "critical_path/critical_path.h"
#include "trace/trace.h"

namespace jarvis::charts {

// Slices drawn at most; a longer trace shows whole ProfilerStep#N steps,
// the last ones that fit, or without steps the middle (the caption says which).
inline constexpr size_t kTimelineMaxSlices = 40000;

struct TimelineViewData {
  std::string json;          // the data the script draws (lanes, slices, steps, path)
  size_t slices = 0;         // drawn
  size_t total = 0;          // candidates in the whole trace
  size_t path_marked = 0;    // slices outlined as on the critical path
  std::string window_label;  // which slices, when not all (the caption's words)
  double window_start_us = 0, window_end_us = 0;
};

// nullopt-like: json empty when the trace has no timed CPU or GPU slice.
// `path`: the measured critical path (null: no path lane).
TimelineViewData timeline_view_data(const Trace& trace, const critical_path::Analysis* path,
                                    size_t max_slices = kTimelineMaxSlices);

// The section body: canvas, caption, the data and the drawing script.
std::string timeline_view_html(const TimelineViewData& data);

}  // namespace jarvis::charts

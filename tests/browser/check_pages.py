#!/usr/bin/env python3
"""Loads HTML pages in headless Chromium and fails on any console error,
uncaught exception or failed request; saves a full-page screenshot per page.

Talks the Chrome DevTools Protocol over --remote-debugging-pipe (fd 3 in,
fd 4 out, NUL-separated JSON), so it needs nothing beyond the standard
library and the chromium binary.

    check_pages.py CHROMIUM SCREENSHOT_DIR [--memory-peaks PAGE.html=LABEL|LABEL...]...
        [--first-section PAGE.html=ID]... [--layout PAGE.html]... [--timeline PAGE.html]...
        PAGE.html...

--first-section: PAGE's first <section> must be ID and start on the first screen
(the report opens with its verdict, issue 50).

--layout: PAGE's charts fill the content width (at least 90 %), no table is
wider than the page (no sideways scrolling) nor has rows taller than four
lines, no legend entry is cut short ("redu…"), and no roofline roof label
covers a circle (issue 50).

--timeline: PAGE links its annotated trace (a#annotated-trace, a gzip JSON
trace beside the page with the jarvis annotations process) and draws the
interactive timeline: a canvas that zooms in on a wheel turn.

--memory-peaks: PAGE must hold one memory timeline chart per label, in that
order, each drawing its allocated and reserved paths and a peak marker whose
label reads LABEL (e.g. "peak 96.6 MiB", as `jarvis memory` prints it).
"""
import base64
import gzip
import json
import os
import pathlib
import select
import subprocess
import sys
import tempfile
import time

TIMEOUT_S = 60


class Browser:
    def __init__(self, binary, profile):
        to_child_r, self.to_child = os.pipe()
        self.from_child, from_child_w = os.pipe()

        def wire_fds():  # runs in the child: CDP expects fds 3 and 4
            # Move both ends out of the way first: the pipes may themselves be 3 or 4.
            read_end, write_end = os.dup(to_child_r), os.dup(from_child_w)
            os.dup2(read_end, 3, inheritable=True)
            os.dup2(write_end, 4, inheritable=True)

        self.proc = subprocess.Popen(
            [binary, "--headless=new", "--no-sandbox", "--disable-gpu",
             "--remote-debugging-pipe", "--no-first-run", "--no-default-browser-check",
             "--disable-extensions", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--hide-scrollbars",
             f"--user-data-dir={profile}", "--window-size=1400,900", "about:blank"],
            # close_fds would run after preexec_fn and close fds 3 and 4 again.
            preexec_fn=wire_fds, close_fds=False,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_child_r)
        os.close(from_child_w)
        self.buffer = b""
        self.next_id = 0
        self.events = []

    def send(self, method, params=None, session=None):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.to_child, json.dumps(message).encode() + b"\0")
        return self.wait_reply(self.next_id)

    def read_message(self, deadline):
        while b"\0" not in self.buffer:
            left = deadline - time.time()
            if left <= 0 or not select.select([self.from_child], [], [], left)[0]:
                raise TimeoutError("chromium did not answer in time")
            chunk = os.read(self.from_child, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self.buffer += chunk
        raw, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(raw)

    def wait_reply(self, message_id):
        deadline = time.time() + TIMEOUT_S
        while True:
            message = self.read_message(deadline)
            if message.get("id") == message_id:
                if "error" in message:
                    raise RuntimeError(f"CDP error: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def wait_event(self, method, session):
        deadline = time.time() + TIMEOUT_S
        for i, event in enumerate(self.events):
            if event.get("method") == method and event.get("sessionId") == session:
                return self.events.pop(i)
        while True:
            message = self.read_message(deadline)
            if message.get("method") == method and message.get("sessionId") == session:
                return message
            self.events.append(message)

    def close(self):
        try:
            self.send("Browser.close")
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def problems_in(events, session):
    """Console errors, exceptions and failed or non-local requests."""
    found = []
    for e in events:
        if e.get("sessionId") != session:
            continue
        method, params = e.get("method"), e.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            found.append("console error: " + " ".join(
                str(a.get("value", a.get("description", ""))) for a in params.get("args", [])))
        elif method == "Runtime.exceptionThrown":
            found.append("exception: " + json.dumps(params.get("exceptionDetails", {}))[:500])
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            found.append("log error: " + params["entry"].get("text", ""))
        elif method == "Network.loadingFailed":
            found.append("failed request: " + params.get("errorText", ""))
        elif method == "Network.requestWillBeSent":
            url = params.get("request", {}).get("url", "")
            if not url.startswith(("file:", "data:", "about:")):
                found.append("network request to " + url)
    return found


# Per memory chart (an svg with a circle.mark.peak): the rendered size of its
# allocated and reserved paths, its peak label, and whether the marker shows.
MEMORY_CHARTS_JS = """(function () {
  function width(e) { return e ? e.getBBox().width : 0; }
  var out = [];
  document.querySelectorAll('svg').forEach(function (svg) {
    var peak = svg.querySelector('circle.mark.peak');
    if (!peak) return;
    var box = peak.getBoundingClientRect(), label = svg.querySelector('text.peak-label');
    var plot = svg.querySelector('g.plot');
    out.push({allocated: width(svg.querySelector('path.series.allocated')),
              reserved: width(svg.querySelector('path.series.reserved')),
              label: label ? label.textContent : null,
              peakBytes: parseFloat(peak.getAttribute('data-y')),
              yMax: plot ? parseFloat(plot.dataset.yMax) : NaN,
              markerShown: box.width > 0 && box.height > 0});
  });
  return JSON.stringify(out);
})()"""


def memory_problems(browser, session, expected):
    charts = json.loads(browser.send("Runtime.evaluate", {
        "expression": MEMORY_CHARTS_JS, "returnByValue": True}, session=session)["result"]["value"])
    found = []
    labels = [c["label"] for c in charts]
    if labels != expected:
        found.append(f"memory peak labels {labels}, expected {expected}")
    for i, c in enumerate(charts):
        if not (c["allocated"] > 0 and c["reserved"] > 0):
            found.append(f"memory chart {i}: allocated/reserved paths not drawn: {c}")
        if not c["markerShown"] or not c["peakBytes"] <= c["yMax"]:
            found.append(f"memory chart {i}: peak marker not shown inside the plot: {c}")
    return found, len(charts)


# Layout facts of a page, measured in the browser.
LAYOUT_JS = """(function () {
  var out = {charts: [], tables: [], legendCut: [], roofClash: []};
  var main = document.body.getBoundingClientRect().width
           - parseFloat(getComputedStyle(document.body).paddingLeft)
           - parseFloat(getComputedStyle(document.body).paddingRight);
  out.content = main;
  document.querySelectorAll('figure > svg').forEach(function (svg, i) {
    out.charts.push({i: i, width: svg.getBoundingClientRect().width,
                     title: (svg.querySelector('text') || {}).textContent});
  });
  document.querySelectorAll('div.scroll').forEach(function (d, i) {
    var tallest = 0;
    d.querySelectorAll('tbody tr').forEach(function (r) {
      tallest = Math.max(tallest, r.getBoundingClientRect().height); });
    out.tables.push({i: i, scroll: d.scrollWidth, client: d.clientWidth, tallest: tallest,
                     head: d.querySelector('th') ? d.querySelector('th').textContent : ''});
  });
  document.querySelectorAll('g.legend text').forEach(function (t) {
    if (t.textContent.endsWith('\\u2026')) out.legendCut.push(t.textContent);
  });
  document.querySelectorAll('svg').forEach(function (svg) {
    var labels = svg.querySelectorAll('text.roof-label');
    var marks = svg.querySelectorAll('circle.mark');
    labels.forEach(function (t) {
      var a = t.getBoundingClientRect();
      marks.forEach(function (c) {
        var b = c.getBoundingClientRect(), r = b.width / 2, cx = b.left + r, cy = b.top + r;
        var nx = Math.max(a.left, Math.min(cx, a.right)), ny = Math.max(a.top, Math.min(cy, a.bottom));
        if ((nx - cx) * (nx - cx) + (ny - cy) * (ny - cy) < r * r * 0.8)
          out.roofClash.push(t.textContent + ' over ' + (c.querySelector('title') || {}).textContent);
      });
    });
  });
  return JSON.stringify(out);
})()"""


def layout_problems(browser, session):
    facts = json.loads(browser.send("Runtime.evaluate", {
        "expression": LAYOUT_JS, "returnByValue": True}, session=session)["result"]["value"])
    found = []
    for c in facts["charts"]:
        if c["width"] < 0.9 * facts["content"]:
            found.append(f"chart {c['i']} ({c['title']}) is {c['width']:.0f} px wide "
                         f"on a {facts['content']:.0f} px page")
    for t in facts["tables"]:
        if t["scroll"] > t["client"] + 1:
            found.append(f"table {t['i']} ({t['head']}...) scrolls sideways: "
                         f"{t['scroll']} px in {t['client']} px")
        if t["tallest"] > 75:
            found.append(f"table {t['i']} ({t['head']}...) has a row {t['tallest']:.0f} px tall")
    found += [f"legend entry cut short: {x}" for x in facts["legendCut"]]
    found += [f"roof label covers a circle: {x}" for x in facts["roofClash"]]
    return found, len(facts["charts"]), len(facts["tables"])


TIMELINE_JS = """(function () {
  var a = document.getElementById('annotated-trace'), c = document.querySelector('#timeline-view canvas');
  if (!c) return JSON.stringify({link: a ? a.getAttribute('href') : null, canvas: false});
  var before = [parseFloat(c.dataset.viewStart), parseFloat(c.dataset.viewEnd)];
  var r = c.getBoundingClientRect();
  c.dispatchEvent(new WheelEvent('wheel', {deltaY: -500, clientX: r.left + r.width * 0.6,
                                           clientY: r.top + 20, bubbles: true, cancelable: true}));
  var after = [parseFloat(c.dataset.viewStart), parseFloat(c.dataset.viewEnd)];
  // Something is drawn: some pixel of the lanes' area is not white.
  var ctx = c.getContext('2d'), img = ctx.getImageData(c.width * 0.3, 0, c.width * 0.7, c.height).data;
  var inked = 0;
  for (var k = 0; k < img.length; k += 4) if (img[k] < 200 || img[k + 1] < 200) inked++;
  return JSON.stringify({link: a ? a.getAttribute('href') : null, canvas: true, width: r.width,
                         before: before, after: after, inked: inked});
})()"""


def timeline_problems(browser, session, page):
    facts = json.loads(browser.send("Runtime.evaluate", {
        "expression": TIMELINE_JS, "returnByValue": True}, session=session)["result"]["value"])
    found = []
    if not facts.get("link"):
        found.append("no link to the annotated trace (a#annotated-trace)")
    else:
        trace = page.parent / facts["link"]
        try:
            doc = json.loads(gzip.open(trace).read())
            names = [e.get("args", {}).get("name") for e in doc["traceEvents"]
                     if e.get("ph") == "M" and e.get("name") == "process_name"]
            if "jarvis annotations" not in names:
                found.append(f"{trace}: no 'jarvis annotations' process")
            if not any(e.get("cat") == "jarvis.critical_path" for e in doc["traceEvents"]):
                found.append(f"{trace}: no critical-path slice")
        except (OSError, ValueError, KeyError) as e:
            found.append(f"annotated trace {trace} does not open: {e}")
    if not facts.get("canvas"):
        found.append("no timeline canvas")
    else:
        (b0, b1), (a0, a1) = facts["before"], facts["after"]
        if not (a1 - a0 < 0.9 * (b1 - b0) and a0 >= b0 and a1 <= b1):
            found.append(f"the timeline did not zoom in on a wheel turn: {facts}")
        if facts["inked"] < 100:
            found.append(f"the timeline canvas is blank: {facts}")
    return found


def check_page(browser, page, screenshot, memory_peaks=None, first_section=None, layout=False,
               timeline=False):
    target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = browser.send("Target.attachToTarget",
                           {"targetId": target, "flatten": True})["sessionId"]
    for domain in ("Page", "Runtime", "Log", "Network"):
        browser.send(domain + ".enable", session=session)
    browser.send("Page.navigate", {"url": page.resolve().as_uri()}, session=session)
    browser.wait_event("Page.loadEventFired", session)
    # Click every sortable header once so the sorting script runs too.
    clicked = browser.send("Runtime.evaluate", {
        "expression": "(function(){var n=0;document.querySelectorAll('table.sortable th')"
                      ".forEach(function(th){th.click();n++;});return n;})()",
        "returnByValue": True}, session=session)["result"].get("value", 0)
    counts = browser.send("Runtime.evaluate", {
        "expression": "JSON.stringify({svg: document.querySelectorAll('svg').length,"
                      " img: Array.prototype.filter.call(document.images,"
                      " function(i){return i.complete && i.naturalWidth > 0;}).length,"
                      " brokenImg: Array.prototype.filter.call(document.images,"
                      " function(i){return !(i.complete && i.naturalWidth > 0);}).length})",
        "returnByValue": True}, session=session)["result"]["value"]
    metrics = browser.send("Page.getLayoutMetrics", session=session)
    size = metrics.get("cssContentSize", metrics.get("contentSize"))
    shot = browser.send("Page.captureScreenshot", {
        "format": "png", "captureBeyondViewport": True,
        "clip": {"x": 0, "y": 0, "width": min(size["width"], 1400),
                 "height": min(size["height"], 6000), "scale": 1}}, session=session)
    screenshot.write_bytes(base64.b64decode(shot["data"]))
    problems = problems_in(browser.events, session)
    stats = json.loads(counts)
    if memory_peaks is not None:
        found, stats["memory_charts"] = memory_problems(browser, session, memory_peaks)
        problems += found
    if first_section:
        problems += first_section_problems(browser, session, first_section)
        stats["first_section"] = first_section
    if layout:
        found, stats["charts"], stats["tables"] = layout_problems(browser, session)
        problems += found
    if timeline:
        problems += timeline_problems(browser, session, page)
        stats["timeline"] = True
    if stats["brokenImg"]:
        problems.append(f"{stats['brokenImg']} images did not load")
    browser.send("Target.closeTarget", {"targetId": target})
    return problems, stats, clicked


def first_section_problems(browser, session, expected):
    """The page opens with the section `expected` (its id), visible in the first screen."""
    found = browser.send("Runtime.evaluate", {
        "expression": "(function(){var s=document.querySelector('section');"
                      "return s ? JSON.stringify({id: s.id, top: s.getBoundingClientRect().top,"
                      " h: s.querySelector('h2') ? s.querySelector('h2').textContent : ''}) : '';})()",
        "returnByValue": True}, session=session)["result"].get("value", "")
    if not found:
        return [f"no section; expected '{expected}' first"]
    first = json.loads(found)
    if first["id"] != expected:
        return [f"first section is '{first['id']}' ({first['h']}), expected '{expected}'"]
    if first["top"] > 900:
        return [f"section '{expected}' starts {first['top']:.0f} px down, below the first screen"]
    return []


def parse_args(args):
    """(pages, {page: [expected memory peak labels]}, {page: first section id},
    pages with layout checks, pages with a timeline)."""
    pages, memory, first, layout, timeline = [], {}, {}, set(), set()
    while args:
        arg = args.pop(0)
        if arg == "--layout":
            layout.add(str(pathlib.Path(args.pop(0))))
        elif arg == "--timeline":
            timeline.add(str(pathlib.Path(args.pop(0))))
        elif arg == "--first-section":
            page, _, section = args.pop(0).partition("=")
            first[str(pathlib.Path(page))] = section
        elif arg == "--memory-peaks":
            page, _, labels = args.pop(0).partition("=")
            if not labels:
                sys.exit(f"--memory-peaks {page}: no peak labels (did `jarvis memory` fail?)")
            memory[str(pathlib.Path(page))] = labels.split("|")
        else:
            pages.append(arg)
    return pages, memory, first, layout, timeline


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    binary, shots = sys.argv[1], pathlib.Path(sys.argv[2])
    pages, memory, first, layout, timeline = parse_args(sys.argv[3:])
    missing = set(memory) - {str(pathlib.Path(p)) for p in pages}
    if missing:
        sys.exit(f"--memory-peaks names pages not checked: {sorted(missing)}")
    shots.mkdir(parents=True, exist_ok=True)
    failed = False
    with tempfile.TemporaryDirectory() as profile:
        browser = Browser(binary, profile)
        try:
            for name in pages:
                page = pathlib.Path(name)
                screenshot = shots / (page.stem + ".png")
                problems, stats, clicked = check_page(browser, page, screenshot,
                                                      memory.get(str(page)), first.get(str(page)),
                                                      str(page) in layout, str(page) in timeline)
                extra = (f", {stats['memory_charts']} memory charts with their peaks"
                         if "memory_charts" in stats else "")
                if "first_section" in stats:
                    extra += f", opens with '{stats['first_section']}'"
                if "charts" in stats:
                    extra += f", layout of {stats['charts']} charts and {stats['tables']} tables"
                if "timeline" in stats:
                    extra += ", timeline zooms, annotated trace opens"
                print(f"{page}: {stats['svg']} inline svg, {stats['img']} images, "
                      f"{clicked} sortable headers clicked{extra} -> {screenshot}")
                for p in problems:
                    print("  PROBLEM " + p)
                failed |= bool(problems)
        finally:
            browser.close()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The README's screenshots (docs/images/charts_*_page.png): the first screens
of the pages the browser test builds, at half scale so the images stay small.

    tools/docs_screenshots.py CHROMIUM PAGES_DIR OUT_DIR

PAGES_DIR is the pages/ folder tests/browser/run_browser_test.sh writes
(`ctest -R charts_browser` leaves it at build/charts_browser/pages/). Each page
is loaded in headless Chromium at 1400 px wide, as the browser test loads it,
and its top (the part a reader sees first: the report's verdict and timeline,
the sweep page's "what changes") is captured at scale 0.5. Uses the browser
test's DevTools client (tests/browser/check_pages.py), nothing else."""
import base64
import pathlib
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests" / "browser"))
from check_pages import Browser  # noqa: E402

# page file -> (image name, CSS pixels of the page's top to keep)
PAGES = {
    "report.html": ("charts_report_page.png", 2000),
    "findings.html": ("charts_findings_page.png", 1500),
    "sweep.html": ("charts_sweep_page.png", 2400),
    "sweep_compare.html": ("charts_sweep_compare_page.png", 1600),
}
SCALE = 0.5


def capture(browser, page, height):
    target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = browser.send("Target.attachToTarget",
                           {"targetId": target, "flatten": True})["sessionId"]
    browser.send("Page.enable", session=session)
    browser.send("Page.navigate", {"url": page.resolve().as_uri()}, session=session)
    browser.wait_event("Page.loadEventFired", session)
    metrics = browser.send("Page.getLayoutMetrics", session=session)
    size = metrics.get("cssContentSize", metrics.get("contentSize"))
    shot = browser.send("Page.captureScreenshot", {
        "format": "png", "captureBeyondViewport": True,
        "clip": {"x": 0, "y": 0, "width": min(size["width"], 1400),
                 "height": min(size["height"], height), "scale": SCALE}}, session=session)
    browser.send("Target.closeTarget", {"targetId": target})
    return base64.b64decode(shot["data"])


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    binary, pages, out = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as profile:
        browser = Browser(binary, profile)
        try:
            for page, (image, height) in PAGES.items():
                data = capture(browser, pages / page, height)
                (out / image).write_bytes(data)
                print(f"{pages / page} -> {out / image} ({len(data) // 1024} KB)")
        finally:
            browser.close()


if __name__ == "__main__":
    main()

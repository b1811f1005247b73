#!/usr/bin/env python3
"""Facts about SVG charts for tests/charts/test_charts.cpp, read with a real XML parser.

    svg_facts.py FILE...   (.svg: the file; anything else: each inline <svg> of an HTML page)

Prints one JSON object: {"charts": [{"marks": N, "plot": {x_min, x_max, y_min, y_max},
"mark_values": [...]}, ...]} or {"error": "..."} when some SVG is not well-formed XML.
"""
import json
import re
import sys
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"


def facts(svg_text):
    root = ET.fromstring(svg_text)
    if root.tag != NS + "svg":
        raise ValueError("root element is " + root.tag)
    marks = [e for e in root.iter() if "mark" in e.get("class", "").split()]
    plots = [e for e in root.iter() if e.get("class") == "plot"]
    plot = {k: float(plots[0].get("data-" + k.replace("_", "-"))) for k in
            ("x_min", "x_max", "y_min", "y_max")} if plots else None
    values = [float(e.get("data-value")) for e in marks if e.get("data-value") is not None]
    return {"marks": len(marks), "plot": plot, "mark_values": values,
            "mark_xy": [[float(e.get("data-x")), float(e.get("data-y"))]
                        for e in marks if e.get("data-x") is not None]}


def main():
    charts = []
    try:
        for name in sys.argv[1:]:
            text = open(name, encoding="utf-8").read()
            pieces = [text] if name.endswith(".svg") else re.findall(r"<svg\b.*?</svg>", text, re.S)
            charts += [facts(p) for p in pieces]
    except (ET.ParseError, ValueError) as e:
        print(json.dumps({"error": str(e)}))
        return
    print(json.dumps({"charts": charts}))


main()

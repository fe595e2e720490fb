#!/usr/bin/env python3
"""The HTML views in a real browser (Debian's headless chromium): `stallscope html` on the 4-node fixture
job and `stallscope compare` on two scenario timelines must load without console messages, run their
script, draw every chart (non-white pixels inside each plot area of a screenshot, with an empty-area
control measured in the same run), and show the numbers of `report --json` in their tables. Jobs with
two steps (job-4343, and two steps of one node with a gap) must have ink in every plot too.

A recording made on this machine by `stallscope record` (real host, network and PSI data; GPUs from the
fake NVML when FAKE_NVML is given) goes through the same checks.

usage: browser_test.py STALLSCOPE SOURCE_DIR OUT_DIR [FAKE_NVML]
Exit 77 (skipped) without chromium or python3-pil. STALLSCOPE_UPDATE_SCREENSHOTS=1 copies the
screenshots to doc/screenshots/ (the README's pictures)."""
import html.parser
import json
import os
import shutil
import subprocess
import sys
import time

WINDOW = (1050, 5600)  # wide enough for a chart (960 px) plus margins; tall enough for the whole page


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


class Dom(html.parser.HTMLParser):
    """Tables (id -> rows of cell texts), chart rects and plot areas, and <body> attributes."""

    def __init__(self):
        super().__init__()
        self.tables, self.charts, self.body, self.scripts = {}, {}, {}, {}
        self._table = self._row = self._cell = self._svg = self._script = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body":
            self.body = a
        elif tag == "table":
            self._table = self.tables.setdefault(a.get("id"), [])
        elif tag == "tr" and self._table is not None:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []
        elif tag == "svg" and "data-rect" in a:
            self._svg = a["id"][: -len("-svg")]
            self.charts[self._svg] = {"rect": [int(v) for v in a["data-rect"].split(",")], "marks": 0}
        elif self._svg and tag == "rect" and a.get("class") == "plotbg":
            self.charts[self._svg]["plot"] = [float(a[k]) for k in ("x", "y", "width", "height")]
        elif self._svg and tag == "line" and a.get("class") == "stepmark":
            # A step of a multi-step job: from its first sample (x1) to its last (data-to).
            self.charts[self._svg].setdefault("steps", []).append((float(a["x1"]), float(a["data-to"])))
        elif self._svg and tag in ("polyline", "rect", "circle"):
            self.charts[self._svg]["marks"] += 1
        elif tag == "script" and a.get("type") == "application/json":
            self._script = a["id"]
            self.scripts[self._script] = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self._table.append(self._row)
            self._row = None
        elif tag == "table":
            self._table = None
        elif tag == "svg":
            self._svg = None
        elif tag == "script":
            self._script = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        if self._script:
            self.scripts[self._script] += data


def chromium(args, url):
    cmd = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
           "--enable-logging=stderr", "--v=0", "--window-size=%d,%d" % WINDOW] + args + [url]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    console = [l for l in r.stderr.splitlines() if ":CONSOLE" in l]
    if r.returncode != 0:
        fail("chromium exited %d: %s" % (r.returncode, r.stderr[-2000:]))
    return r.stdout, console


def load(page, fragment=""):
    """The page's DOM after its script ran, checked for console messages and the script's mark."""
    url = "file://" + os.path.abspath(page) + fragment
    dom_text, console = chromium(["--dump-dom"], url)
    if console:
        fail("%s: console messages: %s" % (page, console))
    dom = Dom()
    dom.feed(dom_text)
    if dom.body.get("data-ready") != "1":
        fail(page + ": the page's script did not run to its end")
    return dom


def inked_share(image, chart, columns=None):
    """Share of non-white pixels inside the chart's plot area (a 2 px inset keeps the frame out), or
    inside the plot's columns from..to (a step's time range, 3 px either side)."""
    left, top = chart["rect"][0], chart["rect"][1]
    x, y, w, h = chart["plot"]
    box = (int(left + x + 2), int(top + y + 2), int(left + x + w - 2), int(top + y + h - 2))
    if columns:
        box = (int(left + columns[0] - 3), box[1], int(left + columns[1] + 3), box[3])
    region = image.crop(box).convert("L")
    hist = region.histogram()
    return sum(hist[:200]) / float(region.width * region.height)  # darker than the #eee grid lines


def screenshot(page, png):
    chromium(["--screenshot=" + png], "file://" + os.path.abspath(page))
    from PIL import Image
    return Image.open(png).convert("RGB")


def check_charts(dom, image, name, expected):
    for chart_id in expected:
        if chart_id not in dom.charts or "plot" not in dom.charts[chart_id]:
            fail("%s: chart %s missing" % (name, chart_id))
        share = inked_share(image, dom.charts[chart_id])
        print("  %-14s %-14s %5d marks, %5.1f %% of the plot area inked" %
              (name, chart_id, dom.charts[chart_id]["marks"], share * 100))
        steps = dom.charts[chart_id].get("steps", [])
        if not steps and share < 0.002:
            fail("%s: chart %s renders an empty plot area" % (name, chart_id))
        # Several steps on the job's time axis: short steps with long gaps between them are little ink
        # in the whole plot, so every step's own columns must have ink (a step drawn as nothing fails).
        for number, columns in enumerate(steps):
            step_share = inked_share(image, dom.charts[chart_id], columns)
            print("  %-14s %-14s   step %d: %5.1f %% of its columns inked" % (name, chart_id, number, step_share * 100))
            if step_share < 0.002:
                fail("%s: chart %s draws nothing in step %d" % (name, chart_id, number))


def main():
    if len(sys.argv) not in (4, 5):
        print(__doc__)
        return 2
    exe, source, out = sys.argv[1:4]
    fake_nvml = sys.argv[4] if len(sys.argv) == 5 else None
    if not shutil.which("chromium"):
        print("SKIP: no chromium (apt-get install chromium)")
        return 77
    try:
        import PIL  # noqa: F401
    except ImportError:
        # python3 on PATH may be a pyenv or venv interpreter without Debian's python3-pil.
        if os.path.exists("/usr/bin/python3") and os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3"):
            os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
        print("SKIP: no python3-pil (apt-get install python3-pil)")
        return 77
    os.makedirs(out, exist_ok=True)
    started = time.monotonic()
    job_dir = os.path.join(source, "fixtures/timelines/job-4242")
    page = os.path.join(out, "job-4242.html")
    subprocess.run([exe, "html", job_dir, "-o", page], check=True)
    report = json.loads(subprocess.run([exe, "report", job_dir, "--json"], check=True, capture_output=True,
                                       text=True).stdout)

    # 1. Loads cleanly, sorts on request, and its tables carry report --json's numbers.
    # Columns: host, step, gpu, name, util %, ... (the step tells a host's GPU in two steps apart).
    dom = load(page, "#sort=gpus-table:4")
    gpu_rows = dom.tables["gpus-table"][1:]
    if len(gpu_rows) != len(report["gpus"]):
        fail("GPU table has %d rows, report --json %d GPUs" % (len(gpu_rows), len(report["gpus"])))
    utils = [float(r[4]) for r in gpu_rows]
    if utils != sorted(utils) or utils[0] == utils[-1]:
        fail("#sort=gpus-table:4 did not sort the GPU table by utilization: %s" % utils)
    by_key = {(g["host"], str(g["index"])): g for g in report["gpus"]}
    for row in gpu_rows:
        g = by_key[(row[0], row[2])]
        for column, key in ((4, "mean_util_pct"), (5, "mean_sm_active_pct"), (6, "mean_tensor_active_pct"),
                            (7, "mean_dram_bandwidth_pct"), (8, "mean_memory_pct"), (9, "mean_power_w")):
            if (row[column] == "-") != (g[key] is None):  # not measured: "-" on the page, null in JSON
                fail("GPU %s:%s %s: page %s, report --json %s" % (row[0], row[1], key, row[column], g[key]))
            if g[key] is not None and abs(float(row[column]) - g[key]) > 0.005:
                fail("GPU %s:%s %s: page %s, report --json %s" % (row[0], row[1], key, row[column], g[key]))
    for row in dom.tables["ports-table"][1:]:
        p = next(p for p in report["ports"] if (p["host"], p["step_id"], p["port"]) == (row[0], row[1], row[2]))
        if abs(float(row[9]) - p["loss_per_million_packets"]) > 0.005 or abs(float(row[4]) - p["rx_bytes"] / 1e9) > 0.0005:
            fail("port %s:%s: page %s, report --json %s" % (row[0], row[1], row, p))
    for row in dom.tables["nodes-table"][1:]:
        n = next(n for n in report["nodes"] if n["host"] == row[0])
        if row[2] != n["label"] or abs(float(row[5]) - n["mean_gpu_util_pct"]) > 0.005:
            fail("node %s: page %s, report --json %s" % (row[0], row, n))
    if json.loads(dom.scripts["report-json"]) != report:
        fail("the embedded report JSON differs from report --json")
    print("  tables match report --json: %d GPUs, %d ports, %d nodes" %
          (len(gpu_rows), len(dom.tables["ports-table"]) - 1, len(dom.tables["nodes-table"]) - 1))

    # 2. Every chart draws: ink inside each plot area; the empty control area (right of the page) has none.
    image = screenshot(page, os.path.join(out, "html-report.png"))
    check_charts(dom, image, "html", ["reasons-chart", "gpu-util", "gpu-power", "fabric-rates", "node-heatmap"])
    # Control: the same measure on a plot-sized area below the page's end must find no ink, or the
    # check above could not tell an empty chart from a drawn one.
    plot = dom.charts["gpu-util"]
    control = {"rect": [plot["rect"][0], WINDOW[1] - int(plot["rect"][3]) - 4], "plot": plot["plot"]}
    control_share = inked_share(image, control)
    print("  control: empty area below the page, %.1f %% inked" % (control_share * 100))
    if control_share != 0:
        fail("the control area is not empty: the pixel check would not see an empty chart")

    # 3. compare --html: same checks, its numbers are its --json's.
    a = os.path.join(source, "tests/scenarios/healthy_baseline.jsonl")
    b = os.path.join(source, "tests/scenarios/thermal_throttle.jsonl")
    cpage = os.path.join(out, "compare.html")
    cjson = json.loads(subprocess.run([exe, "compare", a, b, "--json", "--html", cpage], check=True,
                                      capture_output=True, text=True).stdout)
    cdom = load(cpage)
    rows = {r[0]: r for r in cdom.tables["compare-table"][1:]}
    util = next(m for m in cjson["metrics"] if m["key"] == "gpu_sm_clock_mhz")
    if abs(float(rows["GPU SM clock"][3]) - util["b"]) > 0.005:
        fail("compare table SM clock %s vs --json %s" % (rows["GPU SM clock"], util))
    check_charts(cdom, screenshot(cpage, os.path.join(out, "compare.png")), "compare",
                 ["compare-gpu_util_pct", "compare-gpu_sm_clock_mhz", "compare-gpu_power_w"])

    # 4. Several steps: job-4343 (8 nodes, steps 0 and 1 ten minutes apart) and two steps of one node with
    # the gap between them. Each host's line runs through both steps; every plot has ink.
    steps_dir = os.path.join(out, "two-steps")
    shutil.rmtree(steps_dir, ignore_errors=True)
    os.makedirs(steps_dir)
    job_4343 = os.path.join(source, "fixtures/timelines/job-4343")
    for step in ("0", "1"):
        shutil.copy(os.path.join(job_4343, "timeline.%s.node-01.jsonl" % step), steps_dir)
    for name, inputs in (("job-4343", job_4343), ("two-steps", steps_dir)):
        spage = os.path.join(out, name + ".html")
        subprocess.run([exe, "html", inputs, "-o", spage], check=True, stderr=subprocess.DEVNULL)
        sdom = load(spage)
        expected = ["gpu-util", "gpu-power", "fabric-rates"] + (["node-heatmap"] if name == "job-4343" else [])
        check_charts(sdom, screenshot(spage, os.path.join(out, name + ".png")), name, expected)

    # 5. A real recording of this machine (20 samples at 0.2 s).
    rec = os.path.join(out, "recording")
    shutil.rmtree(rec, ignore_errors=True)
    env = dict(os.environ)
    charts = ["reasons-chart"]
    if fake_nvml:
        env.update(STALLSCOPE_NVML_LIBRARY=fake_nvml,
                   STALLSCOPE_FAKE_NVML_FIXTURE=os.path.join(source, "fixtures/nodes/dgx-h100/nvml.json"))
        charts += ["gpu-util", "gpu-power"]
    subprocess.run([exe, "record", "--out-dir", rec, "--interval-seconds", "0.2", "--count", "20"], check=True,
                   env=env, timeout=60, stderr=subprocess.DEVNULL)
    rpage = os.path.join(out, "recording.html")
    subprocess.run([exe, "html", rec, "-o", rpage], check=True)
    # A 4 s recording of this machine has reasons only when the machine is under pressure at the time
    # (real /proc PSI): its reasons chart is checked for ink only when the verdict has a reason to draw.
    rreport = json.loads(subprocess.run([exe, "report", rec, "--json"], check=True, capture_output=True,
                                        text=True).stdout)
    if not rreport["verdict"]["reasons"]:
        charts.remove("reasons-chart")
    rdom = load(rpage)
    check_charts(rdom, screenshot(rpage, os.path.join(out, "recording.png")), "recording", charts)

    if os.environ.get("STALLSCOPE_UPDATE_SCREENSHOTS"):
        from PIL import Image
        for name in ("html-report.png", "compare.png"):  # the top of each page: verdict and charts
            Image.open(os.path.join(out, name)).crop((0, 0, WINDOW[0], 1900)).save(
                os.path.join(source, "doc/screenshots", name), optimize=True)
    print("browser test passed in %.1f s (10 chromium runs)" % (time.monotonic() - started))
    return 0


if __name__ == "__main__":
    sys.exit(main())

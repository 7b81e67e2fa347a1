from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

#: Browsers started in this process (the fast loop starts none: tests/support/fastloop.py).
STARTED = 0


class Chromium:
    """Headless Chromium on an ephemeral 127.0.0.1 DevTools port, one page, events recorded."""

    def __init__(self, tmp: Path):
        import websocket

        global STARTED
        STARTED += 1

        exe = shutil.which("chromium") or shutil.which("chromium-browser")
        if not exe:
            pytest.fail("Debian chromium is missing (make system-deps installs it)") if os.environ.get("CI") \
                else pytest.skip("chromium not installed (make system-deps)")
        profile = tmp / "profile"
        profile.mkdir()
        self.proc = subprocess.Popen(
            [exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--remote-debugging-address=127.0.0.1",
             "--remote-debugging-port=0", "--window-size=1280,900", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (port_file.is_file() and port_file.read_text().count("\n") >= 1):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.close()
                raise RuntimeError("chromium did not start its DevTools endpoint")
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        pages = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10))
        url = next(p["webSocketDebuggerUrl"] for p in pages if p["type"] == "page")
        self.ws = websocket.create_connection(url, timeout=60, suppress_origin=True)
        self.next_id, self.events = 0, []
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable")

    def call(self, method: str, **params):
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        for _ in range(100_000):
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg["result"]
            self.events.append(msg)
        raise RuntimeError(f"{method}: no answer")

    def wait_event(self, method: str, timeout: float = 60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(e.get("method") == method for e in self.events):
                return
            self.events.append(json.loads(self.ws.recv()))
        raise RuntimeError(f"no {method} within {timeout}s")

    def eval(self, js: str):
        r = self.call("Runtime.evaluate", expression=js, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{js[:60]}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def open(self, page: Path) -> None:
        self.events.clear()
        self.call("Page.navigate", url=page.resolve().as_uri())
        self.wait_event("Page.loadEventFired")

    def problems(self, page: Path) -> dict:
        """Console errors, exceptions and every request but the page itself (data: and blob: URLs
        are decoded in the page, not fetched)."""
        errors, requests = [], []
        for e in self.events:
            m, p = e.get("method"), e.get("params", {})
            if m == "Runtime.consoleAPICalled" and p["type"] in ("error", "assert"):
                errors.append(" ".join(str(a.get("value", a.get("description"))) for a in p["args"]))
            elif m == "Runtime.exceptionThrown":
                d = p["exceptionDetails"]
                errors.append(d.get("exception", {}).get("description") or d.get("text"))
            elif m == "Log.entryAdded" and p["entry"]["level"] == "error":
                errors.append(p["entry"]["text"])
            elif m == "Network.requestWillBeSent" and p["request"]["url"] != page.resolve().as_uri() \
                    and not p["request"]["url"].startswith(("data:", "blob:")):  # in-page, not network
                requests.append(p["request"]["url"][:120])
        return {"errors": errors, "requests": requests}

    def screenshot(self, out: Path) -> dict:
        """Full-page PNG into `out`; returns what the browser itself decodes from it."""
        self.call("Emulation.clearDeviceMetricsOverride")
        h = self.eval("document.documentElement.scrollHeight")
        self.call("Emulation.setDeviceMetricsOverride", width=1280, height=min(int(h), 16000),
                  deviceScaleFactor=1, mobile=False)
        data = self.call("Page.captureScreenshot", format="png")["data"]
        out.write_bytes(base64.b64decode(data))
        stats = self.eval("""new Promise(function (ok) {
          var img = new Image();
          img.onload = function () {
            var c = document.createElement('canvas'); c.width = img.width; c.height = img.height;
            var g = c.getContext('2d'); g.drawImage(img, 0, 0);
            var d = g.getImageData(0, 0, c.width, c.height).data, colors = {}, ink = 0;
            for (var i = 0; i < d.length; i += 4 * 7) {
              colors[d[i] + ',' + d[i + 1] + ',' + d[i + 2]] = 1;
              if (d[i] + d[i + 1] + d[i + 2] < 600) ink++;
            }
            ok({width: img.width, height: img.height, colors: Object.keys(colors).length,
                ink: ink / (d.length / (4 * 7))});
          };
          img.src = 'data:image/png;base64,""" + data + """';
        })""")
        return stats

    def close(self) -> None:
        try:
            if getattr(self, "ws", None):
                self.ws.close()
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def shot_dir(tmp: Path) -> Path:
    d = SCREENSHOTS or tmp
    d.mkdir(parents=True, exist_ok=True)
    return d


def check_page(browser: Chromium, page: Path, shots: Path, name: str) -> list[dict]:
    browser.open(page)
    figs = browser.eval(f"new Promise(function (ok) {{ setTimeout(function () {{ ok({FIGURES_JS}); }}, 300); }})")
    probs = browser.problems(page)
    stats = browser.screenshot(shots / f"{name}.png")
    assert probs == {"errors": [], "requests": []}, probs
    assert stats["width"] == 1280 and stats["height"] > 1500, stats
    assert stats["colors"] > 50 and 0.01 < stats["ink"] < 0.6, stats  # drawn figures, not a blank page
    for f in figs:
        assert f["drawn"] == f["traces"], f
        assert f["cut"] == 0, f  # every marker whole inside its plot (issue 58: one at 1.0 was cut)
        assert f["hover"] and f["title"] and f["xtitle"] and f["ytitle"] and len(f["caption"]) > 40, f
    return figs


SCREENSHOTS = Path(os.environ.get("CONGRUENCY_SCREENSHOTS", "")) if os.environ.get("CONGRUENCY_SCREENSHOTS") else None


CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-default-apps", "--disable-extensions", "--mute-audio", "--hide-scrollbars")


FIGURES_JS = """Array.prototype.map.call(document.querySelectorAll('.js-plotly-plot'), function (d) {
  return {id: d.id, traces: d.data.length, types: d.data.map(function (t) { return t.type; }),
          names: d.data.map(function (t) { return t.name; }),
          points: d.data.map(function (t) { return (t.type === 'funnel' ? t.x : t.x || t.y || []).length; }),
          drawn: d.querySelectorAll('g.trace').length,
          title: (d.querySelector('.gtitle') || {}).textContent || '',
          xtitle: (d.querySelector('.xtitle') || {}).textContent || '',
          ytitle: (d.querySelector('.ytitle') || {}).textContent || '',
          hover: d.data.every(function (t) { return !!t.hovertemplate; }),
          cut: (function () {  // markers not drawn whole inside the plot area (cut by its edge)
            var L = d._fullLayout, s = d.querySelector('.main-svg'), n = 0;
            if (!L || !L.xaxis || !L.yaxis || !s) { return 0; }  // no cartesian plot (a table)
            s = s.getBoundingClientRect();
            var a = {left: s.left + L.xaxis._offset, right: s.left + L.xaxis._offset + L.xaxis._length,
                     top: s.top + L.yaxis._offset, bottom: s.top + L.yaxis._offset + L.yaxis._length};
            d.querySelectorAll('g.points path.point').forEach(function (p) {
              var r = p.getBoundingClientRect();
              if (r.width && (r.left < a.left - 1 || r.right > a.right + 1 || r.top < a.top - 1 || r.bottom > a.bottom + 1)) { n++; }
            });
            return n; })(),
          caption: (d.closest('figure').querySelector('figcaption') || {}).textContent || ''};
})"""

"""The dashboard in a real browser (Playwright driving Debian's Chromium) against the shared
lab stack: log in, find the dead consumer from the overview, see its chart drawn, follow a
partition to its diagnosis; a group named like markup renders as text and runs nothing.
Takes the screenshots the README shows; they are written to ``docs/screenshots/`` only with
``LAGWATCH_UPDATE_SCREENSHOTS=1`` (otherwise under pytest's temporary directory), so a test
run leaves the checkout as it found it.

Two hostile groups. A ZooKeeper-based consumer group named as an ``<img onerror>`` (ZooKeeper
node names cannot hold "/", so not ``</script>``; and an image handler, unlike a script
element, would run if inserted by ``innerHTML`` in a live update), whose partition owner (the
owner node's content) is ``<script>alert(1)</script>``; and a Kafka group named exactly
``<script>alert(1)</script>``, which Apache Kafka keeps as given (a ``</script>`` inside the
page's figure JSON is the classic way out of a script element).

One browser for the module. ``dead-consumer`` on ``payments-ledger`` and the hostile group are
this module's own; other lab tests touch other groups.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient
from kazoo.client import KazooClient
from playwright.sync_api import Browser, Page, expect, sync_playwright

pytestmark = pytest.mark.lab

REPO = Path(__file__).resolve().parents[2]
README_SHOTS = REPO / "docs" / "screenshots"
XSS = "<script>alert(1)</script>"
HOSTILE = "<img src=x onerror=alert(1)>"
DEAD = "payments-ledger"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--no-first-run", "--disable-sync",
]  # fmt: skip
# Window of 10 commits at a 5 s poll, plus two status-job periods of 15 s, plus slack for a
# loaded machine (the verdicts test allows the same).
VERDICT_S = 240
# A live round lands every LAGWATCH_UI_REFRESH_S (10 s) once the page's JSON is served; under
# the suite's load one took over 20 s. The waits below are on the round itself (the text it
# writes when it lands), with room for several slow or failed rounds: a passing wait returns
# the moment the round lands, so the margin costs nothing.
LIVE_ROUND_MS = 150_000
# Anything else the page does (a navigation's scripts, a click's re-render) under that load.
PAGE_MS = 30_000


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    expect.set_options(timeout=PAGE_MS)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[tuple[Page, list[str]]]:
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    pg = context.new_page()
    dialogs: list[str] = []

    def on_dialog(dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    pg.on("dialog", on_dialog)
    try:
        yield pg, dialogs
    finally:
        context.close()


def log_in(pg: Page, world: Any) -> None:
    pg.goto(world.web_url + "/")
    expect(pg).to_have_url(re.compile(r"/accounts/login/"))
    user, password = world.login
    pg.fill("input[name=username]", user)
    pg.fill("input[name=password]", password)
    pg.click("button[type=submit]")
    expect(pg.locator("h2", has_text="Groups by status")).to_be_visible()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if os.environ.get("LAGWATCH_UPDATE_SCREENSHOTS") == "1":
        return README_SHOTS
    return tmp_path_factory.mktemp("screenshots")


def shot(pg: Page, folder: Path, name: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    pg.screenshot(path=str(folder / f"{name}.png"))
    assert (folder / f"{name}.png").stat().st_size > 0


def plant_hostile_group(zk_hosts: str) -> None:
    """A ZooKeeper-based consumer group with a hostile name commits offsets on a lab topic and
    owns a partition under a hostile thread id, as any client of a shared cluster could."""
    zk = KazooClient(hosts=zk_hosts)
    zk.start(timeout=15)
    try:
        base = f"/consumers/{HOSTILE}"
        for partition in (0, 1):
            zk.create(f"{base}/offsets/orders/{partition}", b"1", makepath=True)
        zk.create(f"{base}/owners/orders/0", XSS.encode(), makepath=True)
    finally:
        zk.stop()
        zk.close()


def plant_hostile_kafka_group(bootstrap: str) -> None:
    """A Kafka group named ``<script>alert(1)</script>`` commits on a lab topic."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    tps = [TopicPartition("orders", 0, 1), TopicPartition("orders", 1, 1)]
    answer = admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(XSS, tps)])
    answer[XSS].result(30)


def group_doc(doc: dict, name: str) -> dict | None:
    return next((g for g in doc["groups"] if g["group"] == name), None)


def dead_and_diagnosed(doc: dict) -> bool:
    parts = [p for p in doc["partitions"] if p["group"] == DEAD]
    return any(
        p["status"] != "OK" and "DEAD_CONSUMER" in {d["code"] for d in p["diagnosis"]}
        for p in parts
    )


def plotted_points(pg: Page, element_id: str) -> int:
    return pg.evaluate(
        """id => { const el = document.getElementById(id);
                   if (!el || !el.data) return -1;
                   return el.data.reduce((n, t) => n + (t.y ? t.y.filter(v => v !== null).length : 0), 0); }""",
        element_id,
    )


def test_dead_consumer_found_in_three_clicks_and_hostile_names_stay_text(
    lab_world: Any,  # the shared stack (tests/lab_world.py)
    page: tuple[Page, list[str]],
    shots: Path,
) -> None:
    pg, dialogs = page
    log_in(pg, lab_world)
    plant_hostile_group(lab_world.endpoints["zookeeper"])
    plant_hostile_kafka_group(lab_world.endpoints["kafka"])
    lab_world.start_scenario("dead-consumer", group=DEAD)
    try:
        lab_world.wait_for_verdict(dead_and_diagnosed, VERDICT_S, f"{DEAD} non-OK with DEAD_CONSUMER")
        status = group_doc(lab_world.status(), DEAD)["status"]

        # Overview: the dead group is among the non-OK; its heat map is drawn.
        pg.goto(lab_world.web_url + "/")
        expect(pg.locator("#fig-heatmap.js-plotly-plot")).to_be_visible()
        assert plotted_points(pg, "fig-heatmap") != -1
        shot(pg, shots, "overview")

        # Click 1: the overview's count of groups with the dead group's status; click 2: it.
        pg.locator("a.chip", has_text=re.compile(rf"^{status} ")).click()
        expect(pg).to_have_url(re.compile(r"/groups/\?status="))
        pg.locator("a.group-link", has_text=DEAD).click()
        expect(pg.locator("h1.group-name")).to_have_text(DEAD)
        lag_chart = pg.locator("#fig-lag.js-plotly-plot")
        expect(lag_chart).to_be_visible()
        expect(lag_chart.locator(".scatterlayer .trace").first).to_be_attached()
        assert plotted_points(pg, "fig-lag") > 1
        expect(pg.locator("#fig-assignment.js-plotly-plot")).to_be_visible()
        shot(pg, shots, "group")

        # Click 3: the worst partition, to its diagnosis and evidence.
        pg.locator("#partitions-table a.partition-link").first.click()
        expect(pg.locator("#diagnosis .diag-code").first).to_have_text("DEAD_CONSUMER")
        expect(pg.locator("#diagnosis .reason")).not_to_be_empty()
        expect(pg.locator("#fig-offsets.js-plotly-plot")).to_be_visible()
        shot(pg, shots, "partition")

        # Live updates: a refresh swaps the regions in; pausing is remembered across pages.
        expect(pg.locator("#live-state")).to_contain_text("updated", timeout=LIVE_ROUND_MS)
        pg.click("#live-toggle")
        expect(pg.locator("#live-toggle")).to_have_text("Resume live updates")
        pg.goto(lab_world.web_url + "/sources/")
        expect(pg.locator("#live-state")).to_have_text("paused")
        pg.click("#live-toggle")
        # Resuming refreshes at once: "live" at the click, then "live · updated …" when that
        # round lands (a failed round says so and the next one retries: wait for a landed one).
        expect(pg.locator("#live-state")).not_to_have_text("paused")
        expect(pg.locator("#live-state")).to_have_text(
            re.compile(r"^live · updated .+$"), timeout=LIVE_ROUND_MS
        )
        expect(pg.locator("#live-toggle")).to_have_text("Pause live updates")
        expect(pg.locator("span.st", has_text="reachable").first).to_be_visible()
        shot(pg, shots, "sources")
        pg.goto(lab_world.web_url + "/jobs/")
        expect(pg.locator("h1", has_text="Spark jobs")).to_be_visible()
        shot(pg, shots, "jobs")
    finally:
        lab_world.stop_scenario("dead-consumer")

    # The hostile group: collected, searchable, rendered as text everywhere, runs nothing.
    lab_world.wait_until(lambda d: group_doc(d, HOSTILE), 90, "the hostile group collected")
    pg.goto(lab_world.web_url + "/groups/")
    pg.fill("input[name=q]", "<img")
    pg.click("form.filters button[type=submit]")
    link = pg.locator("a.group-link")
    expect(link).to_have_count(1)
    expect(link).to_have_text(HOSTILE)
    assert "q=%3Cimg" in pg.url
    pg.goto(lab_world.web_url + "/groups/?sort=name")
    shot(pg, shots, "groups")
    pg.goto(lab_world.web_url + "/groups/?q=%3Cimg")
    pg.locator("a.group-link").click()
    expect(pg.locator("h1.group-name")).to_have_text(HOSTILE)
    pg.reload()  # the deep link survives a reload
    expect(pg.locator("h1.group-name")).to_have_text(HOSTILE)
    expect(pg.locator("#partitions-table td", has_text=XSS)).to_have_count(1)
    expect(pg.locator("#fig-lag.js-plotly-plot")).to_be_visible()
    titles = pg.locator(".js-plotly-plot .gtitle").all_text_contents()
    assert any(HOSTILE in t for t in titles), titles  # drawn as text inside the figure
    # A live update swaps the regions in with innerHTML: still text.
    expect(pg.locator("#live-state")).to_contain_text("updated", timeout=LIVE_ROUND_MS)
    expect(pg.locator("h1.group-name")).to_have_text(HOSTILE)
    assert pg.locator("main img").count() == 0
    pg.goto(lab_world.web_url + "/")
    expect(pg.locator("#fig-heatmap.js-plotly-plot")).to_be_visible()
    ticks = pg.locator("#fig-heatmap .ytick text").all_text_contents()
    assert any(t.startswith(HOSTILE) for t in ticks), ticks
    # The Kafka group named ``<script>alert(1)</script>``: its page shows the name as text.
    lab_world.wait_until(lambda d: group_doc(d, XSS), 90, "the hostile Kafka group collected")
    pg.goto(lab_world.web_url + "/groups/?q=%3Cscript")
    kafka_link = pg.locator("a.group-link")
    expect(kafka_link).to_have_count(1)
    expect(kafka_link).to_have_text(XSS)
    kafka_link.click()
    expect(pg.locator("h1.group-name")).to_have_text(XSS)
    expect(pg.locator("#fig-lag.js-plotly-plot")).to_be_visible()
    for url in ("/", "/groups/", "/sources/", pg.url.replace(lab_world.web_url, "")):
        pg.goto(lab_world.web_url + url)
        assert pg.locator("main img").count() == 0
        assert pg.locator("script", has_text="alert(1)").count() == 0
    time.sleep(1)
    assert dialogs == []


# --- every page at a wide and a narrow window --------------------------------------------

WIDTHS = (1400, 800)
KIP848 = "shipments-tracker"  # a KIP-848 group of the demo world
CLASSIC = "orders-processor"
SPOUT = "orders-spout"  # a simulated storm-kafka spout that pushes its figures


@pytest.fixture(scope="module")
def width_shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the pages at each width go: ``LAGWATCH_WIDTH_SHOTS`` to keep them, else a
    temporary folder (pytest's, kept for the last few runs)."""
    if folder := os.environ.get("LAGWATCH_WIDTH_SHOTS"):
        return Path(folder)
    return tmp_path_factory.mktemp("widths")


def group_url(pg: Page, world: Any, name: str) -> str:
    pg.goto(world.web_url + "/groups/?q=" + name)
    link = pg.locator("a.group-link", has_text=re.compile(rf"^{re.escape(name)}$"))
    expect(link).to_have_count(1)
    return world.web_url + link.get_attribute("href")


def horizontal_overflow(pg: Page) -> int:
    """How many pixels the page is wider than the window (0: nothing to scroll sideways)."""
    return pg.evaluate(
        "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )


def charts_drawn(pg: Page) -> None:
    for el in pg.locator("div.chart[data-figure]").all():
        expect(el).to_have_class(re.compile(r"js-plotly-plot"))


def test_every_page_reads_at_a_wide_and_a_narrow_width(
    lab_world: Any, browser: Browser, width_shots: Path
) -> None:
    """Each page at 1,400 and 800 px: nothing wider than the window (a wide table scrolls in
    its card), charts drawn, a screenshot of the whole page; and on the pages the fixes are
    about: the spout chart draws rates and the pending gauge on their own axes, a KIP-848
    member's client id stays on one line, a "Retention left" of "—" says why."""
    context = browser.new_context(viewport={"width": WIDTHS[0], "height": 900})
    pg = context.new_page()
    try:
        log_in(pg, lab_world)
        lab_world.wait_until(lambda d: group_doc(d, SPOUT), 90, "the spout group collected")
        groups = {name: group_url(pg, lab_world, name) for name in (KIP848, CLASSIC, SPOUT)}
        pg.goto(groups[SPOUT])
        spout_partition = lab_world.web_url + pg.locator(
            "#partitions-table a.partition-link"
        ).first.get_attribute("href")
        pages = {
            "overview": lab_world.web_url + "/",
            "cluster": lab_world.web_url + "/clusters/lab/",
            "groups": lab_world.web_url + "/groups/",
            "group-kip848": groups[KIP848],
            "group-classic": groups[CLASSIC],
            "group-spout": groups[SPOUT],
            "partition-spout": spout_partition,
            "sources": lab_world.web_url + "/sources/",
            "producers": lab_world.web_url + "/producers/",
            "jobs": lab_world.web_url + "/jobs/",
            "alerts": lab_world.web_url + "/alerts/",
            "reports": lab_world.web_url + "/reports/",
        }
        overflowing = {}
        for width in WIDTHS:
            pg.set_viewport_size({"width": width, "height": 900})
            for name, url in pages.items():
                pg.goto(url)
                expect(pg.locator("main h1, main h2").first).to_be_visible()
                charts_drawn(pg)
                if overflow := horizontal_overflow(pg):
                    overflowing[f"{name}@{width}"] = overflow
                pg.screenshot(path=str(width_shots / f"{name}-{width}.png"), full_page=True)
        assert overflowing == {}, f"pages wider than the window (px): {overflowing}"

        for width in WIDTHS:
            pg.set_viewport_size({"width": width, "height": 900})
            # The spout's pushed counts: counters as rates on the left axis, the pending
            # gauge on its own right axis.
            pg.goto(groups[SPOUT] + "?range=15m")
            expect(pg.locator("#fig-spout.js-plotly-plot")).to_be_visible()
            traces = pg.evaluate(
                """() => { const el = document.getElementById('fig-spout');
                           return el.data.map(t => [t.name, t.yaxis || 'y',
                                                    t.y.filter(v => v !== null).length]); }"""
            )
            assert [(n, axis) for n, axis, _ in traces] == [
                ("acked/s", "y"), ("failed/s", "y"), ("pending (right axis)", "y2")]  # fmt: skip
            assert all(points > 1 for _, _, points in traces), traces
            axes = pg.evaluate(
                "() => { const l = document.getElementById('fig-spout').layout;"
                " return [l.yaxis.title.text, l.yaxis2.title.text, l.yaxis2.overlaying,"
                " l.yaxis2.side]; }"
            )
            assert axes == ["tuples/s", "pending (tuples)", "y", "right"]

            # A KIP-848 group's members: each client id on one line, whatever the width.
            pg.goto(groups[KIP848])
            expect(pg.locator("#members-table td.client-id").first).to_be_visible()
            lines = pg.evaluate(
                """() => Array.from(document.querySelectorAll('#members-table td.client-id'))
                     .map(td => { const r = document.createRange(); r.selectNodeContents(td);
                                  return new Set(Array.from(r.getClientRects())
                                    .map(x => Math.round(x.top))).size; })"""
            )
            assert lines and set(lines) == {1}, lines

            # "Retention left": a "—" always carries its reason.
            for name in (KIP848, CLASSIC, SPOUT):
                pg.goto(groups[name])
                cells = pg.evaluate(
                    """() => Array.from(document.querySelectorAll('#partitions-table tbody tr'))
                         .map(tr => tr.children[6])
                         .map(td => [td.textContent.trim(),
                                     (td.querySelector('.no-forecast') || {}).title || ''])"""
                )
                assert cells, name
                bare = [c for c in cells if c[0] == "—" and not c[1].startswith("No forecast: ")]
                assert bare == [], (name, cells)
    finally:
        context.close()

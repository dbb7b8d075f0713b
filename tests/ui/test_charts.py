"""Plotly figures and sparklines (pure)."""

from datetime import UTC, datetime, timedelta

from dashboard.ui import charts

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def test_times_are_naive_utc_strings() -> None:
    assert charts.t(T0) == "2026-01-01 12:00:00"
    assert charts.t(datetime(2026, 1, 1, 13, 0, tzinfo=UTC).astimezone()) == "2026-01-01 13:00:00"


def test_series_figure_escapes_names_and_marks_stale_points() -> None:
    fig = charts.series_figure(
        "lag of <b>", [T0, T0 + timedelta(seconds=10)], {"<i>": [1, None]}, "msgs", [False, True]
    )
    assert fig["layout"]["title"]["text"] == "lag of &lt;b&gt;"
    line, stale = fig["data"]
    assert line["name"] == "&lt;i&gt;" and line["y"] == [1, None]
    assert stale["x"] == ["2026-01-01 12:00:10"] and stale["y"] == [None]
    assert len(str(fig["layout"]["template"])) < 100  # not 10 kB of theme per figure


def test_heatmap_rows_colours_and_padding() -> None:
    fig = charts.heatmap_figure(
        [("a", [("t/0", "ERR"), ("t/1", "OK")]), ("b", [("t/0", "OK")])], "x"
    )
    heat = fig["data"][0]
    assert heat["z"] == [[6, 0], [0, None]]
    assert heat["text"][1] == ["b<br>t/0: OK", ""]
    assert charts.heatmap_figure([], "x") is None


def test_assignment_stacks_only_statuses_present() -> None:
    fig = charts.assignment_figure([("m1", {"OK": 2}), ("m2", {"STOP": 1, "OK": 1})])
    assert [(b["name"], b["x"]) for b in fig["data"]] == [("STOP", [0, 1]), ("OK", [2, 1])]


def test_rebalance_figure_labels_generations_and_hover_says_causes() -> None:
    fig = charts.rebalance_figure(
        [{"at": T0, "generation": None, "cause": "member_left", "causes": ["member_left", "<x>"]},
         {"at": T0, "generation": 8, "cause": "<y>", "causes": ["<y>"]}],
        T0 - timedelta(hours=1), T0,
    )  # fmt: skip
    trace = fig["data"][0]
    assert trace["mode"] == "markers+text"  # the generation is drawn, not only hovered
    assert trace["text"] == ["gen ?", "gen 8"]
    assert trace["y"] == ["member_left", "&lt;y&gt;"]
    assert trace["customdata"] == ["generation ?<br>member_left, &lt;x&gt;",
                                   "generation 8<br>&lt;y&gt;"]  # fmt: skip
    assert charts.rebalance_figure([], T0, T0) is None


def test_sparkline_points_scale_and_skip_unknowns() -> None:
    assert charts.sparkline_points([5]) == ""
    assert charts.sparkline_points([None, 3, None]) == ""
    pts = charts.sparkline_points([0, None, 10], width=100, height=24)
    assert pts == "0.0,22.0 100.0,2.0"
    flat = charts.sparkline_points([4, 4, 4], width=10, height=24)
    assert flat == "0.0,22.0 5.0,22.0 10.0,22.0"

"""benchmarks/usability/sim_http_runs.py: the runs of a size pooled, and the 200% / 100% ratios."""

import json
import random

from benchmarks.usability.sim_http_runs import calls, dumps, p95, pooled


def _run(scale, sub, view, view_again, noop_next, noop_first, clients=16):
    lat = {"json": {"receiver_submit": sub, "view": view, "view_again": view_again, "upload": [9999.0]}}
    lat["noop"] = {"noop_next": noop_next, "noop_first": noop_first}
    return {"scale": scale, "http": {"levels": [{"clients": clients, "latencies_ms": lat}]}}


def test_p95_is_the_nearest_rank():
    assert p95(list(range(1, 101))) == 95  # 95 of the 100 calls at or below it
    assert p95([float(x) for x in range(1, 21)]) == 19  # ceil(0.95 * 20) = 19th
    assert p95([5.0]) == 5.0


def test_calls_keeps_submits_apart_from_views_and_uploads():
    lat = {"receiver_submit": [1.0], "survey_submit": [2.0], "view": [3.0], "view_again": [4.0], "upload": [5.0]}
    assert sorted(calls(lat, "sub")) == [1.0, 2.0]
    assert calls(lat, "view") == [3.0] and calls(lat, "view_again") == [4.0]


def test_runs_of_a_size_are_pooled_before_the_p95():
    # two runs of 50 calls each: the pool's p95 is the 95th of the 100 together, not a median of two
    a, b = [float(x) for x in range(1, 51)], [float(x) for x in range(51, 101)]
    flat = [10.0] * 100
    runs = [_run(1.0, a, a, a, flat, flat), _run(1.0, b, b, b, flat, flat)]
    cell = pooled(runs, resamples=200)["sizes"]["1/16/json"]
    assert cell["sub_p95"] == 95.0 and cell["sub_n"] == 100
    assert cell["sub_vs_noop"] == 9.5
    assert cell["view_p95"] == 95.0 and cell["view_again_p95"] == 95.0


def test_a_study_twice_as_slow_shows_in_the_ratio_and_its_interval():
    rng = random.Random(3)

    def calls_(mu, k=200):
        return [rng.lognormvariate(mu, 0.3) for _ in range(k)]

    # three runs a size, each on a machine a little faster or slower than the others
    runs = []
    for speed in (0.9, 1.0, 1.1):
        base, noop = [speed * x for x in calls_(3.4)], [speed * x for x in calls_(3.6)]
        runs.append(_run(1.0, base, base, base, noop, noop))
        runs.append(_run(2.0, [2 * x for x in base], base, base, noop, noop))
    g = pooled(runs, resamples=500)["p95_200_over_100"]["16/json"]
    assert 1.9 < g["sub"]["ratio"] < 2.1 and 1.9 < g["sub"]["over_noop"] < 2.1
    assert 1.1 < g["sub"]["ci95"][0] <= g["sub"]["ratio"] <= g["sub"]["ci95"][1]
    # the same kind of calls at both sizes: a ratio near 1, its interval around it
    assert g["view"]["ci95"][0] <= 1.0 <= g["view"]["ci95"][1]


def test_the_interval_resamples_runs_not_calls():
    # two runs a size, one on a machine 1.5x slower: the runs disagree, and the interval says so
    # (resampling the calls one by one would give a narrow interval around the pooled ratio)
    xs = [float(x) for x in range(1, 401)]
    runs = [_run(1.0, xs, xs, xs, xs, xs), _run(1.0, [1.5 * x for x in xs], xs, xs, xs, xs)]
    runs += [_run(2.0, xs, xs, xs, xs, xs), _run(2.0, [1.5 * x for x in xs], xs, xs, xs, xs)]
    g = pooled(runs, resamples=500)["p95_200_over_100"]["16/json"]["sub"]
    assert g["ratio"] == 1.0
    assert g["ci95"][0] <= 0.7 and g["ci95"][1] >= 1.4
    # one run of a size: no interval
    assert pooled(runs[:1] + runs[2:3])["p95_200_over_100"]["16/json"]["sub"]["ci95"] is None


def test_the_ratio_over_the_noop_cancels_a_slower_machine():
    rng = random.Random(4)
    base = [rng.lognormvariate(3.4, 0.3) for _ in range(400)]
    noop = [rng.lognormvariate(3.6, 0.3) for _ in range(400)]
    # the 200% runs on a machine 1.3x slower for everyone, the no-op included
    slow = [1.3 * x for x in base]
    runs = [_run(1.0, base, base, base, noop, noop), _run(2.0, slow, slow, slow, [1.3 * x for x in noop], noop)]
    g = pooled(runs, resamples=300)["p95_200_over_100"]["16/json"]
    assert g["sub"]["ratio"] == 1.3
    assert g["sub"]["over_noop"] == 1.0
    # first views are against the no-op's first calls, which were not slower here
    assert g["view"]["over_noop"] == 1.3


def test_a_level_without_latencies_is_left_out():
    run = {"scale": 1.0, "http": {"levels": [{"clients": 16, "skipped": "fewer than 2 participants have work"}]}}
    assert pooled([run]) == {"sizes": {}, "p95_200_over_100": {}}


def test_results_keep_each_list_of_numbers_on_one_line():
    result = {"levels": [{"latencies_ms": {"view": [12.5, 3.25, 1e-05]}, "roles": {"a": 1}}], "empty": []}
    text = dumps(result)
    assert json.loads(text) == result
    assert '"view": [12.5, 3.25, 1e-05]' in text


def test_the_calls_in_flight_by_littles_law():
    # two participants, each a view, four submits and a view again of 100 ms back to back: 0.6 s
    # of level, two calls in flight all along; an upload keeps its client busy too
    lat = {"json": {"view": [100.0] * 2, "survey_submit": [100.0] * 8, "view_again": [100.0] * 2}}
    level = {"clients": 2, "latencies_ms": lat, "modes": {"json": {"app": {"wall_s": 0.6}}}}
    cell = pooled([{"scale": 1.0, "http": {"levels": [level]}}])["sizes"]["1/2/json"]
    assert cell["in_flight"] == 2.0 and cell["calls_per_participant"] == 6.0
    # one of them had one submit to make: it left early, the other ran alone
    lat = {"json": {"view": [100.0] * 2, "survey_submit": [100.0] * 5, "view_again": [100.0] * 2}}
    level = {"clients": 2, "latencies_ms": lat, "modes": {"json": {"app": {"wall_s": 0.6}}}}
    cell = pooled([{"scale": 1.0, "http": {"levels": [level]}}])["sizes"]["1/2/json"]
    assert cell["in_flight"] == 1.5 and cell["calls_per_participant"] == 4.5
    assert "submits_planned" not in cell  # a level of runs before the plan was kept


def test_the_submits_planned_and_made_are_summed_over_runs():
    lat = {"json": {"view": [1.0], "survey_submit": [1.0] * 3}, "before": {"view": [1.0]}}

    def level(planned, made):
        return {"clients": 16, "latencies_ms": lat, "submits_planned": planned, "submits_made": made}

    runs = [{"scale": 1.0, "http": {"levels": [level(90, 88)]}}, {"scale": 1.0, "http": {"levels": [level(93, 93)]}}]
    cells = pooled(runs, resamples=50)["sizes"]
    # the plan is the level's, every way of calling the app together
    for way in ("json", "before"):
        assert cells[f"1/16/{way}"]["submits_planned"] == 183 and cells[f"1/16/{way}"]["submits_made"] == 181


def test_paired_runs_give_each_pairs_own_ratio():
    from benchmarks.usability.sim_http_runs import paired

    def run(scale, pair, sub):
        lat = {"json": {"survey_submit": sub, "view": [10.0], "view_again": [10.0]}, "noop": {"noop_next": [5.0]}}
        level = {"clients": 16, "latencies_ms": lat, "modes": {"json": {"app": {"wall_s": 1.0}}}}
        return {"scale": scale, "pair": pair, "http": {"levels": [level]}}

    xs = [float(x) for x in range(1, 101)]
    # pair 0 on a fast machine, pair 1 on one twice as slow for both sizes: each pair's ratio is 1.1
    runs = [run(1.0, 0, xs), run(2.0, 0, [1.1 * x for x in xs]), run(1.0, 1, [2 * x for x in xs])]
    runs.append(run(2.0, 1, [2.2 * x for x in xs]))
    got = paired(runs)["16/json"]
    assert got["sub"] == {"each": [1.1, 1.1], "median": 1.1, "range": [1.1, 1.1]}
    assert got["view"]["median"] == 1.0
    # runs of one size each (not paired) give none
    assert paired([{k: v for k, v in r.items() if k != "pair"} for r in runs]) == {}


def test_merged_files_keep_their_pairs_apart():
    from benchmarks.usability.sim_http_runs import merged_runs, paired

    def run(scale, pair, f):
        lat = {"json": {"survey_submit": [f * 10.0] * 20, "view": [1.0], "view_again": [1.0]}}
        return {"scale": scale, "pair": pair, "http": {"levels": [{"clients": 16, "latencies_ms": lat}]}}

    # two files, each numbering its one pair 0: ratios 2.0 and 0.5, not one pair mixed of both
    a = {"runs": [run(1.0, 0, 1), run(2.0, 0, 2)]}
    b = {"runs": [run(1.0, 0, 4), run(2.0, 0, 2)]}
    got = paired(merged_runs([a, b]))["16/json"]["sub"]
    assert sorted(got["each"]) == [0.5, 2.0]

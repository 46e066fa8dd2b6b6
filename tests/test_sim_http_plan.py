"""benchmarks/usability/sim_http.py: who acts in an HTTP round, and how much. capacity(), the items
a participant could submit now, against what they then submit in process; matched(), the same
plan of work (role, tab, submits) for every study measured together."""

from __future__ import annotations

import pytest

from benchmarks.usability import sim_http, study_sim

pytestmark = pytest.mark.slow  # a simulated study to its midpoint (out of `make test-fast`)


class _Halfway:
    """Stands where the HTTP sample would be (study_sim.Rendezvous's place): the checks run on
    the study halfway, in process."""

    def __init__(self):
        self.seen: dict = {}

    def __call__(self, sim) -> None:
        from services.participation.items import get_view
        from services.participation.submissions import submit

        plans = sim_http.matched([sim, sim], [set(), set()], 12)
        self.seen["plans"] = [
            [(p.role, p.tab, work[p.pid], sim_http.capacity(sim, p), sim_http.most_submits(p.tab)) for p in people]
            for people, work in plans
        ]
        # each tab's first participant of the plan submits all they can, one after another
        made, first = {}, {}
        for p in plans[0][0]:
            first.setdefault((p.role, p.tab), p)
        for (role, tab), p in first.items():
            expected = sim_http.capacity(sim, p)
            view, n = get_view(sim.db, p.token, tab), 0
            while view.status == "item" and n < 60:
                payload = sim.answers.answer(p.pid, view.phase, view.item_id, view.content)
                res = submit(sim.db, p.token, tab, view.item_id, payload, media_dir=sim.media)
                assert res.saved, res.message
                if view.phase == "record":  # the worker's step, as the simulation runs it
                    sim.record_outcome(int(str(view.item_id).split("-")[0]), str(view.item_id))
                n += 1
                view = res.next
            made[(role, tab)] = (expected, n)
        self.seen["made"] = made


@pytest.fixture(scope="module")
def halfway(tmp_path_factory):
    probe = _Halfway()
    res = study_sim.simulate(
        tmp_path_factory.mktemp("sim"), scale=0.05, seed=2, analyse=False, http=True, log=lambda *a: None,
        rendezvous=probe,
    )  # fmt: skip
    assert probe.seen, "the simulation never reached its HTTP sample"
    return probe.seen, res


def test_capacity_is_what_the_participant_can_then_submit(halfway):
    seen, _ = halfway
    made = seen["made"]
    # the open items of a queue, and a validator's ready count from the pool: exact
    for key in [("sender", "record"), ("validator", "validator")]:
        assert made[key][1] == made[key][0] > 0, key
    # a sender's submitted baseline survey can open their next (the informed stage): at least
    assert made[("sender", "survey")][1] >= made[("sender", "survey")][0] > 0
    # a receiver's ready count counts two items of one new starter, of which they may take one
    # (storage/usability/pool.takeable): at most, and with nothing else happening, some
    assert 0 < made[("receiver", "receiver")][1] <= made[("receiver", "receiver")][0]


def test_every_study_gets_the_first_ones_plan(halfway):
    seen, _ = halfway
    ref, other = seen["plans"]
    assert len(ref) == 12 and sorted(x[:3] for x in other) == sorted(x[:3] for x in ref)
    assert any(k > 0 for _, _, k, _, _ in ref)


def test_each_is_planned_what_they_can_up_to_the_tabs_most(halfway):
    seen, _ = halfway
    ref, other = seen["plans"]
    assert all(k == min(most, cap) for _, _, k, cap, most in ref)
    assert all(cap >= k for _, _, k, cap, _ in other)


def test_the_study_still_ends_complete(halfway):
    _, res = halfway
    assert res["ok"], res["problems"][:5]

"""Strategies propose while earlier proposals are still in flight (several workers), and wait where they must."""
from omegaconf import OmegaConf

from autopager.tuner.space import Space
from autopager.tuner.strategies import make_strategy
from autopager.tuner.strategies.base import key

BASELINE = {"page_size": 4096, "fillers": 2, "evictors": 2, "buffer_size": 1 << 26, "evict_high_water": 90,
            "evict_low_water": 70, "read_ahead": 0, "max_fault_events": 2}
SPACE = {"page_size": {"min": 16384, "max": 1 << 20, "factor": 4}, "fillers": {"values": [1, 2, 4]},
         "evictors": 2, "buffer_size": 1 << 26, "evict_high_water": 80, "evict_low_water": 50, "read_ahead": 4,
         "max_fault_events": 2}


def strategy(name, **settings):
    space = Space(OmegaConf.create(SPACE), OmegaConf.create(BASELINE))
    return make_strategy(name, space, "minimize", {"name": name, **settings}, 0)


def asks(strategy, count):
    return [strategy.ask() for _ in range(count)]


def test_grid_and_random_propose_k_distinct_points_without_results():
    for name in ("grid", "random"):
        proposed = asks(strategy(name, **({"trials": 5} if name == "random" else {})), 5)
        assert None not in proposed and len({key(p) for p in proposed}) == 5, name


def test_coordinate_descent_proposes_a_whole_line_then_waits_for_it():
    coordinate = strategy("coordinate", order=["fillers", "page_size"], max_sweeps=1)
    start = coordinate.ask()
    assert coordinate.ask() is None  # the line searches start from the start's result
    coordinate.tell(start, 10.0)
    line = asks(coordinate, 3)
    assert line[2] is None and {p["fillers"] for p in line[:2]} == {1, 2, 4} - {start["fillers"]}
    assert all(p["page_size"] == start["page_size"] for p in line[:2])
    coordinate.tell(line[1], 5.0)
    assert coordinate.ask() is None  # one of the line still in flight
    coordinate.tell(line[0], 7.0)
    following = coordinate.ask()  # the page-size line, from the line's best
    assert following["fillers"] == line[1]["fillers"] and following["page_size"] != start["page_size"]


def test_ax_proposes_while_trials_are_pending_and_waits_at_the_end_of_its_initialization():
    ax = strategy("ax", initialization_trials=3, threads=1)
    first = asks(ax, 3)
    assert None not in first and len({key(p) for p in first}) == 3
    assert sum(map(len, ax.pending.values())) == 3
    assert ax.ask() is None  # Sobol's budget drawn, none observed: Ax waits for data
    ax.tell(first[0], 3.0)
    ax.tell(first[1], 2.0)
    more = ax.ask()  # the model's step, with first[2] still pending
    assert more is not None and ax.proposed_by == "MBM"
    ax.tell(first[2], 1.0)
    ax.tell(more, 1.5)
    assert not any(ax.pending.values())


def test_ax_modelled_best_is_given_with_its_standard_error_in_the_metrics_units():
    errors = []
    for scale in (1.0, 1000.0):
        ax = strategy("ax", initialization_trials=3, threads=1)
        for value in (3.0, 2.0, 1.0, 1.5, 2.5):
            point = ax.ask()
            ax.tell(point, scale * value)
        _, mean, sem = ax.modelled_best()
        assert 0 < mean < scale * 4 and sem is not None
        errors.append(sem)
    assert 300 < errors[1] / errors[0] < 3000  # a variance would grow a million times


def test_ax_goes_on_proposing_after_a_trial_measured_several_times_beside_single_runs():
    """A trial measured again comes with a standard error, the others without; Ax's model cannot fit such a mix
    ("Input data contains NaN values"), and a study whose Ax stopped proposing ended short of its trials."""
    ax = strategy("ax", initialization_trials=3, threads=1)
    first = asks(ax, 3)
    ax.tell(first[0], 3.0)
    ax.tell(first[1], 2.0, 0.0)  # measured three times, the same each time (the synthetic workload)
    ax.tell(first[2], 2.5)
    assert all(point is not None for point in asks(ax, 2)) and ax.proposed_by == "MBM"


def test_a_strategy_expecting_the_defaults_neither_proposes_them_nor_moves_before_their_result():
    grid = strategy("grid")
    defaults = grid.space.start()  # a point of the grid
    grid.expect(defaults)
    proposed = asks(grid, grid.space.grid_size())
    assert proposed[-1] is None and key(defaults) not in {key(p) for p in proposed[:-1]}
    assert len({key(p) for p in proposed[:-1]}) == grid.space.grid_size() - 1

    coordinate = strategy("coordinate", order=["fillers", "page_size"], max_sweeps=1)
    coordinate.expect(coordinate.space.start())
    assert coordinate.ask() is None  # its line searches start from the defaults' result
    coordinate.expect(None)
    coordinate.tell(coordinate.space.start(), 10.0)
    line = asks(coordinate, 2)
    assert None not in line and all(p["fillers"] != defaults["fillers"] for p in line)


def test_ax_is_told_the_defaults_after_proposing_trials_alongside_them():
    ax = strategy("ax", initialization_trials=3, threads=1)
    first = asks(ax, 2)
    ax.tell(dict(BASELINE), 4.0)  # outside the space: not attached
    inside = ax.space.complete({"page_size": 1 << 20, "fillers": 1})
    ax.tell(inside, 3.0)  # attached beside the pending trials
    for params, value in zip(first, (2.0, 1.0)):
        ax.tell(params, value)
    assert not any(ax.pending.values())
    trials = ax.client._experiment.trials.values()
    assert len(trials) == 3 and all(trial.status.is_completed for trial in trials)
    assert ax.ask() is not None

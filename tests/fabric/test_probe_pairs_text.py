"""A pair's attempts as the TUI's probe screen lists them: measured against what its route gives
in its round, beside the line rate (``97 of 200`` read as half speed for a pair whose route, shared
in its round, gives 100)."""

from __future__ import annotations

from fabric.app.readmodel.operations import PairHistory
from fabric.present.probes import attempts_text
from probes.pairs import Endpoint, PairResult
from topology.model import Guid

A = Endpoint("dgx-0001", "mlx5_0", Guid("0x1"), None, 0)
B = Endpoint("dgx-0002", "mlx5_0", Guid("0x2"), None, 0)


def pair(*attempts: tuple[float | None, float | None]) -> PairHistory:
    results = tuple(
        PairResult(A, B, 1, gbps, 200.0, gbps is not None, None, "test", i, expected)
        for i, (gbps, expected) in enumerate(attempts)
    )
    return PairHistory(results, False)


def test_the_routes_rate_is_shown_beside_the_line_rate() -> None:
    assert attempts_text(pair((97.0, 100.0))) == "97 of 100 expected (line 200)"
    # a re-test alone on the cable: its route then gives the line rate, said once
    assert attempts_text(pair((48.0, 100.0), (194.0, 200.0))) == "48 → 194 of 200"
    # no route known (an older sweep): the line rate, as before
    assert attempts_text(pair((97.0, None))) == "97 of 200"
    assert attempts_text(pair((None, 100.0))) == "failed of 100 expected (line 200)"

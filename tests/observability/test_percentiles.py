"""The one percentile rule (vocero/observability/percentiles.py) every figure uses."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vocero.observability.percentiles import percentile


def test_the_rank_is_floor_of_q_times_n() -> None:
    ordered = [float(i) for i in range(1, 11)]  # 1 … 10
    assert [percentile(ordered, q) for q in (0.0, 0.5, 0.95, 0.99, 1.0)] == [1, 6, 10, 10, 10]
    assert percentile([7.0], 0.5) == 7.0


def test_no_samples_is_an_error_not_a_number() -> None:
    with pytest.raises(ValueError, match="no samples"):
        percentile([], 0.5)


@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1),
       st.floats(min_value=0, max_value=1))
def test_a_percentile_is_always_a_measured_sample(samples: list[float], q: float) -> None:
    ordered = sorted(samples)
    value = percentile(ordered, q)
    assert value in ordered
    assert sum(s < value for s in ordered) <= q * len(ordered)

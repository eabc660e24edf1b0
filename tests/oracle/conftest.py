"""The CarbonData oracles (2.3.0, and 1.6.1's writer), each built once per run; without Maven or a JDK its tests skip (fail when CI is set)."""

from __future__ import annotations

import os

import pytest
from carbondata_oracle import Oracle, OracleUnavailable


def _build(module: str, main: str) -> Oracle:
    try:
        return Oracle.build(module, main)
    except OracleUnavailable as e:
        if os.environ.get("CI"):
            pytest.fail(f"CarbonData oracle unavailable in CI: {e}")
        pytest.skip(f"CarbonData oracle unavailable: {e}")


@pytest.fixture(scope="session")
def oracle() -> Oracle:
    return _build("java", "CarbonOracle")


@pytest.fixture(scope="session")
def oracle1x() -> Oracle:
    """CarbonData 1.6.1's CarbonWriter (tests/oracle/java1x), built apart from the 2.3.0 harness."""
    return _build("java1x", "CarbonWriter1x")

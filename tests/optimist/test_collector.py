"""The driver's collector thresholds: set while the roles run, CPython's again after."""

from __future__ import annotations

import gc

import pytest

from optimist import collector
from optimist.runtime import Platform
from optimist.settings import Settings


def test_settle_then_restore_puts_back_what_was_there():
    before = gc.get_threshold()
    try:
        gc.set_threshold(123, 4, 5)
        replaced = collector.collect_less_often()
        assert replaced == (123, 4, 5)
        assert gc.get_threshold() == (collector.YOUNG_THRESHOLD, *collector.OLDER_THRESHOLDS)
        collector.restore(replaced)
        assert gc.get_threshold() == (123, 4, 5)
    finally:
        gc.set_threshold(*before)


@pytest.mark.usefixtures("ray_session")
def test_a_platform_settles_the_driver_for_its_life(redis_url, key_prefix):
    before = gc.get_threshold()
    with Platform(Settings(shards=1, redis_url=redis_url, key_prefix=key_prefix)):
        assert gc.get_threshold()[0] == collector.YOUNG_THRESHOLD
    assert gc.get_threshold() == before

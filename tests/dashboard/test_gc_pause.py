"""The dashboard's garbage-collector pause is safe with overlapping sessions."""

from __future__ import annotations

import gc
import threading

import pytest

from contextfit.dashboard.gc_pause import gc_paused


@pytest.fixture(autouse=True)
def collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    (gc.enable if was else gc.disable)()


def test_overlapping_sessions_share_one_pause():
    first, second = gc_paused(), gc_paused()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)  # the first session ends while the second still draws
    assert not gc.isenabled()
    second.__exit__(None, None, None)
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off():
    gc.disable()
    with gc_paused():
        pass
    assert not gc.isenabled()


def test_threads_entering_and_leaving_in_any_order_restore_the_collector():
    inside = threading.Barrier(8)

    def session():
        with gc_paused():
            inside.wait(timeout=30)
            assert not gc.isenabled()

    threads = [threading.Thread(target=session) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert gc.isenabled()


def test_an_error_in_a_page_still_restores_the_collector():
    with pytest.raises(RuntimeError), gc_paused():
        raise RuntimeError("page failed")
    assert gc.isenabled()


def test_only_the_views_layer_pauses_the_collector():
    import ast

    from support.paths import REPO

    touching = set()
    for path in (REPO / "contextfit").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in {"disable", "enable", "freeze"} and getattr(node.value, "id", "") == "gc":
                touching.add(path.relative_to(REPO).as_posix())
    assert touching == {"contextfit/dashboard/gc_pause.py"}

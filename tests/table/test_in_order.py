"""``in_order``: results in the pieces' order, on the process's reading threads, never left running."""

from __future__ import annotations

import threading
import time

from carbon_ds.table.read.task_reader import in_order


def test_results_keep_the_pieces_order_and_reads_share_their_threads():
    seen: list[set[threading.Thread]] = []  # the thread objects (an ident may be reused by a new thread)

    def read_one(i: int) -> int:
        time.sleep(0.001 * (i % 3))  # later pieces may finish first
        seen[-1].add(threading.current_thread())
        return i * i

    for _ in range(3):
        seen.append(set())
        assert list(in_order(read_one, list(range(20)), threads=2)) == [i * i for i in range(20)]
    assert threading.current_thread() not in set().union(*seen)
    assert set().union(*seen) == seen[0]  # the second and third read ran on the first one's threads


def test_a_read_within_a_read_does_not_wait_for_itself():
    def inner(i: int) -> int:
        return i + 1

    def outer(i: int) -> list[int]:  # every thread of the shared pool busy with a read that reads again
        return list(in_order(inner, [i, i, i], threads=2))

    done: list = []
    t = threading.Thread(target=lambda: done.append(list(in_order(outer, list(range(8)), threads=2))), daemon=True)
    t.start()
    t.join(30)
    assert done == [[[i + 1] * 3 for i in range(8)]]


def test_a_read_stopped_early_leaves_no_piece_running():
    running = set()
    lock = threading.Lock()

    def read_one(i: int) -> int:
        with lock:
            running.add(i)
        time.sleep(0.02)
        with lock:
            running.discard(i)
        return i

    gen = in_order(read_one, list(range(10)), threads=2)
    assert next(gen) == 0
    gen.close()
    assert running == set()
    assert list(in_order(read_one, [1, 2, 3], threads=2)) == [1, 2, 3]

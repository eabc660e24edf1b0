"""meta.status.shared_prefix: a list that shares its prefix with the list it was forked from behaves as a plain
list (the oracle), and no list changes another: not the one it was forked from, nor its forks."""

from __future__ import annotations

import random

import pytest

from carbon_ds.table.meta.status import shared_prefix
from carbon_ds.table.meta.status.shared_prefix import SharedPrefixList


def _step(rng: random.Random, lists: list[tuple[SharedPrefixList, list]]) -> None:
    ours, plain = rng.choice(lists)
    op = rng.choice(["append", "append", "set", "set_end", "del", "insert", "slice_set", "fork", "prefix",
                     "index", "slice"])
    n = len(plain)
    value = rng.randrange(50)
    if op == "append":
        ours.append(value)
        plain.append(value)
    elif op == "set" and n:
        i = rng.randrange(-n, n)
        ours[i] = plain[i] = value
    elif op == "set_end" and n:
        ours[n - 1] = plain[n - 1] = value
    elif op == "del" and n:
        i = rng.randrange(n)
        del ours[i], plain[i]
    elif op == "insert":
        i = rng.randrange(n + 2)
        ours.insert(i, value)
        plain.insert(i, value)
    elif op == "slice_set" and n:
        a, b = sorted(rng.randrange(n + 1) for _ in range(2))
        ours[a:b] = plain[a:b] = [value] * rng.randrange(3)
    elif op == "fork":
        lists.append((ours.fork(), list(plain)))
    elif op == "prefix":
        k = rng.randrange(n + 1)
        lists.append((ours.prefix(k), plain[:k]))
    elif op == "index":
        start = rng.randrange(n + 1)
        stop = rng.choice([None, rng.randrange(n + 1)])
        try:
            want = plain.index(value, start, n if stop is None else stop)
        except ValueError:
            with pytest.raises(ValueError):
                ours.index(value, start, stop)
        else:
            assert ours.index(value, start, stop) == want
    elif op == "slice":
        a, b = rng.randrange(-n - 2, n + 2), rng.randrange(-n - 2, n + 2)
        step = rng.choice([None, None, 2, -1])
        assert ours[a:b:step] == plain[a:b:step]


@pytest.mark.parametrize("seed", range(8))
def test_forks_behave_as_plain_lists_and_change_nothing_else(seed, monkeypatch):
    monkeypatch.setattr(shared_prefix, "_FOLD", 4)  # heads joined often, not only past 1,024 appends
    rng = random.Random(seed)
    start = [rng.randrange(50) for _ in range(rng.randrange(30))]
    lists = [(SharedPrefixList(start), list(start))]
    for _ in range(400):
        _step(rng, lists)
        for ours, plain in lists:
            assert len(ours) == len(plain) and list(ours) == plain and ours == plain
            assert [ours[i] for i in range(-len(plain), len(plain))] == plain + plain if plain else True


def test_a_fork_copies_only_the_tail():
    big = SharedPrefixList(range(10_000))
    fork = big.fork()
    fork.append(10_000)
    fork[9_999] = -1  # a change at the end copies the one item after it
    assert fork._head is big._head and len(fork._tail) == 2
    assert big[9_999] == 9_999 and len(big) == 10_000
    with pytest.raises(IndexError):
        big[10_000]
    with pytest.raises(IndexError):
        big[-10_001]

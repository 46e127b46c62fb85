"""``TransactionIndex`` and ``AbortedTxn`` (Kafka 3.9's ``TransactionIndexTest``, ported
case by case, plus golden bytes and a model-based test)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.errors import UnknownServerError
from broker.log.errors import CorruptIndexError, InvalidOffsetError
from broker.log.transaction_index import (
    CURRENT_VERSION,
    ENTRY_SIZE,
    READ_CHUNK_ENTRIES,
    AbortedTxn,
    CompletedTxn,
    TransactionIndex,
    TxnIndexSearchResult,
)


@pytest.fixture
def file(tmp_path: Path) -> Path:
    """Kafka's ``TestUtils.tempFile()``: an existing empty file."""
    path = tmp_path / "txn.txnindex"
    path.touch()
    return path


@pytest.fixture
def index(file: Path) -> Iterator[TransactionIndex]:
    idx = TransactionIndex(0, file)
    yield idx
    idx.close()


FOUR = [
    AbortedTxn(0, 0, 10, 11),
    AbortedTxn(1, 5, 15, 13),
    AbortedTxn(2, 18, 35, 25),
    AbortedTxn(3, 32, 50, 40),
]


# ---- TransactionIndexTest -----------------------------------------------------------------


def test_position_set_correctly_when_opened(index: TransactionIndex, file: Path) -> None:
    txns = list(FOUR)
    for txn in txns:
        index.append(txn)
    index.close()
    with TransactionIndex(0, file) as reopened:
        another = AbortedTxn(3, 50, 60, 55)
        reopened.append(another)
        txns.append(another)
        assert reopened.all_aborted_txns() == txns


def test_sanity_check(index: TransactionIndex, file: Path) -> None:
    for txn in FOUR:
        index.append(txn)
    index.close()
    # a different start offset fakes invalid data
    with TransactionIndex(100, file) as reopened, pytest.raises(CorruptIndexError):
        reopened.sanity_check()


def test_last_offset_must_increase(index: TransactionIndex) -> None:
    index.append(AbortedTxn(1, 5, 15, 13))
    with pytest.raises(InvalidOffsetError, match="must increase sequentially"):
        index.append(AbortedTxn(0, 0, 15, 11))


def test_last_offset_cannot_decrease(index: TransactionIndex) -> None:
    index.append(AbortedTxn(1, 5, 15, 13))
    with pytest.raises(InvalidOffsetError):
        index.append(AbortedTxn(0, 0, 10, 11))


def test_collect_aborted_transactions(index: TransactionIndex) -> None:
    for txn in FOUR:
        index.append(txn)
    assert index.collect_aborted_txns(0, 100) == TxnIndexSearchResult(FOUR, False)
    assert index.collect_aborted_txns(0, 32) == TxnIndexSearchResult(FOUR[0:3], True)
    assert index.collect_aborted_txns(0, 35) == TxnIndexSearchResult(FOUR, True)
    assert index.collect_aborted_txns(10, 35) == TxnIndexSearchResult(FOUR, True)
    assert index.collect_aborted_txns(11, 35) == TxnIndexSearchResult(FOUR[1:4], True)
    assert index.collect_aborted_txns(20, 41) == TxnIndexSearchResult(FOUR[2:4], False)


def test_truncate(index: TransactionIndex) -> None:
    txns = [
        AbortedTxn(0, 0, 10, 2),
        AbortedTxn(1, 5, 15, 16),
        AbortedTxn(2, 18, 35, 25),
        AbortedTxn(3, 32, 50, 40),
    ]
    for txn in txns:
        index.append(txn)
    index.truncate_to(51)
    assert index.collect_aborted_txns(0, 100).aborted_transactions == txns
    index.truncate_to(50)
    assert index.collect_aborted_txns(0, 100).aborted_transactions == txns[0:3]
    index.reset()
    assert index.collect_aborted_txns(0, 100).aborted_transactions == []


def test_aborted_txn_serde() -> None:
    txn = AbortedTxn(983493, 137, 299, 200)
    assert txn.version == CURRENT_VERSION
    assert txn.producer_id == 983493
    assert txn.first_offset == 137
    assert txn.last_offset == 299
    assert txn.last_stable_offset == 200
    assert AbortedTxn.from_bytes(txn.to_bytes()) == txn


def test_rename_index(index: TransactionIndex, tmp_path: Path) -> None:
    renamed = tmp_path / "renamed"
    renamed.touch()
    index.append(AbortedTxn(0, 0, 10, 2))
    index.rename_to(renamed)
    index.append(AbortedTxn(1, 5, 15, 16))
    txns = index.collect_aborted_txns(0, 100).aborted_transactions
    assert [t.first_offset for t in txns] == [0, 5]
    assert index.path == renamed
    assert renamed.stat().st_size == 2 * ENTRY_SIZE


def test_update_parent_dir(index: TransactionIndex, tmp_path: Path) -> None:
    parent = tmp_path / "other" / "parent"
    parent.mkdir(parents=True)
    assert index.path.parent != parent
    index.update_parent_dir(parent)
    assert index.path.parent == parent


def test_flush(tmp_path: Path) -> None:
    missing = tmp_path / "missing.txnindex"
    with TransactionIndex(0, missing) as idx:
        idx.flush()
        assert not missing.exists()
        idx.append(AbortedTxn(0, 0, 10, 2))
        idx.flush()
        assert idx.path.stat().st_size != 0


def test_delete_if_exists(index: TransactionIndex, file: Path) -> None:
    assert file.exists()
    assert index.delete_if_exists()
    assert not file.exists()
    assert not index.delete_if_exists()


# ---- ours -------------------------------------------------------------------------------------


def test_one_entry_golden_bytes(tmp_path: Path) -> None:
    """Computed by hand from ``AbortedTxn.toByteBuffer``'s layout, field by field
    (big-endian): putShort(0), putLong(983493 = 0xF01C5), putLong(137 = 0x89),
    putLong(299 = 0x12B), putLong(200 = 0xC8) -- the values of Kafka's
    ``testAbortedTxnSerde``. Listed in tests/golden/VECTORS.md."""
    golden = bytes.fromhex(
        "0000"  # Version
        "00000000000f01c5"  # ProducerId 983493
        "0000000000000089"  # FirstOffset 137
        "000000000000012b"  # LastOffset 299
        "00000000000000c8"  # LastStableOffset 200
    )
    assert len(golden) == ENTRY_SIZE == 34
    txn = AbortedTxn(983493, 137, 299, 200)
    assert txn.to_bytes() == golden
    path = tmp_path / "00000000000000000000.txnindex"
    with TransactionIndex(0, path) as idx:
        idx.append(txn)
    assert path.read_bytes() == golden
    with TransactionIndex(0, path) as idx:
        assert idx.all_aborted_txns() == [txn]


def test_text_forms_are_kafkas() -> None:
    assert str(AbortedTxn(1, 2, 3, 4)) == (
        "AbortedTxn(version=0, producerId=1, firstOffset=2, lastOffset=3, lastStableOffset=4)"
    )
    assert str(CompletedTxn(1, 2, 3, True)) == (
        "CompletedTxn(producerId=1, firstOffset=2, lastOffset=3, isAborted=true)"
    )
    assert AbortedTxn.of_completed(CompletedTxn(1, 2, 3, True), 9) == AbortedTxn(1, 2, 3, 9)


def test_file_created_only_by_the_first_append(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.txnindex"
    idx = TransactionIndex(0, path)
    assert not idx.file_exists
    assert idx.all_aborted_txns() == []
    assert idx.collect_aborted_txns(0, 100) == TxnIndexSearchResult([], False)
    idx.sanity_check()
    idx.truncate_to(0)
    idx.reset()
    idx.flush()
    idx.rename_to(tmp_path / "x.txnindex.deleted")
    idx.close()
    assert list(tmp_path.iterdir()) == []
    idx.append(AbortedTxn(0, 0, 1, 0))
    assert idx.file_exists
    assert idx.path == tmp_path / "x.txnindex.deleted"
    assert idx.path.stat().st_size == ENTRY_SIZE
    idx.close()


def test_unknown_version_fails_every_read(file: Path) -> None:
    entry = bytearray(AbortedTxn(1, 0, 5, 0).to_bytes())
    entry[0:2] = (1).to_bytes(2, "big")
    file.write_bytes(AbortedTxn(0, 0, 2, 0).to_bytes() + entry)
    with TransactionIndex(0, file) as idx:
        for read in (
            idx.all_aborted_txns,
            lambda: idx.collect_aborted_txns(0, 100),
            idx.sanity_check,
            lambda: idx.truncate_to(100),
        ):
            with pytest.raises(
                UnknownServerError, match="Unexpected aborted transaction version 1"
            ):
                read()


def test_partial_entry_is_corrupt_and_truncation_drops_it(file: Path) -> None:
    whole = AbortedTxn(0, 0, 2, 0).to_bytes()
    file.write_bytes(whole + whole[:10])
    with TransactionIndex(0, file) as idx:
        assert idx.all_aborted_txns() == [AbortedTxn(0, 0, 2, 0)]
        with pytest.raises(CorruptIndexError, match="not a multiple of the entry size 34"):
            idx.sanity_check()
        idx.truncate_to(3)  # keeps every entry, drops the torn tail
        idx.sanity_check()
        idx.append(AbortedTxn(1, 3, 4, 3))
    assert file.stat().st_size == 2 * ENTRY_SIZE
    with TransactionIndex(0, file) as idx:
        assert idx.all_aborted_txns() == [AbortedTxn(0, 0, 2, 0), AbortedTxn(1, 3, 4, 3)]


def test_reads_span_chunks(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.txnindex"
    n = READ_CHUNK_ENTRIES * 2 + 3
    txns = [AbortedTxn(i, 2 * i, 2 * i + 1, 2 * i) for i in range(n)]
    with TransactionIndex(0, path) as idx:
        for txn in txns:
            idx.append(txn)
        assert idx.all_aborted_txns() == txns
        last = n - 1
        assert idx.collect_aborted_txns(2 * last, 2 * last + 2) == TxnIndexSearchResult(
            [txns[last]], False
        )
        idx.truncate_to(2 * (READ_CHUNK_ENTRIES + 1) + 1)
        assert idx.all_aborted_txns() == txns[: READ_CHUNK_ENTRIES + 1]


def _model_collect(
    model: list[AbortedTxn], fetch_offset: int, upper_bound: int
) -> TxnIndexSearchResult:
    found = []
    for txn in model:
        if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound:
            found.append(txn)
        if txn.last_stable_offset >= upper_bound:
            return TxnIndexSearchResult(found, True)
    return TxnIndexSearchResult(found, False)


_steps = st.lists(
    st.one_of(
        st.tuples(
            st.just("append"),
            st.integers(1, 20),
            st.integers(0, 30),
            st.integers(0, 40),
        ),
        st.tuples(st.just("truncate"), st.integers(0, 300)),
        st.tuples(st.just("collect"), st.integers(0, 300), st.integers(0, 300)),
        st.tuples(st.just("reopen")),
        st.tuples(st.just("reset")),
    ),
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(steps=_steps)
def test_matches_a_list_model(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[int | str, ...]]
) -> None:
    """Appends with increasing last offsets, truncations, resets, reopenings and
    searches against a list of the entries."""
    path = tmp_path_factory.mktemp("txn") / "00000000000000000000.txnindex"
    idx = TransactionIndex(0, path)
    model: list[AbortedTxn] = []
    next_last = 0
    pid = 0
    try:
        for step in steps:
            kind = step[0]
            if kind == "append":
                gap, span, lso_back = (int(v) for v in step[1:])
                last = next_last + gap
                txn = AbortedTxn(pid, max(0, last - span), last, max(0, last - lso_back))
                pid += 1
                idx.append(txn)
                model.append(txn)
                next_last = last
            elif kind == "truncate":
                offset = int(step[1])
                idx.truncate_to(offset)
                model = [t for t in model if t.last_offset < offset]
                # a reopened index checks appends only against what it kept
                next_last = model[-1].last_offset if model else next_last
            elif kind == "collect":
                fetch_offset, upper = int(step[1]), int(step[2])
                assert idx.collect_aborted_txns(fetch_offset, upper) == _model_collect(
                    model, fetch_offset, upper
                )
            elif kind == "reopen":
                idx.close()
                idx = TransactionIndex(0, path)
            else:
                idx.reset()
                model = []
            assert idx.all_aborted_txns() == model
        assert idx.file_exists == path.exists()
        if path.exists():
            assert path.stat().st_size == ENTRY_SIZE * len(model)
        idx.sanity_check()
    finally:
        idx.close()

"""`Hindsight.on_bank`: a write that creates its bank, and removes it again when the write fails and left nothing."""

from __future__ import annotations

import pytest

from hindsight import Bank, Hindsight, InvalidInputError


def test_a_failed_first_write_leaves_no_bank(hs: Hindsight) -> None:
    with pytest.raises(InvalidInputError):
        hs.on_bank("fresh", lambda bank: bank.retain("   "))
    assert "fresh" not in hs.banks()
    assert hs.store.bank_files is not None and not (hs.store.bank_files / "fresh").exists()


def test_a_first_write_that_succeeds_keeps_its_bank(hs: Hindsight) -> None:
    result = hs.on_bank("fresh", lambda bank: bank.retain("Maya lives in Oslo.", timestamp="2024-05-01"))
    assert result.created == 1 and "fresh" in hs.banks()


def test_a_failure_after_something_was_written_keeps_the_bank(hs: Hindsight) -> None:
    def work(bank: Bank) -> None:
        bank.retain("Maya lives in Oslo.", timestamp="2024-05-01")
        raise RuntimeError("the caller failed after the retain committed")

    with pytest.raises(RuntimeError):
        hs.on_bank("fresh", work)
    assert "fresh" in hs.banks() and hs.bank("fresh").stats().documents == 1


def test_a_failed_write_into_an_existing_bank_keeps_it(hs: Hindsight) -> None:
    hs.bank("kept")
    with pytest.raises(InvalidInputError):
        hs.on_bank("kept", lambda bank: bank.retain(""))
    assert "kept" in hs.banks()
    hs.on_bank("kept", lambda bank: bank.retain("Bob moved to Lima.", timestamp="2024-05-01"))
    assert hs.bank("kept").stats().documents == 1

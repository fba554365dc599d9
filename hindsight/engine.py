"""The Hindsight engine: one memory directory holding the database and each bank's index files."""

from __future__ import annotations

import fcntl
import logging
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import IO, TypeVar

from hindsight import validate
from hindsight.asyncs import async_twin
from hindsight.bank import Bank
from hindsight.config import HindsightConfig
from hindsight.embed.bank_embedder import check_bank_embedder
from hindsight.embed.base import CachedEmbedder, Embedder
from hindsight.errors import BankNotFoundError, DirectoryLockedError, StoreClosedError, StoreError
from hindsight.jobs import JobQueue, RetainEvent, RetainHook
from hindsight.lifecycle import CallGate
from hindsight.llm.base import LLM
from hindsight.llm.factory import build_llm, llm_required, resolve_settings
from hindsight.llm.usage import MeteredLLM, UsageCounters
from hindsight.models import BankProfile
from hindsight.recall.pipeline import RecallPipeline
from hindsight.reflect.reasoner import Reasoner, pending_items
from hindsight.retain.factory import make_extractor
from hindsight.retain.pipeline import RetainPipeline
from hindsight.scrub import finish_scrubs, remove_bank_dir
from hindsight.store.base import MemoryStore, PendingItem
from hindsight.store.disk import disk_error
from hindsight.store.factory import open_store
from hindsight.store.search import BankSearch
from hindsight.store.transfer import ImportResult
from hindsight.transfer import export_lines, import_lines
from hindsight.units import BankHandle

log = logging.getLogger(__name__)
T = TypeVar("T")


class Hindsight:
    """Opens (or creates) a memory directory. Use as a context manager, or call close()."""

    def __init__(
        self,
        path: str | os.PathLike[str] = "./memdir",
        config: HindsightConfig | str | os.PathLike[str] | None = None,
        *,
        llm: LLM | None = None,
        embedder: Embedder | None = None,
        store: MemoryStore | None = None,
    ) -> None:
        if config is None:
            config = HindsightConfig()
        elif not isinstance(config, HindsightConfig):
            config = HindsightConfig.from_yaml(config)
        self.config = config
        self.path = Path(path)
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise disk_error(exc, f"creating the memory directory {self.path}") from exc
        # An embedded store's files live in the directory and belong to one process; a shared store's do not.
        shared = store.bank_files is None if store is not None else config.store.backend == "postgres"
        self._lock_file = None if shared else self._acquire_directory_lock()
        try:
            self._open(config, llm, embedder, store)
        except BaseException:
            self._unlock()  # a failed open leaves the directory unlocked for the next try
            raise

    def _open(self, config: HindsightConfig, llm: LLM | None, embedder: Embedder | None,
              store: MemoryStore | None) -> None:
        # Without `llm`, the configured backend (None when there is none); every call is counted per bank,
        # for this engine in memory and for the bank's lifetime in the store.
        self.llm_usage = UsageCounters(lambda bank_id, usage: self.store.add_llm_usage(bank_id, usage))
        base_llm: LLM | None = llm
        configured = True
        if llm is None:
            settings = resolve_settings(config.llm)
            base_llm, configured = build_llm(settings, config.llm), settings.configured
        self.llm: LLM | None = MeteredLLM(base_llm, self.llm_usage) if base_llm is not None else None
        self._embedder_override = embedder
        self._embedder: CachedEmbedder | None = None
        self._pipeline: RetainPipeline | None = None
        self._recall_pipeline: RecallPipeline | None = None
        self._reasoner: Reasoner | None = None
        self._lock = threading.RLock()
        # Every public call passes through it: close() refuses new calls and waits for those in flight.
        self._gate = CallGate(lambda: StoreClosedError(f"the Hindsight instance of {self.path} is closed: open a "
                                                       "new one to use it"))
        self._close_lock = threading.Lock()
        self._banks: dict[str, Bank] = {}
        self.jobs = JobQueue()
        self._stopping = threading.Event()  # set by close(): background reasoning stops between items
        # Whether the reasoning retain queues runs on the job thread after retain (else on process_pending()).
        self.background_reasoning = self._background_consent(configured)
        if self.background_reasoning:
            self.jobs.add_hook(self._reason_after_retain)
        try:
            self.store = store or open_store(config.store, self.path)
        except BaseException:
            self._unlock()  # a refused or damaged database must not keep the directory locked
            raise
        # This process holds the directory: claims on queued work were left by one that died or closed.
        if released := self.store.release_pending():
            log.info("%s: %d queued background items claimed by an earlier run are queued again", self.path, released)
        self._closed = False
        finish_scrubs(self.store, lambda bank_id: self.bank(bank_id).indexes)

    def _background_consent(self, configured: bool) -> bool:
        """Background reasoning needs an LLM, work for it, and consent: `reflect.work.background: true`, or `auto`
        with an LLM the user configured. An installed model that `auto` found is used when asked (reflect,
        process_pending), never behind the host's back."""
        reflect = self.config.reflect
        if self.llm is None or not (reflect.reinforce.enabled or reflect.observations.enabled):
            return False
        if reflect.work.background == "auto":
            if not configured:
                log.info("%s: no background reasoning: the LLM was found, not configured; queued work waits for "
                         "bank.process_pending() (reflect.work.background: true runs it after retain)", self.path)
            return configured
        return reflect.work.background

    def _unlock(self) -> None:
        if self._lock_file is not None:
            self._lock_file.close()

    def _acquire_directory_lock(self) -> IO[str]:
        """One process per directory: the HNSW index lives in memory and would diverge between processes."""
        try:
            fh = open(self.path / "LOCK", "a+")  # noqa: SIM115 - held open for the engine's lifetime
        except OSError as exc:
            raise disk_error(exc, f"opening the memory directory {self.path}") from exc
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "unknown"
            fh.close()
            raise DirectoryLockedError(f"memory directory {self.path} is locked by pid {holder}") from None
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
        fh.flush()
        return fh

    # -- lazily built parts ------------------------------------------------------------------
    @property
    def embedder(self) -> CachedEmbedder:
        with self._lock:
            if self._embedder is None:
                from hindsight.embed.factory import shared_embedder

                base = self._embedder_override or shared_embedder(self.config.embedder)
                self._embedder = CachedEmbedder(base, self.config.embedder.cache_size, self.store.lookup_embeddings)
            return self._embedder

    @property
    def pipeline(self) -> RetainPipeline:
        with self._lock:
            self._check_open()
            if self._pipeline is None:
                self._pipeline = RetainPipeline(
                    self.config, self.store, self.embedder, make_extractor(self.config, self.llm), self.jobs,
                    self.pending_items,
                )
            return self._pipeline

    @property
    def recall_pipeline(self) -> RecallPipeline:
        with self._lock:
            self._check_open()
            if self._recall_pipeline is None:
                self._recall_pipeline = RecallPipeline(self.config, self.store, self.embedder)
            return self._recall_pipeline

    def require_llm(self, purpose: str) -> LLM:
        """The LLM, or LLMNotConfiguredError saying how to get one when `purpose` needs it and there is none."""
        if self.llm is None:
            raise llm_required(purpose)
        return self.llm

    @property
    def reasoner(self) -> Reasoner:
        """Reflect and the background reasoning; LLMNotConfiguredError without an LLM."""
        with self._lock:
            self._check_open()
            llm = self.require_llm("reflect (like opinions, observations and background merging)")
            if self._reasoner is None:
                self._reasoner = Reasoner(self.config, self.store, self.embedder, self.recall_pipeline, llm,
                                          lambda: self.jobs.pending, self._stopping)
            return self._reasoner

    def pending_items(self, fact_ids: list[str], entity_ids: list[str]) -> list[PendingItem]:
        """The background reasoning that new facts and touched entities need (nothing without an LLM), queued in
        the transaction of the retain or forget that calls for it."""
        return pending_items(self.config.reflect, fact_ids, entity_ids) if self.llm is not None else []

    def _reason_after_retain(self, event: RetainEvent) -> None:
        if not self._stopping.is_set():
            self.reasoner.on_retain(event, lambda: self._existing_handle(event.bank_id))

    def _existing_handle(self, bank_id: str) -> BankHandle | None:
        try:
            return self.bank(bank_id, create=False).handle()
        except (BankNotFoundError, StoreClosedError):
            return None  # deleted or closed since the retain

    def open_indexes(self, bank_id: str) -> BankSearch:
        """A bank's search, checked against the embedder that built the bank."""
        check_bank_embedder(bank_id, self.store.embedded_sample(bank_id), self.embedder.name)
        return self.store.open_search(bank_id, self.embedder.dim)

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError(f"the Hindsight instance of {self.path} is closed: open a new one to use it")

    def call(self) -> AbstractContextManager[None]:
        """A public call in flight: close() waits for it, and refuses calls after it with StoreClosedError."""
        return self._gate.call()

    # -- banks -------------------------------------------------------------------------------
    def bank(self, bank_id: str, create: bool = True) -> Bank:
        """Get a bank, creating it unless create=False (then a missing bank is BankNotFoundError)."""
        validate.bank_id(bank_id)
        with self.call(), self._lock:
            self._check_open()
            if bank_id not in self._banks:
                if self.store.get_profile(bank_id) is None:
                    if not create:
                        raise BankNotFoundError(f"no bank {bank_id!r}")
                    self.store.create_bank(bank_id, BankProfile())
                self._banks[bank_id] = Bank(self, bank_id)
            return self._banks[bank_id]

    def on_bank(self, bank_id: str, work: Callable[[Bank], T]) -> T:
        """`work(bank)`, creating the bank first when it does not exist. When the work fails in a bank this call
        created and left empty, the bank is deleted again: a refused first write leaves no bank behind."""
        validate.bank_id(bank_id)
        with self.call():
            with self._lock:
                self._check_open()
                existed = bank_id in self._banks or self.store.get_profile(bank_id) is not None
            bank = self.bank(bank_id, create=True)
            try:
                return work(bank)
            except BaseException:
                if not existed:
                    self._undo_create(bank)
                raise

    def _undo_create(self, bank: Bank) -> None:
        """Delete a bank created for a write that failed, if it is empty and no other call is on it; a call that
        comes while this looks is refused as if the bank were deleted, and a bank that is not empty stays."""
        with self._lock:
            if self._banks.get(bank.id) is not bank or not bank._gate.shut_if_idle():
                return
            stats = self.store.stats(bank.id)
            if sum(stats.units.values()) or stats.documents or stats.entities:
                bank._gate.reopen()
                return
            self._banks.pop(bank.id)
            bank.close(deleted=True)
            self.store.delete_bank(bank.id)
            remove_bank_dir(self.store, bank.id)
            log.info("bank %s: removed again, since the write that created it failed", bank.id)

    def banks(self) -> list[str]:
        with self.call():
            return self.store.list_banks()

    def delete_bank(self, bank_id: str) -> None:
        """Remove every row and file of a bank. Calls on the bank already in flight finish first; later ones, and
        those through an old `Bank` handle, raise BankNotFoundError."""
        validate.bank_id(bank_id)
        with self.call():
            with self._lock:
                self._check_open()
                bank = self._banks.get(bank_id)
            if bank is not None:
                bank.close(deleted=True)  # outside the engine lock: the calls it waits for may need it
            with self._lock:
                if self._banks.get(bank_id) is bank:
                    self._banks.pop(bank_id, None)
                if self.store.get_profile(bank_id) is None:
                    raise BankNotFoundError(f"no bank {bank_id!r}")
                self.store.delete_bank(bank_id)
                remove_bank_dir(self.store, bank_id)

    def export_bank(self, bank_id: str) -> Iterator[str]:
        """The bank as JSON Lines (hindsight/transfer.py): a header line, then one line per row, each ending in a
        newline. The bank is read now, in one read transaction; BankNotFoundError without it."""
        validate.bank_id(bank_id)
        with self.call():
            self._check_open()
            return export_lines(self.store, bank_id, self.embedder.name, self.embedder.dim)

    def import_bank(self, lines: Iterable[str | bytes], bank_id: str | None = None) -> ImportResult:
        """Create a bank from the lines of an export (`bank_id`, or the exported bank's id when None), in one
        transaction; it is searchable when this returns. Its <private> spans are taken out as retain takes them out.
        Refused, with nothing written: damaged or foreign input, a newer format version, a working memory schema that
        cannot be checked (InvalidInputError naming the line), another embedder's export (EmbedderMismatchError), a
        bank the store already has (BankExistsError)."""
        if bank_id is not None:
            validate.bank_id(bank_id)
        with self.call():
            self._check_open()
            # The bank does not exist yet, so no handle of it waits; the store takes its lock for the write. A
            # SQLite bank's index files are built from the change log when it is first opened.
            return import_lines(self.store, lines, bank_id, self.embedder, self.config.retain.private_marker)

    # -- background work ---------------------------------------------------------------------
    def add_retain_hook(self, hook: RetainHook) -> None:
        """Run `hook(event)` in the background after every retain that changed something."""
        self.jobs.add_hook(hook)

    def drain(self) -> None:
        """Wait until all background work queued by retain has run."""
        self.jobs.drain()

    # -- lifecycle ---------------------------------------------------------------------------
    def close(self) -> None:
        """Refuse new calls (StoreClosedError), stop background reasoning after its current item (the rest stays
        queued for the next run), wait for the calls in flight and the hooks of returned retains, then close the
        banks and the store and unlock the directory. Those last steps all run even when one fails (a full disk
        while saving an index), and the first failure is raised after them. A second close() waits for the first."""
        # A thread inside a call must not wait for another thread's close, which waits for that very call.
        if not self._close_lock.acquire(blocking=self._gate.inside() == 0):
            return
        try:
            if self._closed:
                return
            self._stopping.set()
            self._gate.shut()
            # Outside the engine lock: a running hook may need it to finish.
            if self._reasoner is not None:
                self._reasoner.wait_idle()
            self.jobs.close()
            with self._lock:
                self._closed = True
                steps: list[Callable[[], None]] = [bank.close for bank in self._banks.values()]
                self._banks.clear()
                if self._recall_pipeline is not None:
                    steps.insert(0, self._recall_pipeline.close)
                self._release([*steps, self.store.close, self._unlock])
        finally:
            self._close_lock.release()

    def _release(self, steps: list[Callable[[], None]]) -> None:
        """Run every closing step, even after one fails; then raise the first failure, typed."""
        failures: list[Exception] = []
        for step in steps:
            try:
                step()
            except Exception as exc:  # every step must run; the first failure is raised below
                failures.append(exc)
        for later in failures[1:]:
            log.warning("closing %s: another step failed too: %s", self.path, later)
        if failures:
            first = failures[0]
            note = (f"{first}. {self.path} is closed and unlocked all the same: every committed memory is in its "
                    "database, and the indexes catch up from it on the next open")
            raise (type(first) if isinstance(first, StoreError) else StoreError)(note) from first

    def __enter__(self) -> Hindsight:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Hindsight:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    abank = async_twin(bank)
    abanks = async_twin(banks)
    adelete_bank = async_twin(delete_bank)
    aexport_bank = async_twin(export_bank)
    aimport_bank = async_twin(import_bank)
    adrain = async_twin(drain)
    aclose = async_twin(close)

"""Stateful tests: checkpoints, aborts, disposals, savepoints and restores against a model.

The machine drives one job on one storage (coordinator and worker roles) and keeps an
independent oracle: for every live pointer, the metadata bytes and the bytes of every handle
written for it. Restores always go through a FRESH storage from ``make_storage`` (or a pickled
copy), so nothing the writer holds in memory can leak into a restore. The metadata of each
checkpoint is a pickle of its handles, as a caller that keeps its handles in ``_metadata`` writes
it; the restore reads them back through ``resolve_handle``.

Shared-scope state follows Flink's ownership rule: it belongs to the checkpoint that wrote it
until that checkpoint is disposed or aborted; then it is an orphan that disposal must not have
touched, and that the machine may discard itself (as Flink's shared state registry does).
Capability-dependent rules are gated with ``precondition``; moving savepoints (SAV-7) runs in a
second test of its own, so that the generic test needs no optional capability.

Every failure names one clause: each step runs under ``_step(clause, ...)``, which turns an
unexpected exception into an assertion tagged with the clause of that step, and the invariants
blame the step that ran last (a discard that deletes its neighbours fails DIS-5, a disposal that
touches live state DIS-3).
"""

from __future__ import annotations

import pickle
import uuid
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import note
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from ckptconform.failures import ClauseFailure
from ckptconform.suite._driver import (
    EXCLUSIVE,
    SHARED,
    JobDriver,
    fail_message,
    file_path,
    is_dir,
    join,
    move_tree,
    payload,
    read_handle,
    same_location,
    tagged,
    write_state,
)
from ckptconform.suite._strategies import capped, chunkings

SIZES = st.integers(min_value=0, max_value=300)
LIFECYCLE_CLAUSES = (
    "PTR-1", "PTR-2", "PTR-3", "STR-1", "STR-3", "TOW-1", "MD-4", "MD-7", "DIS-1", "DIS-2",
    "DIS-3", "DIS-5", "TOW-3", "TOW-4", "SER-1", "SER-2", "SER-3",
)  # fmt: skip


@dataclass
class Pending:
    checkpoint_id: int
    location: Any
    factory: Any
    written: list[tuple[Any, bytes, str]] = field(default_factory=list)


@dataclass
class Completed:
    pointer: str
    metadata: bytes
    handles: list[tuple[Any, bytes, str]]
    location: Any
    savepoint: bool = False
    moved: bool = False


class CheckpointMachine(RuleBasedStateMachine):
    #: the clause of moved savepoints; None: savepoints are never moved (no SAV-7 check)
    moved_clause: str | None = None

    def __init__(self, sandbox: Any, target: Any) -> None:
        super().__init__()
        self.sandbox, self.caps = sandbox, frozenset(target.capabilities)
        base = join(sandbox.root, f"sm-{uuid.uuid4().hex[:12]}")
        self.options: dict[str, Any] = {
            "checkpoint_dir": join(base, "checkpoints"),
            "savepoint_dir": join(base, "savepoints"),
        }
        if "inline-state" in self.caps:
            self.options["inline_threshold"] = 64  # sizes 0..300 give inline and file state
        self.base = base
        self.drv = JobDriver(sandbox, **self.options)
        self.drv.init_base()
        self.next_id = 1
        self.pending: Pending | None = None
        self.completed: dict[str, Completed] = {}
        self.disposed: list[str] = []
        self.orphans: list[tuple[Any, bytes]] = []  # shared state no checkpoint owns any more
        self.task_owned: list[tuple[Any, bytes]] = []
        self.removed: list[tuple[str, str]] = []  # (file that must be gone, clause that says so)
        self.last = ("DIS-3", "setup")  # who to blame when live state goes missing
        note(f"storage options: {self.options}, job {self.drv.job_id}")

    def _msg(self, clause: str, operation: str, **inputs: Any) -> str:
        return fail_message(clause, operation, self.sandbox, **inputs)

    def _check(self, ok: bool, clause: str, operation: str, **inputs: Any) -> None:
        """Fail ``clause`` unless ``ok`` (the message, with the sandbox listing, only then)."""
        if not ok:
            raise ClauseFailure((clause,), self._msg(clause, operation, **inputs))

    def _step(self, clause: str, operation: str, **inputs: Any) -> AbstractContextManager[None]:
        """Run one operation; an unexpected exception fails ``clause`` with its context."""
        return tagged(clause, operation, self.sandbox, **inputs)

    def _roundtrip(self, obj: Any, clause: str, what: str) -> Any:
        with self._step(clause, f"pickle round trip of {what}", obj=obj):
            return pickle.loads(pickle.dumps(obj))

    def _fresh_storage(self, pickled: bool = False) -> Any:
        with self._step("PTR-1", "make_storage (a fresh instance)"):
            storage = self.drv.fresh_storage()
        return self._roundtrip(storage, "SER-1", "a storage") if pickled else storage

    # ------------------------------------------------------------------ checkpoints

    @precondition(lambda self: self.pending is None)
    @rule()
    def begin_checkpoint(self) -> None:
        cid, self.next_id = self.next_id, self.next_id + 1
        note(f"begin checkpoint {cid}")
        self.last = ("DIS-3", f"begin checkpoint {cid}")
        with self._step("STR-1", "initialize and resolve the location", checkpoint_id=cid):
            location = self.drv.location(cid)
        reference = self._roundtrip(location.location_reference, "SER-3", "a location reference")
        with self._step("STR-1", "resolve_checkpoint_storage_location", checkpoint_id=cid):
            factory = self.drv.worker(cid, reference)
        self.pending = Pending(cid, location, factory)

    @precondition(lambda self: self.pending is not None)
    @rule(size=SIZES, scope=st.sampled_from([EXCLUSIVE, SHARED]), data=st.data())
    def write_state(self, size: int, scope: Any, data: Any) -> None:
        assert self.pending is not None
        sizes = data.draw(chunkings(size), label="write sizes")
        blob = payload(size, seed=len(self.pending.written) + 31 * self.pending.checkpoint_id)
        self.last = ("STR-1", f"write {scope} state")
        with self._step("STR-1", "write state", size=size, sizes=sizes, scope=scope):
            handle = write_state(self.pending.factory, blob, scope, sizes)
            got = None if handle is None else read_handle(handle)
        note(f"checkpoint {self.pending.checkpoint_id}: {scope}, {size} bytes -> {handle!r}")
        if size == 0:
            self._check(handle is None, "STR-3", "empty state", handle=handle)
            return
        self._check(got == blob, "STR-1", "write + read", size=size, sizes=sizes)
        self.pending.written.append((handle, blob, str(scope)))

    @rule(size=SIZES.filter(bool))
    def write_task_owned(self, size: int) -> None:
        blob = payload(size, seed=1000 + len(self.task_owned))
        self.last = ("TOW-1", "write task-owned state")
        with self._step("TOW-1", "create_task_owned_state_stream + write", size=size):
            handle = self.drv.task_owned(blob)
            got = read_handle(handle)
        note(f"task-owned state of {size} bytes -> {handle!r}")
        self._check(got == blob, "TOW-1", "task-owned write + read", size=size)
        self.task_owned.append((handle, blob))

    @precondition(lambda self: self.pending is not None)
    @rule()
    def finalize(self) -> None:
        assert self.pending is not None
        pending, self.pending = self.pending, None
        with self._step("SER-2", "pickle the handles into the metadata"):
            metadata = pickle.dumps([h for h, _, _ in pending.written])
        self.last = ("MD-4", f"finalize checkpoint {pending.checkpoint_id}")
        with self._step("MD-4", "finalize", checkpoint_id=pending.checkpoint_id):
            completed = self.drv.finalize(pending.location, metadata)
            pointer = completed.external_pointer
        note(f"finalize checkpoint {pending.checkpoint_id} -> {pointer}")
        self._check(pointer not in self.completed, "PTR-1", "pointer reused", pointer=pointer)
        self.completed[pointer] = Completed(pointer, metadata, pending.written, completed)

    @precondition(lambda self: self.pending is not None)
    @rule()
    def abort(self) -> None:
        assert self.pending is not None
        pending, self.pending = self.pending, None
        note(f"abort checkpoint {pending.checkpoint_id}")
        self.last = ("DIS-3", f"abort checkpoint {pending.checkpoint_id}")
        with self._step("DIS-1", "dispose_on_failure", checkpoint_id=pending.checkpoint_id):
            pending.location.dispose_on_failure()
        for handle, blob, scope in pending.written:
            if scope == str(SHARED):
                self.orphans.append((handle, blob))
            elif file_path(handle):
                self.removed.append((file_path(handle), "DIS-1"))

    @initialize()
    def dispose_a_checkpoint_with_state(self) -> None:
        """Each run starts by disposing a completed checkpoint that holds exclusive state (a
        file where inline-state is claimed), so that DIS-2's recursive removal is checked
        whatever steps the run draws next (a short random run may draw no disposal)."""
        cid, self.next_id = self.next_id, self.next_id + 1
        blob = payload(200, seed=7 * cid)
        note(f"checkpoint {cid} with exclusive state, disposed first")
        with self._step("DIS-2", "a checkpoint with exclusive state", checkpoint_id=cid):
            location = self.drv.location(cid)
            factory = self.drv.worker(cid, location.location_reference)
            handle = write_state(factory, blob, EXCLUSIVE, [len(blob)])
            metadata = pickle.dumps([handle])
            completed = self.drv.finalize(location, metadata)
        written = [(handle, blob, str(EXCLUSIVE))]
        pointer = completed.external_pointer
        self.completed[pointer] = Completed(pointer, metadata, written, completed)
        self._dispose(pointer, via_restore=False)

    @precondition(lambda self: bool(self.completed))
    @rule(data=st.data(), via_restore=st.booleans())
    def dispose(self, data: Any, via_restore: bool) -> None:
        self._dispose(
            data.draw(st.sampled_from(list(self.completed)), label="pointer"), via_restore
        )

    def _dispose(self, pointer: str, via_restore: bool) -> None:
        entry = self.completed.pop(pointer)
        note(f"dispose {pointer} ({'resolved anew' if via_restore else 'as finalized, pickled'})")
        self.last = ("DIS-3", f"dispose {pointer}")
        if via_restore:
            with self._step("PTR-1", "resolve_checkpoint", pointer=pointer):
                location = self._fresh_storage().resolve_checkpoint(pointer)
        else:
            location = self._roundtrip(entry.location, "SER-3", "a completed location")
        with self._step("DIS-2", "dispose_storage_location", pointer=pointer):
            location.dispose_storage_location()
        self.disposed.append(pointer)
        for handle, blob, scope in entry.handles:
            if scope == str(SHARED) and not entry.savepoint:
                self.orphans.append((handle, blob))
            else:
                path = file_path(self._own(entry, handle))
                if path:
                    self.removed.append((path, "DIS-2"))

    @precondition(lambda self: bool(self.orphans))
    @rule(data=st.data())
    def discard_orphan(self, data: Any) -> None:
        index = data.draw(st.integers(0, len(self.orphans) - 1), label="orphan")
        handle, _ = self.orphans.pop(index)
        note(f"discard orphaned shared state {handle!r}")
        self.last = ("DIS-5", f"discard_state of {handle!r}")
        with self._step("DIS-5", "discard_state", handle=handle):
            handle.discard_state()
        self._discarded(handle, "DIS-5")

    @precondition(lambda self: bool(self.task_owned))
    @rule(data=st.data())
    def discard_task_owned(self, data: Any) -> None:
        index = data.draw(st.integers(0, len(self.task_owned) - 1), label="task-owned")
        handle, _ = self.task_owned.pop(index)
        note(f"discard task-owned state {handle!r}")
        self.last = ("DIS-5", f"discard_state of task-owned {handle!r}")
        with self._step("TOW-4", "discard_state of task-owned state", handle=handle):
            handle.discard_state()
        self._discarded(handle, "TOW-4")

    def _discarded(self, handle: Any, clause: str) -> None:
        """Its file must go (``clause``); its directory stays where directories exist (DIS-5)."""
        path = file_path(handle)
        if not path:
            return
        self.removed.append((path, clause))
        parent = path.rstrip("/").rsplit("/", 1)[0]
        if not self.sandbox.backend.object_store:
            self._check(
                is_dir(self.sandbox, parent),
                "DIS-5",
                "discard_state removed the directory",
                handle=handle,
                directory=parent,
            )

    # ------------------------------------------------------------------ savepoints

    @precondition(lambda self: "savepoints" in self.caps and self.pending is None)
    @rule(sizes=st.lists(SIZES.filter(bool), max_size=3), to_target=st.booleans())
    def savepoint(self, sizes: list[int], to_target: bool) -> None:
        target_dir = join(self.base, "sp-target") if to_target else None
        cid, self.next_id = self.next_id, self.next_id + 1
        self.last = ("DIS-3", f"savepoint {cid}")
        with self._step("STR-1", "savepoint: initialize, write", sizes=sizes):
            location = self.drv.access.initialize_location_for_savepoint(cid, target_dir)
            factory = self.drv.worker(cid, location.location_reference)
            blobs = [payload(n, seed=n + cid) for n in sizes]
            written = [(write_state(factory, b, EXCLUSIVE), b, str(EXCLUSIVE)) for b in blobs]
        with self._step("SER-2", "pickle the savepoint's handles into its metadata"):
            metadata = pickle.dumps([h for h, _, _ in written])
        with self._step("STR-1", "savepoint: finalize", sizes=sizes):
            completed = self.drv.finalize(location, metadata)
        pointer = completed.external_pointer
        note(f"savepoint {cid} to {target_dir or 'the default'} -> {pointer}")
        self.completed[pointer] = Completed(pointer, metadata, written, completed, savepoint=True)

    @precondition(
        lambda self: (
            self.moved_clause is not None and any(c.savepoint for c in self.completed.values())
        )
    )
    @rule(data=st.data())
    def move_savepoint(self, data: Any) -> None:
        assert self.moved_clause is not None
        moved = self.moved_clause
        # in the order the run completed them: a savepoint's name holds random characters, so
        # sorted pointers would give hypothesis's replay another savepoint at the same index
        choices = [p for p, c in self.completed.items() if c.savepoint]
        pointer = data.draw(st.sampled_from(choices), label="savepoint")
        new = join(self.base, "moved", uuid.uuid4().hex[:8], pointer.rstrip("/").rsplit("/", 1)[1])
        note(f"move savepoint {pointer} -> {new}")
        self.last = (moved, f"move savepoint {pointer}")
        move_tree(self.sandbox, pointer, new)
        entry = self.completed.pop(pointer)
        with self._step(moved, "resolve a moved savepoint", pointer=new, moved_from=pointer):
            location = self._fresh_storage().resolve_checkpoint(new)
        self._check(
            same_location(self.sandbox, location.external_pointer, new),
            moved,
            "resolve a moved savepoint",
            pointer=new,
            got=location.external_pointer,
        )
        entry.pointer, entry.location, entry.moved = location.external_pointer, location, True
        self.completed[entry.pointer] = entry
        self.disposed.append(pointer)

    # ------------------------------------------------------------------ restores

    def _own(self, entry: Completed, handle: Any) -> Any:
        """A handle of ``entry`` as its (possibly moved) location resolves it."""
        clause = self.moved_clause if entry.moved and self.moved_clause else "MD-7"
        with self._step(clause, "resolve_handle", pointer=entry.pointer, handle=handle):
            return entry.location.resolve_handle(handle)

    @precondition(lambda self: bool(self.completed))
    @rule(data=st.data(), pickled=st.booleans(), spelling=st.sampled_from(["dir", "dir/"]))
    def restore(self, data: Any, pickled: bool, spelling: str) -> None:
        pointer = data.draw(st.sampled_from(list(self.completed)), label="pointer")
        entry = self.completed[pointer]
        spelled = pointer if spelling == "dir" else pointer.rstrip("/") + "/"
        note(f"restore {spelled} through a fresh{' pickled' if pickled else ''} storage")
        self.last = ("DIS-3", f"restore {spelled}")
        storage = self._fresh_storage(pickled)
        clause = self.moved_clause if entry.moved and self.moved_clause else "PTR-1"
        if spelling != "dir":
            if clause != "PTR-1":  # the moved savepoint resolves as spelled first (SAV-7)
                with self._step(clause, "resolve_checkpoint", pointer=pointer):
                    storage.resolve_checkpoint(pointer)
            clause = "PTR-2"  # then with the trailing '/' (PTR-2's own spelling)
        with self._step(clause, "resolve_checkpoint", pointer=spelled):
            location = storage.resolve_checkpoint(spelled)
        self._check(
            location.external_pointer == pointer,
            "PTR-3",
            "external_pointer of a restore",
            pointer=spelled,
            got=location.external_pointer,
        )
        with self._step("MD-4", "read the metadata", pointer=spelled):
            metadata = read_handle(location.metadata_handle)
        self._check(metadata == entry.metadata, "MD-4", "metadata bytes", pointer=spelled)
        with self._step("SER-2", "unpickle the handles from the metadata"):
            handles = pickle.loads(metadata)
        clause = self.moved_clause if entry.moved and self.moved_clause else "STR-1"
        for handle, (_, blob, scope) in zip(handles, entry.handles, strict=True):
            with self._step(clause, "read a restored handle", pointer=spelled, handle=handle):
                got = read_handle(location.resolve_handle(handle))
            self._check(got == blob, clause, f"restored {scope} state", handle=handle)

    @precondition(lambda self: bool(self.disposed))
    @rule(data=st.data())
    def resolve_disposed(self, data: Any) -> None:
        pointer = data.draw(st.sampled_from(self.disposed), label="disposed pointer")
        note(f"resolve disposed {pointer}")
        try:
            self._fresh_storage().resolve_checkpoint(pointer)
        except FileNotFoundError:
            return
        except Exception as exc:
            raise ClauseFailure(
                ("DIS-2",),
                self._msg("DIS-2", "resolve_checkpoint after dispose or move", pointer=pointer)
                + f"\nexpected FileNotFoundError, got {type(exc).__name__}: {exc}",
            ) from exc
        raise ClauseFailure(
            ("DIS-2",),
            self._msg("DIS-2", "resolve_checkpoint after dispose or move", pointer=pointer)
            + "\nexpected FileNotFoundError, but it resolved",
        )

    # ------------------------------------------------------------------ invariants

    def _live_files(self) -> list[tuple[str, str]]:
        live = [(h, "orphaned shared state") for h, _ in self.orphans]
        live += [(h, "task-owned state") for h, _ in self.task_owned]
        if self.pending is not None:
            live += [(h, "state of the checkpoint in progress") for h, _, _ in self.pending.written]
        for entry in self.completed.values():
            live += [
                (self._own(entry, h), f"state of {entry.pointer}") for h, _, _ in entry.handles
            ]
        return [(file_path(h), what) for h, what in live if file_path(h)]

    @invariant()
    def the_store_holds_what_the_model_holds(self) -> None:
        """Live state exists and removed state is gone (one listing of the sandbox per step)."""
        live = self._live_files()
        present = self.sandbox.existing([path for path, _ in live + self.removed])
        clause, operation = self.last
        for path, what in live:
            blame = "TOW-3" if what == "task-owned state" and clause == "DIS-3" else clause
            self._check(path in present, blame, f"{what} is gone after {operation}", file=path)
        for path, clause in self.removed:
            self._check(
                path not in present,
                clause,
                "state that disposal or discard removed is still there",
                file=path,
            )

    def teardown(self) -> None:
        if self.pending is not None:
            self.pending.location.dispose_on_failure()


class MovingSavepointsMachine(CheckpointMachine):
    moved_clause = "SAV-7"


@pytest.mark.clause(*LIFECYCLE_CLAUSES)
def test_checkpoint_lifecycle(sandbox, target):
    """PTR-1, PTR-2, PTR-3, STR-1, STR-3, TOW-1, MD-4, MD-7, DIS-1, DIS-2, DIS-3, DIS-5, TOW-3,
    TOW-4, SER-1, SER-2, SER-3: checkpoints written, finalized, aborted with dispose_on_failure,
    disposed and resolved through a fresh storage, checked against a model.

    Where savepoints is claimed the model takes savepoints too (as checkpoints: finalized,
    resolved and disposed); what is checked of them is what the clauses above say of every
    finalized checkpoint.
    """
    run_state_machine_as_test(
        lambda: CheckpointMachine(sandbox, target),
        settings=capped(15, stateful_step_count=25),
    )


@pytest.mark.clause("SAV-7", *LIFECYCLE_CLAUSES)
def test_lifecycle_with_moved_savepoints(sandbox, target):
    """SAV-7, PTR-1, PTR-2, PTR-3, STR-1, STR-3, TOW-1, MD-4, MD-7, DIS-1, DIS-2, DIS-3, DIS-5,
    TOW-3, TOW-4, SER-1, SER-2, SER-3: the same model, with a savepoint directory moved as a
    whole between restores."""
    run_state_machine_as_test(
        lambda: MovingSavepointsMachine(sandbox, target),
        settings=capped(10, stateful_step_count=25),
    )

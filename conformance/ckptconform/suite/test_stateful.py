"""A stateful test: checkpoints, aborts, disposals, savepoints and restores against a model.

The machine drives one job on one storage (coordinator and worker roles) and keeps an
independent oracle: for every live pointer, the metadata bytes and the bytes of every handle
written for it. Restores always go through a FRESH storage from ``make_storage`` (or a pickled
copy), so nothing the writer holds in memory can leak into a restore. The metadata of each
checkpoint is a pickle of its handles, as a caller that keeps its handles in ``_metadata`` writes
it; the restore reads them back through ``resolve_handle``.

Shared-scope state follows Flink's ownership rule: it belongs to the checkpoint that wrote it
until that checkpoint is disposed or aborted; then it is an orphan that disposal must not have
touched, and that the machine may discard itself (as Flink's shared state registry does).
Capability-dependent rules (savepoints, moving savepoints) are gated with ``precondition``.
"""

from __future__ import annotations

import pickle
import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import note
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from ckptconform.suite._driver import (
    EXCLUSIVE,
    SHARED,
    JobDriver,
    expect_error,
    fail_message,
    file_path,
    join,
    payload,
    read_handle,
    same_location,
    write_state,
)
from ckptconform.suite._strategies import capped, chunkings
from ckptconform.suite.test_sav import move_tree

SIZES = st.integers(min_value=0, max_value=300)


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


class CheckpointMachine(RuleBasedStateMachine):
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
        self.removed: list[Any] = []  # handles whose files must be gone
        note(f"storage options: {self.options}, job {self.drv.job_id}")

    def _msg(self, clause: str, operation: str, **inputs: Any) -> str:
        return fail_message(clause, operation, self.sandbox, **inputs)

    # ------------------------------------------------------------------ checkpoints

    @precondition(lambda self: self.pending is None)
    @rule()
    def begin_checkpoint(self) -> None:
        cid, self.next_id = self.next_id, self.next_id + 1
        location = self.drv.location(cid)
        factory = self.drv.worker(cid, pickle.loads(pickle.dumps(location.location_reference)))
        self.pending = Pending(cid, location, factory)
        note(f"begin checkpoint {cid}")

    @precondition(lambda self: self.pending is not None)
    @rule(size=SIZES, scope=st.sampled_from([EXCLUSIVE, SHARED]), data=st.data())
    def write_state(self, size: int, scope: Any, data: Any) -> None:
        assert self.pending is not None
        sizes = data.draw(chunkings(size), label="write sizes")
        blob = payload(size, seed=len(self.pending.written) + 31 * self.pending.checkpoint_id)
        handle = write_state(self.pending.factory, blob, scope, sizes)
        note(
            f"checkpoint {self.pending.checkpoint_id}: {scope} state of {size} bytes -> {handle!r}"
        )
        if size == 0:
            assert handle is None, self._msg("STR-3", "empty state", handle=handle)
            return
        assert read_handle(handle) == blob, self._msg(
            "STR-1", "write + read", size=size, sizes=sizes
        )
        self.pending.written.append((handle, blob, str(scope)))

    @rule(size=SIZES.filter(bool))
    def write_task_owned(self, size: int) -> None:
        blob = payload(size, seed=1000 + len(self.task_owned))
        handle = self.drv.task_owned(blob)
        note(f"task-owned state of {size} bytes -> {handle!r}")
        self.task_owned.append((handle, blob))

    @precondition(lambda self: self.pending is not None)
    @rule()
    def finalize(self) -> None:
        assert self.pending is not None
        pending, self.pending = self.pending, None
        metadata = pickle.dumps([h for h, _, _ in pending.written])
        completed = self.drv.finalize(pending.location, metadata)
        pointer = completed.external_pointer
        note(f"finalize checkpoint {pending.checkpoint_id} -> {pointer}")
        assert pointer not in self.completed, self._msg("PTR-1", "pointer reused", pointer=pointer)
        self.completed[pointer] = Completed(pointer, metadata, pending.written, completed)

    @precondition(lambda self: self.pending is not None)
    @rule()
    def abort(self) -> None:
        assert self.pending is not None
        pending, self.pending = self.pending, None
        note(f"abort checkpoint {pending.checkpoint_id}")
        pending.location.dispose_on_failure()
        for handle, blob, scope in pending.written:
            if scope == str(SHARED):
                self.orphans.append((handle, blob))
            elif file_path(handle):
                self.removed.append(handle)

    @precondition(lambda self: bool(self.completed))
    @rule(data=st.data(), via_restore=st.booleans())
    def dispose(self, data: Any, via_restore: bool) -> None:
        pointer = data.draw(st.sampled_from(sorted(self.completed)), label="pointer")
        entry = self.completed.pop(pointer)
        note(f"dispose {pointer} ({'resolved anew' if via_restore else 'as finalized, pickled'})")
        if via_restore:
            location = self.drv.fresh_storage().resolve_checkpoint(pointer)
        else:
            location = pickle.loads(pickle.dumps(entry.location))
        location.dispose_storage_location()
        self.disposed.append(pointer)
        for handle, blob, scope in entry.handles:
            if scope == str(SHARED) and not entry.savepoint:
                self.orphans.append((handle, blob))
            elif file_path(location.resolve_handle(handle)):
                self.removed.append(location.resolve_handle(handle))

    @precondition(lambda self: bool(self.orphans))
    @rule(data=st.data())
    def discard_orphan(self, data: Any) -> None:
        index = data.draw(st.integers(0, len(self.orphans) - 1), label="orphan")
        handle, _ = self.orphans.pop(index)
        note(f"discard orphaned shared state {handle!r}")
        handle.discard_state()
        if file_path(handle):
            self.removed.append(handle)

    @precondition(lambda self: bool(self.task_owned))
    @rule(data=st.data())
    def discard_task_owned(self, data: Any) -> None:
        index = data.draw(st.integers(0, len(self.task_owned) - 1), label="task-owned")
        handle, _ = self.task_owned.pop(index)
        note(f"discard task-owned state {handle!r}")
        handle.discard_state()
        if file_path(handle):
            self.removed.append(handle)

    # ------------------------------------------------------------------ savepoints

    @precondition(lambda self: "savepoints" in self.caps)
    @rule(sizes=st.lists(SIZES.filter(bool), max_size=3), to_target=st.booleans())
    def savepoint(self, sizes: list[int], to_target: bool) -> None:
        target_dir = join(self.base, "sp-target") if to_target else None
        cid, self.next_id = self.next_id, self.next_id + 1
        location = self.drv.access.initialize_location_for_savepoint(cid, target_dir)
        factory = self.drv.worker(cid, location.location_reference)
        written = [
            (
                write_state(factory, payload(n, seed=n + cid), EXCLUSIVE),
                payload(n, n + cid),
                str(EXCLUSIVE),
            )
            for n in sizes
        ]
        metadata = pickle.dumps([h for h, _, _ in written])
        completed = self.drv.finalize(location, metadata)
        note(f"savepoint {cid} to {target_dir or 'the default'} -> {completed.external_pointer}")
        self.completed[completed.external_pointer] = Completed(
            completed.external_pointer, metadata, written, completed, savepoint=True
        )

    @precondition(
        lambda self: (
            "relocatable-savepoints" in self.caps
            and any(c.savepoint for c in self.completed.values())
        )
    )
    @rule(data=st.data())
    def move_savepoint(self, data: Any) -> None:
        pointer = data.draw(
            st.sampled_from(sorted(p for p, c in self.completed.items() if c.savepoint)),
            label="savepoint",
        )
        new = join(self.base, "moved", uuid.uuid4().hex[:8], pointer.rstrip("/").rsplit("/", 1)[1])
        note(f"move savepoint {pointer} -> {new}")
        move_tree(self.sandbox, pointer, new)
        entry = self.completed.pop(pointer)
        location = self.drv.fresh_storage().resolve_checkpoint(new)
        entry.pointer, entry.location = location.external_pointer, location
        assert same_location(self.sandbox, entry.pointer, new), self._msg(
            "SAV-7", "resolve moved savepoint", pointer=new, got=entry.pointer
        )
        self.completed[entry.pointer] = entry
        self.disposed.append(pointer)

    # ------------------------------------------------------------------ restores

    @precondition(lambda self: bool(self.completed))
    @rule(data=st.data(), pickled=st.booleans(), spelling=st.sampled_from(["dir", "dir/"]))
    def restore(self, data: Any, pickled: bool, spelling: str) -> None:
        pointer = data.draw(st.sampled_from(sorted(self.completed)), label="pointer")
        entry = self.completed[pointer]
        storage = self.drv.fresh_storage()
        if pickled:
            storage = pickle.loads(pickle.dumps(storage))
        spelled = pointer if spelling == "dir" else pointer.rstrip("/") + "/"
        note(f"restore {spelled} through a fresh{' pickled' if pickled else ''} storage")
        location = storage.resolve_checkpoint(spelled)
        msg = self._msg("PTR-1", "restore", pointer=spelled)
        assert location.external_pointer == pointer, msg + f"\ngot {location.external_pointer}"
        metadata = read_handle(location.metadata_handle)
        assert metadata == entry.metadata, msg + "\nmetadata differs"
        handles = pickle.loads(metadata)
        for handle, (_, blob, scope) in zip(handles, entry.handles, strict=True):
            got = read_handle(location.resolve_handle(handle))
            assert got == blob, msg + f"\n{scope} handle {handle!r} reads other bytes"

    @precondition(lambda self: bool(self.disposed))
    @rule(data=st.data())
    def resolve_disposed(self, data: Any) -> None:
        pointer = data.draw(st.sampled_from(self.disposed), label="disposed pointer")
        note(f"resolve disposed {pointer}")
        expect_error(
            FileNotFoundError,
            "DIS-2",
            "resolve_checkpoint after dispose or move",
            lambda: self.drv.fresh_storage().resolve_checkpoint(pointer),
            self.sandbox,
            pointer=pointer,
        )

    # ------------------------------------------------------------------ invariants

    @invariant()
    def state_nobody_disposed_is_readable(self) -> None:
        for handle, blob in self.orphans:
            assert read_handle(handle) == blob, self._msg(
                "DIS-3", "orphaned shared state after disposals", handle=handle
            )
        for handle, blob in self.task_owned:
            assert read_handle(handle) == blob, self._msg(
                "TOW-3", "task-owned state after disposals", handle=handle
            )

    @invariant()
    def removed_state_is_gone(self) -> None:
        for handle in self.removed:
            assert not self.sandbox.exists(file_path(handle)), self._msg(
                "DIS-1", "state that disposal or discard removed is still there", handle=handle
            )

    def teardown(self) -> None:
        if self.pending is not None:
            self.pending.location.dispose_on_failure()


@pytest.mark.clause("STR-1", "PTR-1", "PTR-3", "MD-4", "DIS-1", "DIS-2", "DIS-3", "TOW-3")
def test_checkpoint_lifecycle(sandbox, target):
    """PTR-1: a model-checked job: checkpoints, aborts, disposals, savepoints, fresh restores."""
    run_state_machine_as_test(
        lambda: CheckpointMachine(sandbox, target),
        settings=capped(15, stateful_step_count=25),
    )

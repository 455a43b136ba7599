"""Store methods for experiments and their arms: identity, control signals, runner claims, the grade batch."""

from __future__ import annotations

import difflib
import logging
import os
import socket
import sqlite3
import time
import uuid
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from abbench import _actions as do
from abbench.errors import Action, ExperimentError, NotFoundError
from abbench.store._base import current_user, dumps, inserted_id, loads, now_iso
from abbench.store._experiment import (
    CONTROLS,
    HEARTBEAT_STALE_S,
    STATUSES,
    TRY_TAG,
    Arm,
    Experiment,
    _arm,
    _pid_alive,
    _spec_json,
    arm_snapshots,
)
from abbench.store._noun import Noun
from abbench.store._settings import RunSettings

if TYPE_CHECKING:
    from abbench.store._spec import StoredExperimentSpec
    from abbench.store._store import Store

log = logging.getLogger(__name__)

IS_TRY_SQL = f"EXISTS (SELECT 1 FROM json_each(e.tags) WHERE json_each.value = '{TRY_TAG}')"
"""SQL true for a try experiment `e` (its tags hold ``try``)."""


_EXPERIMENT_COLUMNS = (
    "e.id, e.name, e.owner, e.skill, e.skill_version, e.dataset_id, d.fingerprint, e.profile_id, e.spec, "
    "e.rounds, e.status, e.control, e.batch_id, e.priority, e.tags, e.gate, e.parent_id, e.created_at, "
    "e.updated_at, e.created_by, e.runner_pid, e.runner_host, e.heartbeat_at, "
    "e.pause_reason, e.stop_reason, e.executor, e.runner_origin, e.halt, e.queued"
)


def _chunks(values: Sequence[Any], size: int = 900) -> Iterator[list[Any]]:
    """`values` in lists of at most `size`: the parameters of one ``IN (...)`` within SQLite's limit."""
    for start in range(0, len(values), size):
        yield list(values[start : start + size])


def _like_prefix(text: str) -> str:
    """A LIKE pattern matching values that start with `text` (its % and _ taken literally)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


class Experiments(Noun):
    """``store.experiments``: reading and writing experiments and arms, and the runner's claim on one."""

    def __init__(self, store: Store) -> None:
        super().__init__(store)
        # (name asked for, the experiments it matched): said once per store (`_note_same_name`)
        self._same_name_noted: set[tuple[str, tuple[int, ...]]] = set()

    def insert(
        self,
        *,
        name: str,
        owner: str,
        skill: str,
        skill_version: str,
        dataset_id: int,
        profile_id: int | None,
        spec: dict[str, Any],
        rounds: int,
        priority: int,
        tags: list[str],
        gate: Any,
        arms: list[dict[str, Any]],
        parent_id: int | None = None,
    ) -> int:
        """Write an experiment and its arms (inside the caller's transaction); return its id.

        Raises:
            ExperimentError: the (owner, skill, skill version, name) identity is taken.
        """
        now = now_iso()
        taken = self._store.query_one(
            "SELECT id FROM experiments WHERE owner=? AND skill=? AND skill_version=? AND name=?",
            (owner, skill, skill_version, name),
        )
        if taken:
            raise ExperimentError(
                f"experiment {name!r} already exists for owner {owner!r}, skill {skill or '(none)'!r} "
                f"version {skill_version or '(none)'!r} (#{taken[0]}); choose another name, or reuse it "
                "(--reuse / reuse=True) to continue that one"
            )
        with self._store.transaction() as conn:
            cur = conn.execute(
                "INSERT INTO experiments (name, owner, skill, skill_version, dataset_id, profile_id, spec, rounds, "
                "priority, tags, gate, parent_id, created_at, updated_at, created_by) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    name,
                    owner,
                    skill,
                    skill_version,
                    dataset_id,
                    profile_id,
                    dumps(_spec_json(spec)),
                    rounds,
                    priority,
                    dumps(tags),
                    dumps(gate),
                    parent_id,
                    now,
                    now,
                    current_user(),
                ),
            )
            exp_id = inserted_id(cur)
            conn.executemany(
                "INSERT INTO arms (experiment_id, name, position, agent, model, snapshot, params) "
                "VALUES (?,?,?,?,?,?,?)",
                [
                    (
                        exp_id,
                        a["name"],
                        i,
                        a["agent"],
                        a.get("model"),
                        a.get("snapshot"),
                        dumps(a.get("params") or {}),
                    )
                    for i, a in enumerate(arms)
                ],
            )
        return exp_id

    def find(self, *, owner: str, skill: str, skill_version: str, name: str) -> Experiment | None:
        """The experiment with exactly this identity, or None."""
        row = self._store.query_one(
            "SELECT id FROM experiments WHERE owner=? AND skill=? AND skill_version=? AND name=?",
            (owner, skill, skill_version, name),
        )
        return self.get(row[0]) if row else None

    def get(self, ref: int | str | Experiment) -> Experiment:
        """An experiment by id (``12`` or ``#12``), name, or ``NAME@<skill version>``.

        The one place an experiment is looked up by what a person typed (every command and the Python
        API come here). A name shared by several experiments (the same definition re-run after its
        skill changed: owner + skill + skill version + name is the identity) resolves to the latest,
        and a note logged at WARNING names the others and how to pick one (``NAME@<skill version>``,
        a prefix of it, or ``#ID``).

        Raises:
            NotFoundError: nothing matches (the message offers the closest names).
        """
        if isinstance(ref, Experiment):
            ref = ref.id
        text = str(ref).strip()
        select = f"SELECT {_EXPERIMENT_COLUMNS} FROM experiments e JOIN datasets d ON d.id = e.dataset_id "
        rows: list[sqlite3.Row] = []
        if text.lstrip("#").isdigit():
            rows = self._store.query(select + "WHERE e.id = ?", (int(text.lstrip("#")),))
            if not rows and text.startswith("#"):
                raise NotFoundError(
                    f"no experiment {text}; `",
                    do.list_experiments(),
                    "` lists them",
                    kind="experiment",
                    name=text,
                )
            if rows:
                return self._experiments_from_rows(rows[:1])[0]
        rows = self._store.query(select + "WHERE e.name = ? ORDER BY e.id DESC", (text,))
        if not rows and "@" in text:
            rows = self._by_skill_version(select, text)
        if not rows:
            raise NotFoundError(
                f"no experiment named {text!r}; ", *self._experiment_hint(text), kind="experiment", name=text
            )
        if len(rows) > 1:
            self._note_same_name(text, rows)
        return self._experiments_from_rows(rows[:1])[0]

    def _by_skill_version(self, select: str, text: str) -> list[sqlite3.Row]:
        """Rows for ``NAME@VERSION`` (a prefix of the skill version, ``SKILL@VERSION``, or ``none``), newest first."""
        rows: list[sqlite3.Row] = []
        for at in (i for i, ch in enumerate(text) if ch == "@"):
            name, version = text[:at], text[at + 1 :].strip()
            skill, _, version = version.rpartition("@")
            if not name or not version:
                continue
            params: tuple[str, ...] = ()
            if version.lower() in ("none", "-"):  # the experiments whose arms have no skill
                cond = "e.skill_version = ''"
            else:
                cond, params = "e.skill_version LIKE ? ESCAPE '\\'", (_like_prefix(version),)
            if skill:
                cond += " AND e.skill = ?"
                params = (*params, skill)
            rows += self._store.query(
                select + f"WHERE e.name = ? AND {cond} ORDER BY e.id DESC", (name, *params)
            )
        return sorted({r[0]: r for r in rows}.values(), key=lambda r: -r[0])

    def _experiment_hint(self, text: str) -> tuple[str | Action, ...]:
        """The closest stored names ("did you mean"), else where to look."""
        names = [r[0] for r in self._store.query("SELECT DISTINCT name FROM experiments ORDER BY name")]
        if not names:
            return ("the store has no experiments yet; create one with `", do.create_experiment(), "`")
        close = difflib.get_close_matches(text.partition("@")[0], names, n=3, cutoff=0.6)
        if close:
            return (f"did you mean {' or '.join(map(repr, close))}? `", do.list_experiments(), "` lists them")
        return ("`", do.list_experiments(), "` lists them")

    def _note_same_name(self, text: str, rows: list[sqlite3.Row]) -> None:
        """Say once per store and name that `text` picked the latest of several experiments, and how to pick another."""
        noted = self._same_name_noted
        key = (text, tuple(r[0] for r in rows))
        if key in noted:
            return
        noted.add(key)

        def version(r: sqlite3.Row) -> str:
            return f"{r[3]}@{r[4]}" if r[3] else "no skill"

        latest, others = rows[0], rows[1:]
        name = latest[1]
        log.warning(
            "%d experiments are named %r; using the latest, #%d (%s, owner %s, created %s). The others: %s. "
            "Pick one as %s@<skill version> or #ID",
            len(rows),
            name,
            latest[0],
            version(latest),
            latest[2],
            latest[17],
            "; ".join(
                f"#{r[0]} ({version(r)}, owner {r[2]}, created {r[17]}): {name}@{r[4][:8] or 'none'}"
                for r in others
            ),
            name,
        )

    def handle(self, exp: Experiment) -> str:
        """The shortest text that names `exp` in a command: its name when no other has it, else ``#id``."""
        (n,) = self._store.conn.execute(
            "SELECT COUNT(*) FROM experiments WHERE name = ?", (exp.name,)
        ).fetchone()
        return exp.name if n == 1 else f"#{exp.id}"

    def all(self, *, since: str | None = None, include_tries: bool = False) -> list[Experiment]:
        """Every experiment, newest first (created at or after `since`, an ISO date, when given).

        Tries (`abbench try`, `try_input`, tagged ``try``) are left out unless `include_tries`.
        """
        sql = f"SELECT {_EXPERIMENT_COLUMNS} FROM experiments e JOIN datasets d ON d.id = e.dataset_id"
        where: list[str] = []
        params: tuple[str, ...] = ()
        if since:
            where.append("e.created_at >= ?")
            params = (since,)
        if not include_tries:
            where.append(f"NOT {IS_TRY_SQL}")
        if where:
            sql += " WHERE " + " AND ".join(where)
        return self._experiments_from_rows(self._store.query(sql + " ORDER BY e.id DESC", params))

    def _experiments_from_rows(self, rows: Sequence[sqlite3.Row]) -> list[Experiment]:
        """The experiments of these rows, with their arms and their skills' names and draft marks read in
        one query each for them all (not two queries an experiment: a list of thousands reads them)."""
        ids = [int(r[0]) for r in rows]
        arms: dict[int, list[sqlite3.Row]] = {i: [] for i in ids}
        for chunk in _chunks(ids):
            for a in self._store.query(
                "SELECT id, name, position, agent, model, snapshot, params, experiment_id FROM arms "
                f"WHERE experiment_id IN ({','.join('?' * len(chunk))}) ORDER BY experiment_id, position",
                chunk,
            ):
                arms[int(a[7])].append(a)
        definitions = [loads(r[8]) or {} for r in rows]
        settings = [RunSettings.from_json(d) for d in definitions]
        skills = self._skills(
            sorted(
                {h for i, s in zip(ids, settings, strict=True) for a in arms[i] for h in arm_snapshots(s, a)}
            )
        )
        return [
            self._experiment_from_row(r, d, s, tuple(_arm(s, a, skills) for a in arms[i]))
            for r, i, d, s in zip(rows, ids, definitions, settings, strict=True)
        ]

    def _skills(self, hashes: Sequence[str]) -> dict[str, tuple[str, bool]]:
        """The skill name and draft mark (hash → (name, draft)) of these snapshots, as the store has them
        now: a draft later taken again from a clean commit is no longer marked."""
        out: dict[str, tuple[str, bool]] = {}
        for chunk in _chunks(hashes):
            rows = self._store.query(
                f"SELECT hash, skill_name, draft FROM snapshots WHERE hash IN ({','.join('?' * len(chunk))})",
                chunk,
            )
            out.update({h: (name, bool(draft)) for h, name, draft in rows})
        return out

    @staticmethod
    def _experiment_from_row(
        r: sqlite3.Row, definition: dict[str, Any], settings: RunSettings, arms: tuple[Arm, ...]
    ) -> Experiment:
        return Experiment(
            id=r[0],
            name=r[1],
            owner=r[2],
            skill=r[3],
            skill_version=r[4],
            dataset_id=r[5],
            dataset=r[6],
            profile_id=r[7],
            definition=definition,
            settings=settings,
            rounds=r[9],
            status=r[10],
            control=r[11],
            batch_id=r[12],
            priority=r[13],
            tags=tuple(loads(r[14]) or ()),
            gate=loads(r[15]),
            parent_id=r[16],
            created_at=r[17],
            updated_at=r[18],
            created_by=r[19],
            arms=arms,
            runner_pid=r[20],
            runner_host=r[21],
            heartbeat_at=r[22],
            pause_reason=loads(r[23]),
            stop_reason=loads(r[24]),
            executor=loads(r[25]),
            runner_origin=r[26],
            halt=loads(r[27]),
            queued=loads(r[28]),
        )

    def set_spec(self, exp_id: int, spec: StoredExperimentSpec | dict[str, Any]) -> None:
        """Replace an experiment's stored definition.

        Only for additions that leave its identity and its runs as they are (a new grader, a budget); a
        different dataset, arm or round count is a new experiment (`clone_experiment`).
        """
        with self._store.transaction() as conn:
            conn.execute(
                "UPDATE experiments SET spec=?, updated_at=? WHERE id=?",
                (dumps(_spec_json(spec)), now_iso(), exp_id),
            )

    # -- control, status and the runner's claim ------------------------------------------------------

    def set_control(self, exp_id: int, control: str) -> None:
        """Ask whoever runs the experiment to ``run``, ``pause`` or ``cancel`` (seen within a second)."""
        if control not in CONTROLS:
            raise ExperimentError(f"unknown control {control!r}; choose one of {', '.join(CONTROLS)}")
        self._set(exp_id, "control", control)

    def get_control(self, exp_id: int) -> str:
        """The control state last asked for."""
        row = self._store.query_one("SELECT control FROM experiments WHERE id=?", (exp_id,))
        if row is None:
            raise NotFoundError(f"no experiment #{exp_id}")
        return str(row[0])

    def set_status(self, exp_id: int, status: str) -> None:
        """Record the experiment's status (created, running, paused, cancelled, finished, interrupted)."""
        if status not in STATUSES:
            raise ExperimentError(f"unknown status {status!r}")
        self._set(exp_id, "status", status)

    def _set(self, exp_id: int, column: str, value: Any) -> None:
        """Write one column of the experiment (a name of this module's, never a caller's), stamping the change."""
        with self._store.transaction() as conn:
            conn.execute(
                f"UPDATE experiments SET {column}=?, updated_at=? WHERE id=?", (value, now_iso(), exp_id)
            )

    def set_pause_reason(self, exp_id: int, reason: dict[str, Any] | None) -> None:
        """Record why the runner paused the experiment by itself (a budget reached), or clear it (None)."""
        self._set(exp_id, "pause_reason", None if reason is None else dumps(reason))

    def set_executor(self, exp_id: int, where: dict[str, Any] | None) -> None:
        """Record where the experiment's agents run now (None: the local executor)."""
        self._set(exp_id, "executor", None if where is None else dumps(where))

    def set_stop_reason(self, exp_id: int, reason: dict[str, Any] | None) -> None:
        """Record why the stopping rule stopped the experiment (its decision and figures), or clear it."""
        self._set(exp_id, "stop_reason", None if reason is None else dumps(reason))

    def set_halt(self, exp_id: int, halt: dict[str, Any] | None) -> None:
        """Record why the experiment's runner stopped before the work was done (see `Experiment.halt`)."""
        self._set(exp_id, "halt", None if halt is None else dumps(halt))

    def set_queued(self, exp_id: int, queued: dict[str, Any] | None) -> None:
        """Record the work a server's pool accepted for the experiment and has not started (or None:
        nothing is queued; see `Experiment.queued`)."""
        self._set(exp_id, "queued", None if queued is None else dumps(queued))

    def leave_queued(self, exp_id: int, why: str) -> bool:
        """Say why the work queued for the experiment was not started (`Experiment.queued` keeps it,
        with ``not_started``, until a pass claims the experiment); False when nothing is queued."""
        with self._store.transaction() as conn:
            cur = conn.execute(
                "UPDATE experiments SET queued=json_set(queued, '$.not_started', ?), updated_at=? "
                "WHERE id=? AND queued IS NOT NULL",
                (why, now_iso(), exp_id),
            )
            return cur.rowcount > 0

    def claim_runner(self, exp_id: int, origin: str | None = None, *, takes_queued: bool = False) -> bool:
        """Become the experiment's runner unless a live one holds it; True when claimed.

        A holder is dead when its heartbeat is stale, or at once when it ran on this host and its
        process is gone (a kill leaves a fresh heartbeat behind; restarting should not wait for it).
        A claim to execute gives the kind of process this is (`origin`: ``cli``, ``server``,
        ``python``), recorded in its place, and clears the last runner's halt: from now on, a runner
        that dies without a word was killed. A claim to grade or record (no `origin`) leaves both.
        A pass that does the experiment's work (`takes_queued`: it executes or grades) takes over
        what a server's pool had queued for it (`Experiment.queued`): from then on its halt says
        what became of it.
        """
        now = time.time()
        host = socket.gethostname()
        queued = ", queued=NULL" if takes_queued else ""
        with self._store.transaction() as conn:
            row = conn.execute(
                "SELECT runner_pid, runner_host, heartbeat_at FROM experiments WHERE id=?", (exp_id,)
            ).fetchone()
            if row is None:
                raise NotFoundError(f"no experiment #{exp_id}")
            pid, holder_host, beat = row
            alive = beat is not None and now - beat < HEARTBEAT_STALE_S
            if alive and holder_host == host and pid is not None and not _pid_alive(pid):
                alive = False
            if alive:
                return False
            if origin is None:
                conn.execute(
                    f"UPDATE experiments SET runner_pid=?, runner_host=?, heartbeat_at=?{queued} WHERE id=?",
                    (os.getpid(), host, now, exp_id),
                )
            else:
                conn.execute(
                    "UPDATE experiments SET runner_pid=?, runner_host=?, heartbeat_at=?, runner_origin=?, "
                    f"halt=NULL{queued} WHERE id=?",
                    (os.getpid(), host, now, origin, exp_id),
                )
            return True

    def beat_runner(self, exp_id: int) -> bool:
        """Refresh this process's runner claim on the experiment; False when it no longer holds it."""
        with self._store.transaction() as conn:
            cur = conn.execute(
                "UPDATE experiments SET heartbeat_at=? WHERE id=? AND runner_pid=? AND runner_host=?",
                (time.time(), exp_id, os.getpid(), socket.gethostname()),
            )
            return cur.rowcount > 0

    def release_runner(self, exp_id: int) -> None:
        """Give up the runner claim (at the end of a run)."""
        with self._store.transaction() as conn:
            conn.execute(
                "UPDATE experiments SET runner_pid=NULL, runner_host=NULL, heartbeat_at=NULL "
                "WHERE id=? AND runner_pid=? AND runner_host=?",
                (exp_id, os.getpid(), socket.gethostname()),
            )

    # -- the grade batch ------------------------------------------------------------------------------

    def ensure_batch(self, exp_id: int, conn: sqlite3.Connection | None = None) -> str:
        """The experiment's grade batch id, created by the first caller (seed, then persist).

        Safe under concurrency: every caller proposes an id, only the first UPDATE finds the column
        empty, and everyone reads back the one that was stored.
        """
        conn = conn or self._store.conn
        row = conn.execute("SELECT batch_id FROM experiments WHERE id=?", (exp_id,)).fetchone()
        if row is None:
            raise NotFoundError(f"no experiment #{exp_id}")
        if row[0]:
            return str(row[0])
        proposal = uuid.uuid4().hex[:16]
        if conn.in_transaction:
            conn.execute(
                "UPDATE experiments SET batch_id=? WHERE id=? AND batch_id IS NULL", (proposal, exp_id)
            )
        else:
            with self._store.transaction() as c:
                c.execute(
                    "UPDATE experiments SET batch_id=? WHERE id=? AND batch_id IS NULL", (proposal, exp_id)
                )
        return str(conn.execute("SELECT batch_id FROM experiments WHERE id=?", (exp_id,)).fetchone()[0])

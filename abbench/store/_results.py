"""Store methods that load an experiment's results for analysis: per run (columns) and per case (sums).

Analysis reads a lot of runs and few columns, so these loaders are built for speed: they read the
narrow ``runs_results`` index (never the wide rows with their raw outputs) in index order, turn SQL
NULLs into NaN inside SQLite (so numpy converts each column in one C loop), and take the case fields
(id, domain, gold) from the ``cases`` table once per case rather than once per run.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING

from abbench import _actions as do
from abbench._memo import Memo
from abbench.errors import NotFoundError
from abbench.store._noun import Noun
from abbench.store._reads import in_asked_order, keep_read, read_in_snapshot
from abbench.store._run_columns import FAILED, PASSED
from abbench.store._run_reader import _int_list, _objects, _plain_cursor, _RunReader, _split_texts
from abbench.store._run_table import CaseFields, RunTable, _empty_table
from abbench.store.bulk._case_outcomes import CaseOutcomes
from abbench.store.bulk._outcomes import _SUM_NAMES, KEPT_CODES, _case_sums, _read_sums

if TYPE_CHECKING:
    import numpy as np


_FIELDS: Memo[tuple[np.ndarray, list[np.ndarray]]] = Memo(4)
"""The latest datasets' case fields (RunResults._dataset_fields`), each with the store's state it was
read in."""


class RunResults(Noun):
    """Loading an experiment's results for metrics and comparisons (part of ``store.runs``)."""

    def _arm_ids(self, exp_id: int, arms: Sequence[str] | None) -> tuple[list[int], list[str]]:
        rows = self._store.query(
            "SELECT id, name FROM arms WHERE experiment_id=? ORDER BY position", (exp_id,)
        )
        if not rows:
            if self._store.query_one("SELECT 1 FROM experiments WHERE id=?", (exp_id,)) is None:
                raise NotFoundError(f"no experiment #{exp_id}; `", do.list_experiments(), "` lists them")
            return [], []
        if arms is None:
            return [r[0] for r in rows], [r[1] for r in rows]
        by_name = {r[1]: r[0] for r in rows}
        unknown = [a for a in arms if a not in by_name]
        if unknown:
            raise NotFoundError(
                f"experiment #{exp_id} has no arm {', '.join(map(repr, unknown))}; its arms: "
                + ", ".join(by_name)
            )
        return [by_name[a] for a in arms], list(arms)

    def case_fields(
        self, exp_id: int, case_idx: Sequence[int] | None = None, *, expected: bool = True
    ) -> CaseFields:
        """Id, domain and gold of the cases an experiment runs (or of the given dataset positions).

        Args:
            exp_id: The experiment.
            case_idx: Only these dataset positions (default: every case the experiment runs).
            expected: Also read the gold (False leaves it None: comparisons do not need it).
        """
        import numpy as np

        row = self._store.query_one("SELECT dataset_id FROM experiments WHERE id=?", (exp_id,))
        if row is None:
            raise NotFoundError(f"no experiment #{exp_id}; `", do.list_experiments(), "` lists them")
        cursor = _plain_cursor(self._store.conn)
        if case_idx is None:
            # Concatenated by SQLite: a hundred thousand positions in one value, not a row each.
            wanted = _int_list(
                cursor.execute(
                    "SELECT group_concat(case_idx) FROM (SELECT DISTINCT case_idx FROM runs WHERE experiment_id=?)",
                    (exp_id,),
                ).fetchone()[0]
            )
        else:
            wanted = np.asarray(case_idx, dtype=np.int64)
        # return_index takes numpy's sorting path: the plain call hashes, 10× slower on 100,000 cases
        wanted = np.unique(wanted, return_index=True)[0]
        idx, texts = self._dataset_fields(cursor, row[0])
        if not expected:
            texts = [texts[0], texts[1], np.full(idx.size, None, dtype=object)]
        keep = np.isin(idx, wanted)
        if keep.sum() != wanted.size:
            missing = np.setdiff1d(wanted, idx)
            raise NotFoundError(
                f"experiment #{exp_id} has runs for case positions missing from its dataset "
                f"({', '.join(map(str, missing[:5]))}); the dataset was changed under the store"
            )
        return CaseFields(idx[keep], texts[0][keep], texts[1][keep], texts[2][keep])

    def _dataset_fields(self, cursor: sqlite3.Cursor, dataset_id: int) -> tuple[np.ndarray, list[np.ndarray]]:
        """Position, then id, domain and gold of every case of a dataset, kept while nothing is written
        (`_FIELDS`): the results widget's figures and its comparison both read them."""
        state = self._store.state_stamp()
        key = (str(self._store.db_path), dataset_id)
        if state.in_transaction:
            # What is read inside a transaction is kept only when it is a snapshot of `read_in_snapshot`
            # that nobody wrote beside (`keep_read`): metrics read the fields inside theirs.
            fields = _read_dataset_fields(cursor, dataset_id)
            keep_read(_FIELDS, key, lambda: fields)
            return fields
        return _FIELDS.get(
            key,
            state,
            lambda: _read_dataset_fields(cursor, dataset_id),
            same=lambda kept, now: bool(kept.same(now)),
        )

    def table(self, exp_id: int, *, arms: Sequence[str] | None = None, text: bool = False) -> RunTable:
        """An experiment's runs as numpy columns (see `RunTable`), ordered by arm, case and round.

        Everything is read in one read transaction, so the columns agree with each other even while
        a runner is writing.

        Args:
            exp_id: The experiment's id.
            arms: Only these arms, in this order (default: every arm, in the experiment's order).
            text: Also load the heavy columns (reason, evidence references, raw output, ...).

        Raises:
            NotFoundError: no such experiment or arm.
        """

        arm_ids, names = self._arm_ids(exp_id, arms)
        if not arm_ids:
            return _empty_table(exp_id, tuple(names), text)
        table = read_in_snapshot(
            self._store.conn,
            lambda c: self._read_runs(c, exp_id, arm_ids, tuple(names), text),
            self._store.state_stamp,
        )
        if table is None:
            return _empty_table(exp_id, tuple(names), text)
        return in_asked_order(table, arm_ids)

    def _read_runs(
        self, conn: sqlite3.Cursor, exp_id: int, arm_ids: list[int], names: tuple[str, ...], text: bool
    ) -> RunTable | None:
        import numpy as np

        reader = _RunReader(conn, exp_id, arm_ids)
        n, first_round, last_round = reader.count()
        if not n:
            return None
        cases = self.case_fields(exp_id)
        run_id, arm_id, case_idx, rnd = reader.keys(n, cases, first_round, last_round)
        by_id = sorted(arm_ids)
        position = {a: i for i, a in enumerate(arm_ids)}
        arm_index = np.asarray([position[a] for a in by_id], dtype=np.int64)[np.searchsorted(by_id, arm_id)]
        outcome, state = reader.outcomes()
        score, confidence, cost, input_tokens, output_tokens, latency = reader.numbers(n)
        prediction, flags = reader.predictions_and_flags(n)
        at = cases.positions(case_idx)
        return RunTable(
            experiment_id=exp_id,
            arms=names,
            run_id=run_id,
            arm_index=arm_index,
            arm_id=arm_id,
            case_idx=case_idx,
            case_id=cases.case_id[at],
            round=rnd,
            domain=cases.domain[at],
            expected=cases.expected[at],
            outcome=outcome,
            state=state,
            failure_type=reader.failure_types(n, arm_id, case_idx, rnd),
            passed=np.where(outcome == PASSED, 1.0, np.where(outcome == FAILED, 0.0, np.nan)),
            score=score,
            prediction=prediction,
            confidence=confidence,
            cost=cost,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            tokens=input_tokens + output_tokens,
            latency_ms=latency,
            evidence_cited=(flags & 1).astype(bool),
            read_file=(flags & 2).astype(bool),
            read_section=(flags & 4).astype(bool),
            read_skill=(flags & 6).astype(bool),
            text=reader.texts() if text else {},
        )

    def case_outcomes(
        self, exp_id: int, arm_ids: Sequence[int] | None = None, *, scores: bool = True
    ) -> CaseOutcomes:
        """Per (arm, case) sums of an experiment's runs: outcome counts, cost, latency, tokens, scores.

        Finished runs are summed from the ``runs_results`` index alone (a million runs come back as a
        few hundred thousand rows of sums, which is what paired statistics need); runs not finished yet
        are read from the table and added in. Right after `load_run_flags` read the arms' runs, with
        nothing written since, what their codes count is taken from that read (`RunCodes`), and only
        the sums no code carries are read.

        Args:
            exp_id: The experiment's id.
            arm_ids: Only these arms (default: every arm).
            scores: Also sum the graded scores (False leaves ``scored``/``score``/``score_sq`` at 0: a
                pass/fail comparison does not need them, and three fewer sums make the query faster).
        """
        counted = self._counted_outcomes(exp_id, arm_ids, scores)
        if counted is not None:
            return counted
        names = _SUM_NAMES if scores else _SUM_NAMES[:-3]
        finished, rest = _read_sums(_plain_cursor(self._store.conn), exp_id, arm_ids, names)
        return _case_sums(exp_id, finished, rest)

    def _counted_outcomes(
        self, exp_id: int, arm_ids: Sequence[int] | None, scores: bool
    ) -> CaseOutcomes | None:
        """`case_outcomes` from the codes `load_run_flags` kept (`RunCodes`), counted per case, and the
        sums no code carries, read now; None when no codes of these arms are kept for the store's state,
        or when the store was written while the sums were read."""
        state = self._store.state_stamp()
        if state.in_transaction:
            return None
        kept = KEPT_CODES.kept((str(self._store.db_path), exp_id), state, same=lambda a, b: bool(a.same(b)))
        if kept is None:
            return None
        counts = kept.counts.for_arms(self._arm_ids(exp_id, None)[0] if arm_ids is None else arm_ids)
        if counts is None:
            return None
        # A sum of a column no run has is what the query gives for it (`_read_sums`): only the others
        # are read, by the same query over the same rows in the same order, so they are the same sums.
        known = {
            "cost": counts.cost_known,
            "latency": bool(counts.executed.any()),
            "tokens": counts.tokens_known,
        }
        runs_of = {"cost": "cost_runs", "latency": "latency_runs", "tokens": "token_runs"}
        names = [n for name, some in known.items() if some for n in (name, runs_of[name])]
        if scores and counts.fractional:  # else the score sums are counts of scores of 0 and 1
            names += ["scored", "score", "score_sq"]
        if not names:
            return counts.outcomes_with(exp_id, None, scores)
        groups = counts.groups()
        finished, rest = read_in_snapshot(
            self._store.conn, lambda c: _read_sums(c, exp_id, arm_ids, names, groups)
        )
        if not self._store.state_stamp().same(state) or finished is None or rest is None:
            return None  # written meanwhile: the sums may not be the counts'
        return counts.outcomes_with(exp_id, _case_sums(exp_id, finished, rest), scores)


def _read_dataset_fields(cursor: sqlite3.Cursor, dataset_id: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """RunResults._dataset_fields` read from the store."""
    # Three concatenated columns instead of a row per case: a hundred thousand cases read in one go.
    ids, joined_ids, joined_domains, joined_gold, n = cursor.execute(
        "SELECT group_concat(idx), group_concat(case_id, char(30)), "
        "group_concat(IFNULL(domain, char(29)), char(30)), "
        "group_concat(IFNULL(expected, char(29)), char(30)), count(*) "
        "FROM (SELECT idx, case_id, domain, expected FROM cases WHERE dataset_id=? ORDER BY idx)",
        (dataset_id,),
    ).fetchone()
    idx = _int_list(ids)
    split = [
        _split_texts(joined_ids, n),
        _split_texts(joined_domains, n, repeated=True),
        _split_texts(joined_gold, n, repeated=True),
    ]
    texts = [t for t in split if t is not None]
    if len(texts) < len(split):  # a field holds the separator itself: read row by row
        rows = cursor.execute(
            "SELECT case_id, domain, expected FROM cases WHERE dataset_id=? ORDER BY idx", (dataset_id,)
        ).fetchall()
        columns = list(zip(*rows, strict=True)) if rows else [(), (), ()]
        texts = [_objects(c) for c in columns]
    return idx, texts

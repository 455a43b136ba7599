"""Which case field a column's name suggests: English and Chinese names per field, matched on whole words."""

from __future__ import annotations

import re

# Names per case field, best first. Names are compared casefolded with spaces, _ and - removed.
SYNONYMS: dict[str, tuple[str, ...]] = {
    "input": (
        "query",
        "question",
        "prompt",
        "input",
        "text",
        "utterance",
        "utt",
        "userquery",
        "userinput",
        "request",
        "instruction",
        "sentence",
        "content",
        "message",
        "usertext",
        "rawquery",
        "问题",
        "用户query",
        "用户问题",
        "用户输入",
        "输入",
        "问句",
        "提问",
        "文本",
        "指令",
        "原始query",
        "query文本",
        "语料",
    ),
    "expected": (
        "expected",
        "label",
        "gold",
        "goldlabel",
        "expectedoutput",
        "expectedanswer",
        "ideal",
        "target",
        "answer",
        "reference",
        "category",
        "intent",
        "class",
        "output",
        "route",
        "groundtruth",
        "truth",
        "人工标签",
        "标签",
        "标注",
        "人工标注",
        "期望",
        "期望结果",
        "答案",
        "参考答案",
        "类别",
        "分类",
        "意图",
        "路由",
        "结果",
    ),
    "domain": ("domain", "vertical", "scene", "scenario", "area", "垂域", "领域", "业务域", "场景", "业务"),
    "case_id": (
        "caseid",
        "id",
        "uid",
        "qid",
        "sampleid",
        "itemid",
        "evalid",
        "用例id",
        "编号",
        "序号",
        "id号",
    ),
    "request_id": (
        "requestid",
        "rid",
        "reqid",
        "traceid",
        "logid",
        "sessionid",
        "请求id",
        "会话id",
        "日志id",
    ),
    "history": (
        "history",
        "chathistory",
        "conversation",
        "dialog",
        "dialogue",
        "turns",
        "历史",
        "对话历史",
        "上文",
        "多轮",
    ),
    "context": (
        "context",
        "passage",
        "document",
        "documents",
        "choices",
        "state",
        "上下文",
        "背景",
        "选项",
        "状态",
    ),
    "metadata": ("metadata", "meta", "extra", "notes", "备注", "元数据"),
}


def norm_name(name: str) -> str:
    return re.sub(r"[\s_\-.:]+", "", name.casefold())


_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_WORD_BREAKS = (
    (re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])"), " "),  # camelCase, HTTPStatus
    (re.compile(r"(?<=[A-Za-z])(?=\d)|(?<=\d)(?=[A-Za-z])"), " "),  # text2, 2nd
    (re.compile(r"(?<=[\u3400-\u9fff])(?=[^\u3400-\u9fff])|(?<=[^\u3400-\u9fff])(?=[\u3400-\u9fff])"), " "),
)
_ID_WORDS = frozenset(("id", "ids", "uid", "uuid", "编号", "序号", "id号"))
_ALL_NAMES = frozenset(norm_name(o) for names in SYNONYMS.values() for o in names)


def name_words(name: str) -> list[str]:
    """A column name's words, casefolded: snake_case, camelCase, spaces, dashes and dots split, CJK runs apart.

    ``answerId`` → ``["answer", "id"]``, ``user_query_text`` → ``["user", "query", "text"]``,
    ``用户query`` → ``["用户", "query"]``; ``answerid`` stays one word.
    """
    for pattern, repl in _WORD_BREAKS:
        name = pattern.sub(repl, name)
    return [w for w in re.split(r"[\s_\-.:/()#]+", name.casefold()) if w]


def _word_runs(words: list[str]) -> set[str]:
    return {"".join(words[i:j]) for i in range(len(words)) for j in range(i + 1, len(words) + 1)}


def by_name(
    fld: str, columns: tuple[str, ...], used: set[str], called: dict[str, str] | None = None
) -> list[tuple[str, str, bool]]:
    """Columns named like `fld`, best first, as ``(column, how, exact)``.

    A name matches a synonym exactly (casefolded, separators ignored) or holds it as whole words
    (``user_query_text`` holds ``query``; ``answerid`` does not hold ``rid``). Chinese has no word
    breaks, so a Chinese synonym matches inside a run of Chinese (``用户问题描述`` holds ``用户问题``).
    A name whose last word is an id word (``answer_id``) is only an id. `called` gives the name a column
    goes by when it is not its own (a nested path ``data.query`` is called by its key, ``query``).
    """
    names = SYNONYMS[fld]
    called = called or {}
    normed = {c: norm_name(called.get(c, c)) for c in columns if c not in used}
    # Indexed once, so a wide file costs a pass over its names, not one per synonym (16,384 columns:
    # seconds, where a loop of synonyms × columns took minutes).
    by_norm: dict[str, list[str]] = {}
    by_run: dict[str, list[str]] = {}
    cjk_words: list[tuple[str, list[str]]] = []
    for col, n in normed.items():
        by_norm.setdefault(n, []).append(col)
        if n in _ALL_NAMES:  # a name that is another field's exact synonym is that field's
            continue
        words = name_words(called.get(col, col))
        if words and words[-1] in _ID_WORDS and fld not in ("case_id", "request_id"):
            continue
        for run in _word_runs(words):
            by_run.setdefault(run, []).append(col)
        cjk = [w for w in words if _CJK.search(w)]
        if cjk:
            cjk_words.append((col, cjk))
    out: dict[str, tuple[str, str, bool]] = {}
    for syn in names:  # exact, best synonym first
        for col in by_norm.get(norm_name(syn), ()):
            out.setdefault(col, (col, f"matches {syn!r}", True))
    position = {col: i for i, col in enumerate(normed)}
    for syn in names:  # whole words, for names like user_query_text or 人工标签_v2
        target = norm_name(syn)
        found = {
            col: f"has the word{'s' if len(syn.split()) > 1 else ''} {syn!r}"
            for col in by_run.get(target, ())
        }
        if _CJK.search(target):
            for col, words in cjk_words:
                if col not in found and any(target in w for w in words):
                    found[col] = f"contains {syn!r}"
        for col in sorted(found, key=position.__getitem__):
            out.setdefault(col, (col, found[col], False))
    return list(out.values())

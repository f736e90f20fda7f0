"""tau2-bench's data layout, read as it is.

A data root holds ``domains/<name>/`` and ``user_simulator/``::

    domains/airline/  db.json  policy.md  tasks.json  split_tasks.json
    domains/telecom/  db.toml  user_db.toml  main_policy.md  tech_support_manual.md
                      tech_support_workflow.md  tasks.json  split_tasks.json
    user_simulator/   simulation_guidelines.md  simulation_guidelines_tools.md

The root is given explicitly (``--data``, the experiment's ``data`` setting) or read from
``AGENTRIG_TAU2_DATA``. A tau2-bench checkout works too (its ``data/tau2`` is used).

Task files are parsed once per process per (path, mtime, size); the returned ``Task`` objects are
shared between callers, so treat them as read-only (``model_copy(deep=True)`` to change one).
"""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from ...errors import DataError, did_you_mean, suggestions
from .taskmodel import (  # noqa: F401  (re-exported: the public names of the task format)
    Action,
    Description,
    EnvAssertion,
    EnvFunctionCall,
    EvaluationCriteria,
    InitialState,
    InitializationData,
    Requestor,
    RewardType,
    StructuredUserInstructions,
    Task,
    TaskIssue,
    UserScenario,
)

__all__ = [
    "Action", "DataError", "Description", "EnvAssertion", "EnvFunctionCall", "EvaluationCriteria", "InitialState",
    "InitializationData", "Requestor", "RewardType", "StructuredUserInstructions", "Task", "TaskIssue",
    "UserScenario", "ENV_VAR", "POLICY_VARIANTS", "builtin_domain_dir", "domain_dir", "load_policy", "load_splits",
    "load_task_file", "load_tasks", "policy_variants", "resolve_data_root", "select_tasks",
    "user_simulator_guidelines",
]

ENV_VAR = "AGENTRIG_TAU2_DATA"
TASKS_FILE = "tasks.json"
SPLITS_FILE = "split_tasks.json"  # tau2-bench: split_<stem of the tasks file>.json beside it
# every command that reads τ² data can show it: name only what works where (``run`` has no --data)
HOW_TO_SET = (
    f"export {ENV_VAR}=DIR; or set `data = \"DIR\"` in the experiment's [benchmark] table (`agentrig run`); "
    "or give --data DIR to `agentrig tasks` and `agentrig audit` "
    "(DIR holds domains/ and user_simulator/, e.g. a tau2-bench checkout's data/tau2, "
    "or run `agentrig data pull tau2 --dest DIR`)"
)
ALL_SPLIT = "all"  # a split name that means every task of the file, as in an experiment's `split = "all"`

# policy variants: name -> ((tag, file), ...). One file is used verbatim; several are each wrapped
# in <tag>…</tag> and joined, the way tau2-bench builds telecom's policy.
_TELECOM_MANUAL = (("main_policy", "main_policy.md"), ("tech_support_policy", "tech_support_manual.md"))
_TELECOM_WORKFLOW = (("main_policy", "main_policy.md"), ("tech_support_policy", "tech_support_workflow.md"))
POLICY_VARIANTS: dict[str, dict[str, tuple[tuple[str, str], ...]]] = {
    "telecom": {"default": _TELECOM_MANUAL, "manual": _TELECOM_MANUAL, "workflow": _TELECOM_WORKFLOW},
}
_DEFAULT_POLICY = {"default": (("policy", "policy.md"),)}

_TASKS_ADAPTER = TypeAdapter(list[Task])
_task_cache: dict[Path, tuple[tuple[int, int], list[Task]]] = {}


# ---------------------------------------------------------------------------------------- roots


def resolve_data_root(explicit: str | Path | None = None) -> Path:
    """The data root: ``explicit`` if given, else ``$AGENTRIG_TAU2_DATA``; it must hold ``domains/``."""
    if explicit is not None and str(explicit) != "":
        raw, source = str(explicit), "the given data path"
    elif os.environ.get(ENV_VAR):
        raw, source = os.environ[ENV_VAR], f"${ENV_VAR}"
    else:
        raise DataError(f"no tau2-bench data root given.\n  fix: {HOW_TO_SET}")
    root = Path(raw).expanduser()
    for candidate in (root, root / "data" / "tau2"):
        if (candidate / "domains").is_dir():
            return candidate.resolve()
    if not root.exists():
        where = f"{root} does not exist"
    elif not root.is_dir():
        where = f"{root} is a file, not a directory"
    else:
        entries = sorted(p.name + ("/" if p.is_dir() else "") for p in root.iterdir())
        where = f"{root} has no domains/ directory (it holds: {_listing(entries) or 'nothing'})"
    raise DataError(f"bad tau2-bench data root from {source}: {where}.\n  fix: {HOW_TO_SET}")


def domain_dir(root: str | Path | None, domain: str) -> Path:
    """``<root>/domains/<domain>``; a domain shipped inside the package is found without a root."""
    if root is not None:
        path = Path(root) / "domains" / domain
        if path.is_dir():
            return path
    builtin = builtin_domain_dir(domain)
    if builtin is not None:
        return builtin
    if root is None:
        raise DataError(f"no tau2-bench data root given for domain {domain!r}.\n  fix: {HOW_TO_SET}")
    domains = Path(root) / "domains"
    existing = sorted(p.name for p in domains.iterdir() if p.is_dir()) if domains.is_dir() else []
    existing += [name for name in _builtin_domains() if name not in existing]  # playable without the root
    raise DataError(
        f"unknown domain {domain!r}: {did_you_mean(domain, existing)}no directory {path}.\n"
        f"  domains here: {_listing(_closest_first(domain, existing)) or 'none'}\n"
        f"  fix: pick one of those with --domain, or point the data root elsewhere ({HOW_TO_SET})"
    )


def _builtin_domains() -> list[str]:
    """The domains of the registry that ship inside the package (found without a data root)."""
    try:
        from .domains import available_domains
    except ImportError:
        return []
    return [name for name in available_domains() if builtin_domain_dir(name) is not None]


def builtin_domain_dir(domain: str) -> Path | None:
    """The directory of a domain shipped inside the package (its DomainSpec.builtin_dir), if any."""
    try:
        from .domains import get_domain  # the registry; absent until the engine ships it
    except ImportError:
        return None
    try:
        spec = get_domain(domain)
    except Exception:  # an unknown name, whatever the registry raises for it
        return None
    builtin = getattr(spec, "builtin_dir", None)
    return Path(builtin) if builtin is not None and Path(builtin).is_dir() else None


# ---------------------------------------------------------------------------------------- tasks


def load_tasks(root: str | Path | None, domain: str) -> list[Task]:
    """All tasks of ``domains/<domain>/tasks.json``, in file order (parsed once per file version)."""
    return load_task_file(domain_dir(root, domain) / TASKS_FILE)


def load_task_file(path: str | Path) -> list[Task]:
    """The tasks of one tau2-bench tasks file (a JSON list, or an object with a ``tasks`` list)."""
    path = Path(path).resolve()
    try:
        st = path.stat()
    except FileNotFoundError:
        raise DataError(f"{path}: tasks file not found.\n  fix: {_missing_file_fix(path)}") from None
    key = (st.st_mtime_ns, st.st_size)
    hit = _task_cache.get(path)
    if hit is not None and hit[0] == key:
        return list(hit[1])
    tasks = _parse_tasks(path, path.read_bytes())
    _task_cache[path] = (key, tasks)
    return list(tasks)


def _parse_tasks(path: Path, raw: bytes) -> list[Task]:
    head = raw.lstrip()[:1]
    try:
        if head == b"[":
            return _check_unique(path, _TASKS_ADAPTER.validate_json(raw))
        doc = json.loads(raw)
    except ValidationError as exc:
        if any(e["type"] == "json_invalid" for e in exc.errors()):
            _raise_bad_json(path, raw)
        raise _task_error(path, json.loads(raw), exc) from None
    except json.JSONDecodeError:
        _raise_bad_json(path, raw)
    if isinstance(doc, dict) and isinstance(doc.get("tasks"), list):
        items = doc["tasks"]
    else:
        raise DataError(
            f"{path}: expected a JSON list of tasks (or an object with a \"tasks\" list), "
            f"got {type(doc).__name__}.\n  fix: use tau2-bench's tasks.json format"
        )
    try:
        return _check_unique(path, _TASKS_ADAPTER.validate_python(items))
    except ValidationError as exc:
        raise _task_error(path, items, exc) from None


def _raise_bad_json(path: Path, raw: bytes):
    try:
        json.loads(raw)
    except json.JSONDecodeError as exc:
        raise DataError(
            f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}).\n"
            "  fix: repair the file, or fetch a clean copy with `agentrig data pull tau2`"
        ) from None
    raise DataError(f"{path}: not valid JSON.\n  fix: repair the file")  # pragma: no cover


def _task_error(path: Path, items: object, exc: ValidationError) -> DataError:
    lines, shown = [], 0
    errors = exc.errors(include_url=False)
    for err in errors[:5]:
        loc = list(err["loc"])
        where = "the task list"
        if loc and isinstance(loc[0], int):
            index = loc.pop(0)
            tid = None
            if isinstance(items, list) and index < len(items) and isinstance(items[index], dict):
                tid = items[index].get("id")
            where = f"task {tid!r} (index {index})" if tid is not None else f"task at index {index}"
        field = _field_path(loc) or "(the task itself)"
        value = "" if err["type"] == "missing" else f"; got {_short(err.get('input'))}"
        lines.append(f"  {where}, field {field}: {err['msg']}{value}")
        shown += 1
    more = f"\n  … and {len(errors) - shown} more problem(s)" if len(errors) > shown else ""
    return DataError(
        f"{path}: malformed task(s):\n" + "\n".join(lines) + more +
        "\n  fix: correct those fields to tau2-bench's task format (see src/tau2/data_model/tasks.py "
        "upstream), or fetch a clean copy with `agentrig data pull tau2`"
    )


def _field_path(loc: list) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("str", "StructuredUserInstructions") or "[" in str(part):
            continue  # pydantic's name for a union member, not a key of the file
        else:
            out += ("." if out else "") + str(part)
    return out


def _check_unique(path: Path, tasks: list[Task]) -> list[Task]:
    seen: set[str] = set()
    dups = [t.id for t in tasks if t.id in seen or seen.add(t.id)]
    if dups:
        raise DataError(
            f"{path}: duplicate task id(s) {_listing(sorted(set(dups)))}.\n"
            "  fix: every task id in a tasks file must be unique"
        )
    return tasks


# ---------------------------------------------------------------------------------------- splits


def load_splits(root: str | Path | None, domain: str) -> dict[str, list[str]]:
    """Split name -> task ids, from ``split_tasks.json``.

    Without a split file (tau2-bench's mock domain has none upstream and then takes every task)
    the one split is ``base``: every task of the file.
    """
    path = domain_dir(root, domain) / SPLITS_FILE
    if not path.is_file():
        return {"base": [t.id for t in load_tasks(root, domain)]}
    try:
        doc = json.loads(path.read_bytes())
    except json.JSONDecodeError as exc:
        raise DataError(
            f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}).\n"
            "  fix: repair the split file or delete it (then every task forms split 'base')"
        ) from None
    if not isinstance(doc, dict):
        raise DataError(f"{path}: expected an object of split name -> list of task ids, got {type(doc).__name__}.\n"
                        "  fix: use tau2-bench's split_tasks.json format")
    for name, ids in doc.items():
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise DataError(f"{path}: split {name!r} must be a list of task id strings.\n"
                            "  fix: write it as \"name\": [\"id\", ...]")
    return {name: list(ids) for name, ids in doc.items()}


def select_tasks(
    root: str | Path | None,
    domain: str,
    split: str | None = None,
    task_ids: list[str] | tuple[str, ...] | None = None,
) -> list[Task]:
    """The tasks of a split (None or "all": all tasks of the file), optionally narrowed to ``task_ids``.

    File order is kept. An unknown split or task id is a DataError listing what exists.
    A split's ids that the file lacks are skipped; a split none of whose ids exist is an error.
    """
    tasks = load_tasks(root, domain)
    where = f"domain {domain!r}"
    splits = load_splits(root, domain) if split is not None else {}
    if split == ALL_SPLIT and ALL_SPLIT not in splits:
        split = None  # every task of the file
    if split is not None:
        if split not in splits:
            named = [f'{k} ({len(v)})' for k, v in splits.items()] + [f"{ALL_SPLIT} ({len(tasks)})"]
            raise DataError(
                f"unknown split {split!r} for {where}.\n"
                f"  splits: {_listing(_closest_first(split, named))}\n"
                "  fix: pick one of those with --split, or leave it out for every task"
            )
        wanted = set(splits[split])
        chosen = [t for t in tasks if t.id in wanted]
        if wanted and not chosen:
            raise DataError(
                f"split {split!r} of {where} lists {len(wanted)} task id(s), none of them in "
                f"{domain_dir(root, domain) / TASKS_FILE}.\n"
                "  fix: the tasks file is a subset; use the full upstream files "
                "(`agentrig data pull tau2`) or another split"
            )
        tasks, where = chosen, f"split {split!r} of domain {domain!r}"
    if task_ids:
        by_id = {t.id: t for t in tasks}
        unknown = [i for i in task_ids if i not in by_id]
        if unknown:
            hint = suggestions(unknown, by_id)
            raise DataError(
                f"unknown task id(s) {_listing([repr(u) for u in unknown])} in {where} ({len(by_id)} tasks).\n"
                + (f"  {hint}\n" if hint else "")
                + f"  fix: `agentrig tasks list --domain {domain}` shows every id"
            )
        wanted_ids = set(task_ids)
        tasks = [t for t in tasks if t.id in wanted_ids]
    return tasks


# ---------------------------------------------------------------------------------------- texts


def policy_variants(domain: str) -> list[str]:
    return list(POLICY_VARIANTS.get(domain, _DEFAULT_POLICY))


def load_policy(root: str | Path | None, domain: str, variant: str = "default") -> str:
    """The domain's policy text as the agent sees it (telecom: main policy + tech-support part)."""
    variants = POLICY_VARIANTS.get(domain, _DEFAULT_POLICY)
    if variant not in variants:
        raise DataError(
            f"unknown policy variant {variant!r} for domain {domain!r}.\n"
            f"  variants: {_listing(list(variants))}\n  fix: pick one of those"
        )
    base = domain_dir(root, domain)
    parts = variants[variant]
    texts = []
    for _tag, name in parts:
        path = base / name
        if not path.is_file():
            raise DataError(f"{path}: policy file not found (needed by policy variant {variant!r} of {domain!r}).\n"
                            f"  fix: {_missing_file_fix(path)}")
        texts.append(path.read_text(encoding="utf-8"))
    if len(parts) == 1:
        return texts[0]
    return "\n".join(f"<{tag}>\n{text}\n</{tag}>" for (tag, _), text in zip(parts, texts))


def user_simulator_guidelines(root: str | Path | None, with_tools: bool) -> str | None:
    """The user simulator's general rules (the tools flavour when the user has tools), if present."""
    from .user_prompts import tau2_guidelines

    return tau2_guidelines(root, with_tools)


# ---------------------------------------------------------------------------------------- helpers


def _closest_first(word: str, options: list[str]) -> list[str]:
    def score(option: str) -> tuple[float, str]:
        bare = option.split(" (")[0]
        ratio = difflib.SequenceMatcher(None, word.lower(), bare.lower()).ratio()
        if bare.lower().startswith(word.lower()) or word.lower() in bare.lower():
            ratio += 1.0
        return (-ratio, option)

    return sorted(options, key=score)


def _listing(items: list[str], limit: int = 12) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f", … ({len(items) - limit} more)" if len(items) > limit else "")


def _short(value: object, width: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str) if not isinstance(value, str) else repr(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def _missing_file_fix(path: Path) -> str:
    parent = path.parent
    if parent.is_dir():
        here = sorted(p.name for p in parent.iterdir())
        return f"{parent} holds {_listing(here) or 'nothing'}; restore {path.name} (`agentrig data pull tau2`)"
    return f"{parent} does not exist; {HOW_TO_SET}"

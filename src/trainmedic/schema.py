"""The library's schema: YAML is validated here (pydantic) into frozen dataclasses, with messages
that say what to fix. Imported only when the library is actually parsed, not on a cache hit."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from trainmedic.model import (
    CODE_KEYS,
    ActionPolicy,
    Cause,
    Claim,
    Entry,
    Fingerprint,
    LibraryError,
    MissingFact,
    ProbeTopic,
    Symptom,
)
from trainmedic.util import linear

_KEBAB = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when the wheel has it: much faster


def newline_problem(regex: str) -> str | None:
    """Say why `regex` could match across a newline, or None.

    The matcher scans whole blocks (hyperscan) and must give exactly what a per-line search
    gives, so no part of a fingerprint may match a newline.
    """
    from re import _constants as c  # type: ignore[attr-defined]  # stdlib parser, stable since 3.11
    from re import _parser  # type: ignore[attr-defined]  # same

    crossing = {c.CATEGORY_SPACE: r"\s", c.CATEGORY_NOT_DIGIT: r"\D", c.CATEGORY_NOT_WORD: r"\W"}

    def walk(items: Any) -> str | None:
        for op, av in items:
            if op is c.IN:
                negated = any(o is c.NEGATE for o, _ in av)
                has_nl = any(o is c.LITERAL and a == 10 for o, a in av)
                if negated and not has_nl:
                    return "a negated class [^...] must exclude \\n too, e.g. [^)\\n]"
                for o, a in av:
                    if o is c.CATEGORY and a in crossing:
                        return f"{crossing[a]} matches a newline; write [ \\t] or a narrower class"
            elif op is c.CATEGORY and av in crossing:
                return f"{crossing[av]} matches a newline; write [ \\t] or a narrower class"
            elif op is c.AT and av in (c.AT_BEGINNING, c.AT_BEGINNING_LINE, c.AT_BEGINNING_STRING):
                # Lines can carry rank prefixes or arrive joined with another rank's text.
                return "do not anchor with '^'; match the message itself"
            elif op is c.LITERAL and av == 10:
                return "remove the \\n"
            elif op is c.NOT_LITERAL and av != 10:
                return "a negated class [^...] must exclude \\n too, e.g. [^)\\n]"
            elif op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
                found = walk(av[2])
                if found:
                    return found
            elif op is c.SUBPATTERN:
                found = walk(av[-1])
                if found:
                    return found
            elif op is c.BRANCH:
                for branch in av[1]:
                    found = walk(branch)
                    if found:
                        return found
            elif op in (c.ASSERT, c.ASSERT_NOT, c.GROUPREF, c.GROUPREF_EXISTS):
                return "lookarounds and back-references are not supported by the block matcher"
        return None

    return walk(_parser.parse(regex))


def _kebab(v: str) -> str:
    if not _KEBAB.match(v):
        raise ValueError(f"{v!r} must be kebab-case (lowercase words joined by '-')")
    return v


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FingerprintSpec(_Strict):
    id: str
    regex: str = Field(min_length=4)
    weight: float = Field(gt=0.0, le=1.0)
    ambiguous: bool = False
    ignore_case: bool = False
    precursor: bool = False
    handled: bool = False
    warning: bool = False
    at_exit: bool = False
    own_job: bool = False
    worker_exit: bool = False

    _check_id = field_validator("id")(_kebab)

    @field_validator("regex")
    @classmethod
    def _compiles(cls, v: str) -> str:
        try:
            re.compile(v)
        except re.error as exc:
            raise ValueError(f"regex does not compile: {exc}") from exc
        problem = newline_problem(v)
        if problem:
            raise ValueError(f"a fingerprint must stay within one line: {problem}")
        refused = linear.problem(v)
        if refused:
            raise ValueError(refused)
        return v


class ClaimSpec(_Strict):
    """Another cause's reading that is this cause's when raised where this cause's state is used: a shape
    mismatch raised inside an optimizer's update is optimizer state restored for other parameters."""

    causes: list[str] = Field(min_length=1)  # the readings it takes over
    frames: list[str] = Field(min_length=1)  # substrings of the innermost frame (its File line or code line)
    exceptions: list[str] = Field(min_length=1)  # substrings of the final exception line


class MissingSpec(_Strict):
    fact: str = Field(min_length=3)
    command: str = Field(min_length=2)
    # The probe topic whose facts answer it: once `--probe`, `--facts` or `--dmesg` gave facts on it,
    # the fact is no longer missing.
    topic: ProbeTopic | None = None


class ActionSpec(_Strict):
    """What to do with the job once this is the cause: whose problem it is, whether a plain restart can
    succeed, and which checkpoint is safe to resume from."""

    owner: Literal["model-code", "data", "configuration", "platform", "hardware", "framework", "unknown"]
    restart: bool  # a plain restart can succeed (a transient fault), without changing anything
    # last: the last save that completed; before-last: the one before it (the last is suspect);
    # before-nonfinite: the last save before the failure's first evidence (weights went bad after it);
    # none: no checkpoint of this run is safe (its data or its results are wrong): start again
    resume: Literal["last", "before-last", "before-nonfinite", "none"]
    why: str = Field(default="", max_length=200)  # when it differs from what the owner suggests


class CauseSpec(_Strict):
    id: str
    title: str = Field(min_length=3)
    role: Literal["initiating", "cascade", "teardown"]
    mechanism: str = Field(min_length=20)
    fingerprints: list[FingerprintSpec] = []
    fix: list[str] = Field(min_length=1)
    verify: list[str] = Field(min_length=1)
    prevention: list[str] = Field(min_length=1)
    missing: list[MissingSpec] = []
    competes: list[str] = []
    confirmed_as: str | None = None
    kill_record: bool = False
    wrapper: bool = False
    # Categories of the causes it wraps that stay its own: a bug of that kind raised inside the wrapper's
    # code (a shape error in a dataset's __getitem__) is fixed where the wrapper points, not in the model.
    keeps_inside: list[str] = []
    in_worker: str | None = None
    fallback: bool = False
    scale_floor: float | None = None
    bottomed_as: str | None = None
    stranded_as: str | None = None
    # A stop from outside (the scheduler's time limit) after the run said training finished is this
    # cause (one with `after_finish`): the processes outlived their work.
    finished_as: str | None = None
    after_finish: bool = False
    # Its lines after the run said training finished are its processes exiting in another order (the
    # store's host, rank 0, first): what the others then lose ended no work.
    exit_order: bool = False
    # The same error after the run made progress is this other cause.
    mid_run_as: str | None = None
    # Its worker_exit lines alone, after the workers' own output and no error of theirs, are this cause.
    silent_exit_as: str | None = None
    silent_exit: bool = False  # named by another cause's silent_exit_as
    # Also read from the collective timeouts themselves: ranks that timed out in one sequence number
    # of a group, in different operations or sizes, were not running the same collective.
    work_mismatch: bool = False
    # Read from the store barrier's own count: more workers checked in than the world size.
    store_overfull: bool = False
    # Its watchdog takes the process down with SIGABRT once it fires (NCCL's "To avoid data inconsistency, we
    # are taking the entire process down"): a rank that a launcher then reports dead of signal 6, with no
    # message of its own, died of it.
    aborts_process: bool = False
    data_wait_share: float | None = Field(default=None, gt=0.0, lt=1.0)
    loss_jump: float | None = Field(default=None, gt=1.0)
    loss_nonfinite: bool = False
    loss_vanished: bool = False
    # Its warning-level lines, logged on this many lines of one process, are the failure (unless a finite,
    # non-zero loss comes after the last): every evaluation's NaN loss, every sample's masked labels.
    persists: int | None = Field(default=None, ge=2)
    # What it names lets training run on with nothing to learn from (a train split of no sample prints its
    # epochs all the same): steps rising after it, and the run finishing, do not clear it.
    trains_on: bool = False
    stack_waits: list[str] = []
    main_first_frames: list[str] = []
    phrases: list[str] = []
    owns_frames: list[str] = []
    owns_exceptions: list[str] = []
    raised_in: list[str] = []
    claims: list[ClaimSpec] = []
    # Its lines, where the incident or the input shows one of `inside_marks`, are `inside_as`: a generic
    # failure inside a framework's own machinery (a JIT build of one of DeepSpeed's ops) is that framework's.
    inside_marks: list[str] = []
    inside_as: str | None = None
    needs_context: list[str] = []
    otherwise: str | None = None
    otherwise_context: list[str] = []
    tail_only: bool = False
    action: ActionSpec | None = None  # the entry's, unless this cause differs

    _check_id = field_validator("id")(_kebab)

    @model_validator(mode="after")
    def _recognisable(self) -> CauseSpec:
        """A cause the reasoner can name: by a line (a fingerprint), by a shape of the metric lines, or
        as what another cause is after the run finished (`after_finish`)."""
        shaped = (self.data_wait_share is not None or self.loss_jump is not None or self.loss_nonfinite
                  or self.loss_vanished)
        if (not self.fingerprints and not shaped and not self.after_finish and not self.store_overfull
                and not self.silent_exit):
            raise ValueError("a cause needs a fingerprint, a metric shape (data_wait_share, loss_jump, "
                             "loss_nonfinite, loss_vanished), after_finish, silent_exit or store_overfull")
        return self


class SymptomSpec(_Strict):
    symptom: str
    why: str


class EntrySpec(_Strict):
    id: str
    title: str = Field(min_length=3)
    category: str
    summary: str = Field(min_length=10)
    tags: list[str] = Field(min_length=1)
    affects: list[str] = Field(min_length=1)
    symptoms: list[SymptomSpec] = Field(min_length=1)
    # every cause's, unless the cause says otherwise; a team's entry may leave it out (owner unknown, no
    # restart, the last checkpoint); every built-in entry has one (tests/test_library.py)
    action: ActionSpec | None = None
    causes: list[CauseSpec] = Field(min_length=1)
    confirm: list[str] = Field(min_length=1)
    scale: str = Field(min_length=10)
    code: dict[str, str]
    related: list[str] = []
    references: list[str] = Field(min_length=1)
    aliases: list[str] = []
    worker_marks: list[str] = []

    _check_id = field_validator("id")(_kebab)
    _check_category = field_validator("category")(_kebab)

    @field_validator("code")
    @classmethod
    def _code_keys(cls, v: dict[str, str]) -> dict[str, str]:
        unknown = set(v) - set(CODE_KEYS)
        if unknown:
            raise ValueError(f"unknown code keys {sorted(unknown)}; use {', '.join(CODE_KEYS)}")
        if "pytorch" not in v:
            raise ValueError("code needs at least a 'pytorch' example")
        return v

    @field_validator("references")
    @classmethod
    def _urls(cls, v: list[str]) -> list[str]:
        for url in v:
            if not url.startswith(("https://", "http://")):
                raise ValueError(f"reference {url!r} must be a URL")
        return v


_UNKNOWN_ACTION = ActionSpec(owner="unknown", restart=False, resume="last")


def _policy(spec: ActionSpec) -> ActionPolicy:
    return ActionPolicy(spec.owner, spec.restart, spec.resume, spec.why)


def _to_entry(spec: EntrySpec, source: str) -> Entry:
    causes = tuple(
        Cause(
            id=c.id,
            title=c.title,
            role=c.role,
            mechanism=c.mechanism.strip(),
            fingerprints=tuple(
                Fingerprint(f.id, f.regex, f.weight, f.ambiguous, f.ignore_case, f.precursor, f.warning, f.handled,
                            f.at_exit, f.own_job, f.worker_exit)
                for f in c.fingerprints
            ),
            fix=tuple(c.fix),
            verify=tuple(c.verify),
            prevention=tuple(c.prevention),
            missing=tuple(MissingFact(m.fact, m.command, m.topic) for m in c.missing),
            competes=tuple(c.competes),
            confirmed_as=c.confirmed_as,
            kill_record=c.kill_record,
            wrapper=c.wrapper,
            keeps_inside=tuple(c.keeps_inside),
            in_worker=c.in_worker,
            fallback=c.fallback,
            scale_floor=c.scale_floor,
            bottomed_as=c.bottomed_as,
            stranded_as=c.stranded_as,
            finished_as=c.finished_as,
            after_finish=c.after_finish,
            exit_order=c.exit_order,
            mid_run_as=c.mid_run_as,
            silent_exit_as=c.silent_exit_as,
            silent_exit=c.silent_exit,
            work_mismatch=c.work_mismatch,
            store_overfull=c.store_overfull,
            aborts_process=c.aborts_process,
            data_wait_share=c.data_wait_share,
            loss_jump=c.loss_jump,
            loss_nonfinite=c.loss_nonfinite,
            loss_vanished=c.loss_vanished,
            persists=c.persists,
            trains_on=c.trains_on,
            stack_waits=tuple(c.stack_waits),
            main_first_frames=tuple(c.main_first_frames),
            phrases=tuple(c.phrases),
            owns_frames=tuple(c.owns_frames),
            owns_exceptions=tuple(c.owns_exceptions),
            raised_in=tuple(c.raised_in),
            claims=tuple(Claim(tuple(k.causes), tuple(k.frames), tuple(k.exceptions)) for k in c.claims),
            inside_marks=tuple(c.inside_marks),
            inside_as=c.inside_as,
            needs_context=tuple(c.needs_context),
            otherwise=c.otherwise,
            otherwise_context=tuple(c.otherwise_context),
            tail_only=c.tail_only,
            action=_policy(c.action or spec.action or _UNKNOWN_ACTION),
            entry_id=spec.id,
        )
        for c in spec.causes
    )
    return Entry(
        id=spec.id,
        title=spec.title,
        category=spec.category,
        summary=spec.summary.strip(),
        tags=tuple(spec.tags),
        affects=tuple(spec.affects),
        symptoms=tuple(Symptom(s.symptom, s.why) for s in spec.symptoms),
        causes=causes,
        confirm=tuple(spec.confirm),
        scale=spec.scale.strip(),
        code=tuple((k, spec.code[k]) for k in CODE_KEYS if k in spec.code),
        related=tuple(spec.related),
        references=tuple(spec.references),
        aliases=tuple(spec.aliases),
        worker_marks=tuple(spec.worker_marks),
        source=source,
    )


def _format_errors(path: Path, exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        parts.append(f"{where}: {err['msg']}")
    return f"{path.name}: " + "; ".join(parts)


def load_entry(path: Path) -> Entry:
    try:
        raw: Any = yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER)
    except yaml.YAMLError as exc:
        raise LibraryError(f"{path.name}: not valid YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise LibraryError(f"{path.name}: expected a mapping of keys (id, title, causes, ...)")
    try:
        spec = EntrySpec.model_validate(raw)
    except ValidationError as exc:
        raise LibraryError(_format_errors(path, exc)) from exc
    if spec.id != path.stem:
        raise LibraryError(f"{path.name}: id {spec.id!r} must equal the file name {path.stem!r}")
    if spec.category != path.parent.name:
        raise LibraryError(
            f"{path.name}: category {spec.category!r} must equal its folder {path.parent.name!r}"
        )
    return _to_entry(spec, str(path))



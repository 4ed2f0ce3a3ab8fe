"""`atenlint check --incremental`: one file's findings kept between runs, reused only when
the check would provably give the same result.

A stored result is reused when every input of the check is byte-for-byte what it was:

- the run: atenlint's own code (its version and a digest of its files: an editable install
  changes without a new version), the interpreter that imports the user's code (its path,
  version, and the name and version of every distribution installed for it: torch, the
  exporters the targets read, and any library the user's code imports), the sandbox,
  and executed or source-only mode;
- the file: its path, how findings name it, its resolved settings (every field of the
  `Settings` value, and the contents of its pyproject.toml and factories file), and the
  contents of every file the previous check recorded (the file, the user's files its
  import read, every file a finding was placed in);
- the project around it: the names of the Python files under the file's import roots (a
  new module can change what an import finds), and for a result in which any class was
  read from source their contents too (the static pass follows calls into files it does
  not record).

Contents are compared by SHA-256, never by modification times. A check that did not
finish normally (a worker timeout or crash, an import error, a sandbox refusal, an
internal error, an invalid configuration) is never stored: its result may depend on
something not recorded. Entries are JSON, written atomically; an unreadable or foreign
entry is a miss and is replaced. The cache is pruned at the end of every run: entries of
files that no longer exist, entries unused for `MAX_AGE_DAYS`, and beyond `MAX_ENTRIES`
the least recently used.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, cast

from . import __version__
from . import findings as codes
from .answers import build_paths, capture_paths, class_capture
from .bounded_read import open_regular_file
from .cache import cache_dir, read_json, write_json
from .captured import CallSite, FileCapture
from .config import Settings
from .discover import import_location
from .finding_data import FindingData, Fix, RelatedPlace
from .findings import Finding
from .notebook import is_notebook, module_location
from .sourcetext import JsonRange, Range
from .targets.site_verdict import SiteVerdict

FORMAT = 1
MAX_ENTRIES = 4000
MAX_AGE_DAYS = 30
# A project whose import roots hold more Python files than this is not listed (the walk
# would cost more than the capture it saves): its results are not stored.
MAX_LISTED_FILES = 20000

# A check that ended in one of these did not finish normally: not stored.
UNSTORED_CODES = frozenset(
    {
        codes.TIMEOUT,
        codes.WORKER_CRASHED,
        codes.INTERNAL_ERROR,
        codes.IMPORT_ERROR,  # may come from a module that is missing now and present later
        codes.REFUSED,  # the sandbox refused an action whose outcome depends on the machine
        codes.CONFIG_ERROR,  # includes an unreadable pyproject.toml (an unknown key is only a warning)
    }
)

_SKIPPED_DIRS = frozenset({"__pycache__", "node_modules", "site-packages", "dist-packages"})

# What the interpreter that imports the user's code reports about itself: run with -I as
# the worker is, it imports nothing beyond `os`, `sys` and `json` (never torch) and reads no
# package metadata: each installed distribution's `name-version.dist-info` folder names it.
_ENVIRONMENT_PROBE = """
import json, os, sys
found = []
for entry in sys.path:
    try:
        names = os.listdir(entry or ".")
    except OSError:
        continue
    found.extend(n for n in names if n.endswith((".dist-info", ".egg-info", ".egg-link", ".pth")))
print(json.dumps({"executable": sys.executable, "version": sys.version, "prefix": sys.prefix,
                  "path": sys.path, "distributions": sorted(found)}))
"""


class EnvironmentUnknown(Exception):
    """The interpreter could not say what it has installed: nothing is cached this run."""


def _sha256_file(path: str) -> str | None:
    """A regular file's SHA-256 (None: it cannot be read, or is not a regular file: a FIFO
    named as a dependency must not block the run), read in bounded pieces."""
    try:
        descriptor, _ = open_regular_file(path)
    except OSError:  # NotRegularFile included
        return None
    try:
        digest = hashlib.sha256()
        while block := os.read(descriptor, 1 << 20):
            digest.update(block)
        return digest.hexdigest()
    except OSError:
        return None
    finally:
        os.close(descriptor)


def _sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _atenlint_digest() -> str:
    """atenlint's version and the contents of its own files (code and data tables)."""
    root = os.path.dirname(os.path.abspath(__file__))
    digest = hashlib.sha256(__version__.encode())
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        for name in sorted(files):
            if name.endswith((".py", ".json", ".yaml", ".toml", ".txt")):
                path = os.path.join(directory, name)
                digest.update(os.path.relpath(path, root).encode())
                digest.update((_sha256_file(path) or "-").encode())
    return digest.hexdigest()


def environment_fingerprint(python: str, timeout: float = 60.0) -> str:
    """A digest of everything a run's results depend on besides the user's files and
    settings: atenlint's code and the worker interpreter's installed distributions."""
    try:
        done = subprocess.run(
            [python, "-I", "-c", _ENVIRONMENT_PROBE],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError) as error:
        raise EnvironmentUnknown(f"cannot run {python}: {error}") from None
    if done.returncode != 0:
        raise EnvironmentUnknown(f"{python} exited with {done.returncode}: {done.stderr.strip()[-300:]}")
    try:
        described = json.loads(done.stdout)
    except ValueError:
        raise EnvironmentUnknown(f"{python} printed no description of its environment") from None
    return _sha256_text(json.dumps({"python": described, "atenlint": _atenlint_digest()}, sort_keys=True))


def canonical(value: Any) -> Any:
    """`value` as JSON-able data with one spelling per value: sets sorted, dataclasses as
    their fields (a frozenset's repr depends on the process's hash seed)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            "__class__": type(value).__name__,
            **{f.name: canonical(getattr(value, f.name)) for f in dataclasses.fields(value)},
        }
    if isinstance(value, dict):
        return {"__dict__": sorted(([canonical(k), canonical(v)] for k, v in value.items()), key=json.dumps)}
    if isinstance(value, (set, frozenset)):
        return {"__set__": sorted((canonical(v) for v in value), key=json.dumps)}
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return {"__repr__": repr(value)}


def settings_digest(settings: Settings, file_digest: Callable[[str], str | None] = _sha256_file) -> str:
    """Every field of the resolved settings, and the contents of the files they name: the
    configuration, the factories file and any `file.py:function` a module's init or inputs
    refers to (each resolved as the worker resolves it, against the configuration's folder)."""
    values = json.dumps(canonical(settings), sort_keys=True)
    base = os.path.dirname(settings.config_path) if settings.config_path else settings.project_root
    named = {settings.config_path, settings.factories, *_PY_FILE.findall(values)}
    files = {}
    for name in sorted(n for n in named if n):
        path = name if os.path.isabs(name) or not base else os.path.join(base, name)
        files[name] = file_digest(path)
    return _sha256_text(json.dumps({"settings": values, "files": files}, sort_keys=True))


_PY_FILE = re.compile(r"[\w./\\-]+\.py\b")


# -- findings as JSON (the whole record: `Finding.as_json` is the output contract, without
# the data fixes and editors read) ----------------------------------------------------------

_TUPLE = "__atenlint_tuple__"


def _encode(value: Any) -> Any:
    """JSON-able data that reads back equal: tuples (call arguments) are tagged."""
    if isinstance(value, tuple):
        return {_TUPLE: [_encode(v) for v in value]}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise TypeError("a mapping with non-string keys")
        return {k: _encode(v) for k, v in value.items()}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"{type(value).__name__} is not JSON data")


def _decode(value: Any) -> Any:
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if isinstance(value, dict):
        if set(value) == {_TUPLE}:
            return tuple(_decode(v) for v in value[_TUPLE])
        return {k: _decode(v) for k, v in value.items()}
    return value


def finding_to_json(finding: Finding) -> dict[str, Any]:
    """Every field of a finding (TypeError when one holds something JSON cannot carry)."""
    return {
        "path": finding.path,
        "range": finding.range.as_json(),
        "severity": finding.severity,
        "code": finding.code,
        "message": finding.message,
        "target": finding.target,
        "ops": list(finding.ops),
        "call": finding.call,
        "module": finding.module,
        "capture": finding.capture,
        "fixes": _encode(list(finding.fixes)),
        "related": _encode(list(finding.related)),
        "data": _encode(dict(finding.data)),
        "abs_path": finding.abs_path,
        "modules": list(finding.modules),
    }


def finding_from_json(data: dict[str, Any]) -> Finding:
    """The finding `finding_to_json` wrote (KeyError/TypeError/ValueError on anything else)."""
    return Finding(
        path=str(data["path"]),
        range=Range.from_json(cast(JsonRange, data["range"])),
        severity=str(data["severity"]),
        code=str(data["code"]),
        message=str(data["message"]),
        target=data["target"],
        ops=[str(op) for op in data["ops"]],
        call=data["call"],
        module=data["module"],
        capture=data["capture"],
        fixes=cast("list[Fix]", _decode(data["fixes"])),
        related=cast("list[RelatedPlace]", _decode(data["related"])),
        data=cast(FindingData, _decode(data["data"])),
        abs_path=str(data["abs_path"]),
        modules=[str(m) for m in data["modules"]],
    )


def call_site_to_json(site: CallSite) -> dict[str, Any]:
    """A hover's call site as JSON data (`call_site_from_json` reads it back equal)."""
    return {
        "path": site.path,
        "range": site.range.as_json(),
        "call": site.call,
        "ops": list(site.ops),
        "reached": list(site.reached),
        "verdicts": {name: verdict.as_json() for name, verdict in site.verdicts.items()},
        "capture": site.capture,
    }


def call_site_from_json(data: dict[str, Any]) -> CallSite:
    return CallSite(
        path=str(data["path"]),
        range=Range.from_json(cast(JsonRange, data["range"])),
        call=str(data["call"]),
        ops=[str(op) for op in data["ops"]],
        reached=[str(op) for op in data["reached"]],
        verdicts={
            str(name): SiteVerdict(
                status=str(v["status"]),
                ops=tuple(str(op) for op in v["ops"]),
                severity=str(v["severity"]),
                code=str(v["code"]),
                message=str(v["message"]),
            )
            for name, v in data["verdicts"].items()
        },
        capture=str(data["capture"]),
    )


# -- entries -----------------------------------------------------------------------------


@dataclass
class CachedResult:
    """What a run needs of one file's stored check: its findings and its counts."""

    path: str
    findings: list[Finding]
    imported: list[str]
    dependencies: list[str]
    covers: list[str]
    classes: int
    by_capture: dict[str, int]
    built: dict[str, int]
    targets: list[str]
    torch_version: str
    torch_degradations: list[str]
    # The hover's verdicts per call in this file, stored by a check that made them (the
    # editor's); None: stored by one that did not (the CLI's).
    call_sites: list[CallSite] | None = None


@dataclass
class _Project:
    """The Python files under a set of import roots, read once per run."""

    names: str | None = None  # digest of their paths; None: too many to list
    contents: str | None = None  # digest of their paths and contents (computed when asked)
    files: list[str] = field(default_factory=list)


class ResultCache:
    """Stored results of one kind of run (one environment, one mode), shared by the
    threads of `check_paths`."""

    def __init__(
        self,
        environment: str,
        execute: bool,
        sandbox: bool,
        directory: str | None = None,
        log: Callable[[str], None] = lambda message: None,
        run_notes: Callable[[], list[str]] = list,
        cwd: str | None = None,
    ):
        self.directory = directory or os.path.join(cache_dir(), "results")
        self.run_key = _sha256_text(
            json.dumps({"format": FORMAT, "environment": environment, "execute": execute, "sandbox": sandbox})
        )
        # Entries are named without the environment: a run after an upgrade replaces the
        # entries the previous environment left rather than adding to them.
        self._mode = json.dumps({"execute": execute, "sandbox": sandbox})
        self.execute = execute
        # Findings in files other than the checked one (a helper it imports, its
        # pyproject.toml) name them relative to the working folder.
        self.cwd = os.path.abspath(cwd or os.getcwd())
        self.log = log
        # What the run says once about its torch (Engine.torch_degradations), stored with
        # each result: a run that starts no worker repeats it from the cache.
        self.run_notes = run_notes
        self.torch_degradations: list[str] = []
        self.hits = 0
        self.misses = 0
        self.stored = 0
        self._used: dict[str, str] = {}  # entry name -> source path, this run
        self._projects: dict[tuple[str, ...], _Project] = {}
        self._digests: dict[str, str | None] = {}
        self._lock = threading.Lock()
        os.makedirs(self.directory, exist_ok=True)

    def new_run(self) -> None:
        """Forget the files read so far: a run may follow another in one process (`--fix`
        checks again after editing files), and each must see the files as they are."""
        with self._lock:
            self._digests.clear()
            self._projects.clear()

    # -- keys ------------------------------------------------------------------------------
    def _entry_name(self, path: str, display: str) -> str:
        # One entry per file, display name and mode: a new result replaces the old.
        return _sha256_text(json.dumps([self._mode, os.path.abspath(path), display]))[:40] + ".json"

    def _file_key(self, path: str, display: str, settings: Settings) -> str:
        return _sha256_text(
            json.dumps(
                [self.run_key, self.cwd, os.path.abspath(path), display, settings_digest(settings, self._digest)]
            )
        )

    def _digest(self, path: str) -> str | None:
        """A file's SHA-256, read once per run (None: it cannot be read)."""
        with self._lock:
            if path in self._digests:
                return self._digests[path]
        digest = _sha256_file(path)
        with self._lock:
            self._digests[path] = digest
        return digest

    def _roots(self, path: str, settings: Settings) -> tuple[str, ...]:
        locate = module_location if is_notebook(path) else import_location
        _, roots = locate(path, settings.project_root)
        return tuple(sorted({os.path.abspath(r) for r in roots}))

    def _project(self, roots: tuple[str, ...]) -> _Project:
        with self._lock:
            known = self._projects.get(roots)
        if known is not None:
            return known
        files: set[str] = set()
        project = _Project()
        for root in roots:
            for directory, dirs, names in os.walk(root):
                dirs[:] = [d for d in dirs if not d.startswith(".") and d not in _SKIPPED_DIRS]
                files.update(os.path.join(directory, n) for n in names if n.endswith(".py"))
                if len(files) > MAX_LISTED_FILES:
                    break
        if len(files) <= MAX_LISTED_FILES:
            project.files = sorted(files)
            project.names = _sha256_text("\n".join(project.files))
        with self._lock:
            return self._projects.setdefault(roots, project)

    def _project_contents(self, project: _Project) -> str | None:
        if project.names is None:
            return None
        if project.contents is None:
            digest = hashlib.sha256()
            for path in project.files:
                digest.update(f"{path}\0{self._digest(path) or '-'}\n".encode())
            project.contents = digest.hexdigest()
        return project.contents

    def _fingerprint(self, path: str, settings: Settings, dependencies: Iterable[str], static: bool) -> dict[str, Any]:
        """What must be equal for a stored result to be reused (None values: cannot be known)."""
        project = self._project(self._roots(path, settings))
        return {
            "files": {p: self._digest(p) for p in sorted(set(dependencies) | {os.path.abspath(path)})},
            "project_names": project.names,
            "project_contents": self._project_contents(project) if static else None,
        }

    # -- lookups -----------------------------------------------------------------------------
    def lookup(self, path: str, display: str, settings: Settings | None) -> CachedResult | None:
        """The stored result of this file's check if every input is unchanged, else None."""
        if settings is None:
            self._count(hit=False)
            return None
        name = self._entry_name(path, display)
        entry = read_json(os.path.join(self.directory, name))
        try:
            found = self._valid(entry, path, display, settings)
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            self.log(f"incremental: ignoring the unreadable cache entry {name} ({type(error).__name__})")
            found = None
        with self._lock:
            self._used[name] = os.path.abspath(path)
        self._count(hit=found is not None)
        if found is not None:
            with self._lock:
                self.torch_degradations.extend(m for m in found.torch_degradations if m not in self.torch_degradations)
        return found

    def _valid(self, entry: Any, path: str, display: str, settings: Settings) -> CachedResult | None:
        if not isinstance(entry, dict) or entry.get("format") != FORMAT:
            return None
        if entry["key"] != self._file_key(path, display, settings):
            return None
        recorded = entry["fingerprint"]
        static = recorded["project_contents"] is not None
        if recorded["project_names"] is None:
            return None
        if self._fingerprint(path, settings, recorded["files"], static) != recorded:
            return None
        result = entry["result"]
        return CachedResult(
            path=os.path.abspath(path),
            findings=[finding_from_json(f) for f in result["findings"]],
            imported=[str(p) for p in result["imported"]],
            dependencies=[str(p) for p in result["dependencies"]],
            covers=[str(c) for c in result["covers"]],
            classes=int(result["classes"]),
            by_capture={str(k): int(v) for k, v in result["by_capture"].items()},
            built={str(k): int(v) for k, v in result["built"].items()},
            targets=[str(t) for t in result["targets"]],
            torch_version=str(result["torch_version"]),
            torch_degradations=[str(m) for m in result["torch_degradations"]],
            call_sites=(
                [call_site_from_json(c) for c in result["call_sites"]] if result.get("call_sites") is not None else None
            ),
        )

    def _count(self, hit: bool) -> None:
        with self._lock:
            if hit:
                self.hits += 1
            else:
                self.misses += 1

    # -- storing -----------------------------------------------------------------------------
    def store(
        self,
        path: str,
        display: str,
        settings: Settings | None,
        capture: FileCapture,
        findings: Iterable[Finding],
        dependencies: Iterable[str],
        covers: Iterable[str],
        torch_version: str,
        call_sites: Iterable[CallSite] | None = None,
    ) -> bool:
        """Keep one file's check for the next run; False when it must not be kept (it did
        not finish normally, or holds something JSON cannot carry). `call_sites`: the
        hover's verdicts, kept too when the check made them."""
        findings = list(findings)
        if settings is None or capture.settings != settings:
            return False
        if any(f.code in UNSTORED_CODES for f in [*findings, *capture.module_findings]):
            return False
        static = not self.execute or any(class_capture(cls) == "static" for cls in capture.classes)
        dependencies = sorted({*dependencies, *capture.imported})
        fingerprint = self._fingerprint(path, settings, dependencies, static)
        if fingerprint["project_names"] is None or None in fingerprint["files"].values():
            return False  # a dependency that cannot be read now cannot be compared later
        if static and fingerprint["project_contents"] is None:
            return False
        try:
            entry = {
                "format": FORMAT,
                "path": os.path.abspath(path),
                "key": self._file_key(path, display, settings),
                "fingerprint": fingerprint,
                "result": {
                    "findings": [finding_to_json(f) for f in findings],
                    "imported": list(capture.imported),
                    "dependencies": dependencies,
                    "covers": sorted(covers),
                    "classes": len(capture.classes),
                    "by_capture": capture_paths([capture]),
                    "built": build_paths([capture]),
                    "targets": list(capture.settings.targets),
                    "torch_version": torch_version,
                    "torch_degradations": list(self.run_notes()),
                    "call_sites": [call_site_to_json(c) for c in call_sites] if call_sites is not None else None,
                },
            }
            json.dumps(entry)  # a value JSON cannot carry is found before anything is written
        except (TypeError, ValueError) as error:
            self.log(f"incremental: not storing {path}: {error}")
            return False
        name = self._entry_name(path, display)
        write_json(os.path.join(self.directory, name), entry)
        with self._lock:
            self._used[name] = os.path.abspath(path)
            self.stored += 1
        return True

    # -- pruning -----------------------------------------------------------------------------
    def prune(self, now: float | None = None) -> int:
        """Drop entries of files that no longer exist, entries unused for MAX_AGE_DAYS, and
        the least recently used beyond MAX_ENTRIES; the index says which file each is for."""
        now = time.time() if now is None else now
        index_path = os.path.join(self.directory, "index.json")
        index = read_json(index_path)
        if not isinstance(index, dict):
            index = {}
        for name, path in self._used.items():
            index[name] = {"path": path, "used": now}
        try:
            present = {n for n in os.listdir(self.directory) if n.endswith(".json") and n != "index.json"}
        except OSError:
            return 0
        keep: dict[str, dict[str, Any]] = {}
        drop: set[str] = set()
        for name in present:
            record = index.get(name)
            if not isinstance(record, dict) or not isinstance(record.get("path"), str):
                # Written by a run that has not updated the index yet, or foreign: kept a day.
                if _age(os.path.join(self.directory, name), now) > 86400:
                    drop.add(name)
                continue
            used = record.get("used")
            if (
                not isinstance(used, (int, float))
                or now - used > MAX_AGE_DAYS * 86400
                or name not in self._used
                and not os.path.exists(record["path"])
            ):
                drop.add(name)
            else:
                keep[name] = record
        if len(keep) > MAX_ENTRIES:
            by_use = sorted(keep, key=lambda n: keep[n]["used"])
            for name in by_use[: len(keep) - MAX_ENTRIES]:
                drop.add(name)
                del keep[name]
        for name in drop:
            try:
                os.remove(os.path.join(self.directory, name))
            except OSError:
                pass
        write_json(index_path, keep)
        return len(drop)

    def holds_text(self, path: str, text: str) -> bool:
        """Whether `text` (an editor's buffer) is byte for byte the file on disk, which is
        what the stored results are keyed by."""
        return self._digest(os.path.abspath(path)) == _sha256_text(text)

    def summary(self) -> str:
        total = self.hits + self.misses
        return f"{self.hits} of {total} file{'s' if total != 1 else ''} from the cache"


def _age(path: str, now: float) -> float:
    try:
        return now - os.stat(path).st_mtime
    except OSError:
        return 0.0

"""The learner's own copies of the chapters, which `make lab` opens.

    python tools/study.py copies [--dir my-notebooks]   # make or refresh the learner's copies
    python tools/study.py lab-settings                  # JupyterLab settings of the course's venv

A learner's copy is the chapter's student copy with the teaching outputs kept
(`nbtool.student_copy(nb, keep_teaching_outputs=True)`): the answers replaced by
`raise NotImplementedError`, the outputs of the exercise and check cells cleared, every
other output as committed, the `instructor` cells dropped.

What the learner wrote is never overwritten or deleted. The folder keeps a manifest
(`.manifest.json`) with the SHA-256 of every file this command wrote; a file whose bytes
differ from what was written is the learner's:

- a chapter with no copy yet (new, or its copy deleted) gets one;
- a copy the learner has not changed is refreshed when the chapter changed;
- a copy the learner changed stays as it is, byte for byte; when the chapter changed, its
  new version is written beside it as `NN_name.new.ipynb` (`.new-2`, ... when the learner
  has changed that one too), once per version, with one line that says so;
- a copy of a chapter that no longer exists (withdrawn, renumbered) is removed only if the
  learner never changed it; a changed one stays, with one line that says so (once).

A damaged manifest is read as empty, which only ever keeps more files as the learner's.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
import nbtool  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
STUDY_DIR = ROOT / "my-notebooks"
MANIFEST = ".manifest.json"
MANIFEST_VERSION = 1


def learner_copy(nb) -> bytes:
    """The bytes of the learner's copy of `nb` (deterministic: same notebook, same bytes)."""
    copy = nbtool.student_copy(nb, keep_teaching_outputs=True)
    return (nbformat.writes(copy) + "\n").encode("utf-8")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _file_sha(path: Path) -> str | None:
    try:
        return _sha(path.read_bytes())
    except FileNotFoundError:
        return None


def is_chapter_copy(name: str) -> bool:
    """`03_x.ipynb` is a chapter copy; `03_x.new.ipynb` (a new version beside it) is not."""
    return name.endswith(".ipynb") and "." not in name[: -len(".ipynb")]


def beside_name(name: str, n: int) -> str:
    stem = name[: -len(".ipynb")]
    return f"{stem}.new.ipynb" if n == 1 else f"{stem}.new-{n}.ipynb"


@dataclass
class Report:
    folder: Path
    created: list[str] = field(default_factory=list)
    restored: list[str] = field(default_factory=list)
    refreshed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    beside: list[tuple[str, str]] = field(default_factory=list)  # (their copy, new version)
    orphaned: list[str] = field(default_factory=list)  # changed copies of withdrawn chapters
    manifest_damaged: bool = False

    def lines(self) -> list[str]:
        where = _shown(self.folder)
        parts = [f"{label} {len(names)}" for label, names in (
            ("新建", self.created), ("恢复", self.restored), ("更新", self.refreshed),
            ("保留你改过的", self.kept), ("不变", self.unchanged),
            ("删去已不存在章节的未改动副本", self.removed)) if names]
        out = []
        if self.manifest_damaged:
            out.append(f"{where}{MANIFEST} 无法读取：凡是与课程版本不同的文件都当作你的，一律保留")
        out.append(f"学习副本在 {where}（答案已去掉，你的修改只保存在这里）：" + "，".join(parts))
        out.extend(f"{mine} 有新版本：你的副本不变，新版本在 {where}{new}"
                   for mine, new in self.beside)
        out.extend(f"{name} 已不是课程中的章节（可能换了编号或名称）：你改过它，所以它保持不变"
                   for name in self.orphaned)
        return out


def _shown(folder: Path) -> str:
    try:
        return f"{folder.relative_to(Path.cwd())}/"
    except ValueError:
        return f"{folder}/"


def _load_manifest(folder: Path) -> tuple[dict, bool]:
    path = folder / MANIFEST
    if not path.exists():
        return {}, False
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        files = data["files"]
        if data.get("version") != MANIFEST_VERSION or not isinstance(files, dict) or not all(
                isinstance(k, str) and isinstance(v, dict) and isinstance(v.get("sha256"), str)
                for k, v in files.items()):
            raise ValueError("unexpected shape")
        return files, False
    except (ValueError, KeyError, TypeError, OSError):
        return {}, True


def _write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _ours(path: Path, entry: dict | None) -> bool:
    """The file exists and holds exactly the bytes this command last wrote there."""
    return entry is not None and _file_sha(path) == entry["sha256"]


def sync(sources: list[Path], folder: Path) -> Report:
    """Make or refresh the learner's copies of the chapters `sources` in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    files, damaged = _load_manifest(folder)
    report = Report(folder=folder, manifest_damaged=damaged)
    chapters = {}
    for path in sources:
        chapters[path.name] = learner_copy(nbformat.read(path, as_version=4))

    for name, data in chapters.items():
        target, offered = folder / name, _sha(data)
        entry = files.get(name)
        current = _file_sha(target)
        if current is None:
            _write(target, data)
            (report.restored if entry else report.created).append(name)
            files[name] = {"sha256": offered, "offered": offered}
        elif current == offered:
            report.unchanged.append(name)
            files[name] = {"sha256": offered, "offered": offered}
        elif entry is not None and current == entry["sha256"]:
            _write(target, data)  # untouched by the learner: the newer version replaces it
            report.refreshed.append(name)
            files[name] = {"sha256": offered, "offered": offered}
        else:
            report.kept.append(name)
            if entry is None:  # theirs, and we never wrote it (or the manifest was lost)
                entry = files[name] = {"sha256": "", "offered": ""}
            if entry.get("offered") != offered:
                new = _place_beside(folder, files, name, data)
                report.beside.append((name, new))
                entry["offered"] = offered

    for name in sorted(files):  # copies of chapters that no longer exist
        if name in chapters or files[name].get("beside") in chapters:
            continue
        path = folder / name
        if _ours(path, files[name]):
            path.unlink()
            report.removed.append(name)
        elif path.exists() and "beside" not in files[name]:
            report.orphaned.append(name)
        files.pop(name)  # a changed one stays on disk as the learner's own file

    _write(folder / MANIFEST, (json.dumps(
        {"version": MANIFEST_VERSION, "files": files}, indent=1, sort_keys=True) + "\n").encode())
    return report


def _place_beside(folder: Path, files: dict, name: str, data: bytes) -> str:
    """Write `data` as the first `name.new[-n].ipynb` that is free or still ours; its name."""
    n = 1
    while True:
        new = beside_name(name, n)
        path = folder / new
        if not path.exists() or _ours(path, files.get(new)):
            _write(path, data)
            files[new] = {"sha256": _sha(data), "beside": name}
            return new
        n += 1


LAB_OVERRIDES = {
    # JupyterLab 4 asks on first start whether to fetch "official Jupyter news"; the
    # course's lab never fetches it (no prompt, no request to jupyter.org).
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False},
}


def write_lab_settings(prefix: Path) -> Path:
    """Write the course's JupyterLab overrides into the environment at `prefix`; the path.

    Keys already there (someone's own overrides) are kept unless the course sets them."""
    path = prefix / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        current = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(current, dict):
            current = {}
    except (OSError, ValueError):
        current = {}
    for plugin, settings in LAB_OVERRIDES.items():
        current.setdefault(plugin, {}).update(settings)
    path.write_text(json.dumps(current, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_copies = sub.add_parser("copies", help="make or refresh the learner's copies")
    p_copies.add_argument("--dir", type=Path, default=STUDY_DIR)
    p_settings = sub.add_parser("lab-settings", help="JupyterLab overrides of a venv")
    p_settings.add_argument("--prefix", type=Path, default=Path(sys.prefix))
    args = parser.parse_args(argv)
    if args.cmd == "copies":
        report = sync(nbtool.notebook_paths(), args.dir.resolve())
        for line in report.lines():
            print(line)
        return 0
    write_lab_settings(args.prefix)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

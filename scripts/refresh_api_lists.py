"""Refresh the API reference lists that `trainmedic lint` checks flags and variables against.

The lists live in `src/trainmedic/trees/apidata/*.json`. Each records where its names were read
(repository, path, commit or release, date). This script turns a saved copy of an upstream file
into names and merges them into the JSON, keeping the hand-written facts (version bounds, wrong
flags, myths) that cite their own sources. Third-party files are read, never copied into the repo.

    # Megatron-LM: a saved megatron/training/arguments.py (or a list of flags, one per line)
    python scripts/refresh_api_lists.py megatron --version 0.15 --repo NVIDIA/Megatron-LM \\
        --commit 000c4ac2... --read 2026-11-30 arguments.py
    # Megatron-DeepSpeed: its megatron/arguments.py
    python scripts/refresh_api_lists.py megatron-deepspeed --repo ... --commit ... arguments.py
    # NCCL: docs/userguide/source/env.rst, optionally the names in a libnccl.so (`strings`)
    python scripts/refresh_api_lists.py nccl --release 2.32 --repo NVIDIA/nccl --commit ... \\
        env.rst [--binary-names names.txt]
    # DeepSpeed: an unpacked sdist; TransformerEngine: an unpacked wheel (+ `strings` of its .so)
    python scripts/refresh_api_lists.py deepspeed --release 0.19.8 deepspeed-0.19.8/
    python scripts/refresh_api_lists.py transformer-engine --release 2.20.2 te/ [--binary-names f]
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "src" / "trainmedic" / "trees" / "apidata"
FLAG_RE = re.compile(r"^--[A-Za-z0-9][A-Za-z0-9_-]*$")
DEPRECATED_RE = re.compile(r"^\s*(deprecated|old .* do not use)", re.IGNORECASE)


# -- argparse flags -------------------------------------------------------------------------

def flags_from_arguments_py(text: str) -> tuple[list[str], dict[str, str]]:
    """Every option string of every `add_argument` call, and the ones whose help says deprecated.

    `argparse.BooleanOptionalAction` also accepts `--no-NAME`, so that form is added too.
    """
    flags: list[str] = []
    deprecated: dict[str, str] = {}
    for node in ast.walk(ast.parse(text)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument"):
            continue
        names = [a.value for a in node.args if isinstance(a, ast.Constant)
                 and isinstance(a.value, str) and a.value.startswith("--")]
        keywords = {k.arg: k.value for k in node.keywords if k.arg}
        action = keywords.get("action")
        if isinstance(action, ast.Attribute) and action.attr == "BooleanOptionalAction":
            names += ["--no-" + n[2:] for n in names]
        flags += names
        help_text = _joined_string(keywords.get("help"))
        if help_text and DEPRECATED_RE.match(help_text):
            for name in names:
                deprecated[name] = help_text.strip()[:160]
    return flags, deprecated


def _joined_string(node: ast.expr | None) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _joined_string(node.left) + _joined_string(node.right)
    if isinstance(node, ast.JoinedStr):
        return "".join(str(v.value) for v in node.values if isinstance(v, ast.Constant))
    return ""


def read_flags(path: Path) -> tuple[list[str], dict[str, str]]:
    """A `.py` file is parsed; anything else is a list of flags separated by white space."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".py":
        return flags_from_arguments_py(text)
    flags = [w for w in text.split() if FLAG_RE.match(w)]
    return flags, {}


# -- environment variables ------------------------------------------------------------------

RST_HEADING_RE = re.compile(r"^(NCCL_[A-Z0-9_]+)[^\n]*\n-{4,}\s*\n(?:\((since [^)]*)\))?", re.M)
# Names in libnccl that are enum constants or subsystem names, not environment variables.
NCCL_NOT_VARIABLES = re.compile(
    r"^NCCL_(PARAM_|LOG_|CFT_|GIN_TYPE_|GIN_CONNECTION_|NET_DEVICE_|ENCRYPTION_MODE_|CRYPT_|"
    r"PROFILER_THREAD_|IB_RAIL_POLICY_|NET_MERGE_POLICY_|SIGNAL)|^NCCL_(ALL|ALLOC|ALLOC_HOST|"
    r"BOOTSTRAP|CALL|COLL|DESTROY|GRAPH|INIT|NVLS|P2P|PROFILE|PROXY|RAS|REG|SHM|TUNING)$")


def nccl_from_env_rst(text: str) -> dict[str, str | None]:
    """Documented variables (section headings) with the release the docs say they appeared in."""
    found: dict[str, str | None] = {}
    for match in RST_HEADING_RE.finditer(text):
        since = match.group(2)
        version = re.search(r"\d+\.\d+(\.\d+)?", since) if since else None
        found[match.group(1)] = version.group(0) if version else None
    return found


def names_from_file(path: Path, prefix: str) -> list[str]:
    pattern = re.compile(rf"\b{prefix}[A-Z0-9_]*[A-Z0-9]\b")
    return sorted(set(pattern.findall(path.read_text(encoding="utf-8", errors="replace"))))


def names_in_tree(folder: Path, prefix: str, suffixes: tuple[str, ...]) -> list[str]:
    """Quoted names (`"NVTE_X"` or `'NVTE_X'`) in the source files under a folder."""
    pattern = re.compile(rf"[\"']({prefix}[A-Z0-9_]*[A-Z0-9])[\"']")
    names: set[str] = set()
    for path in folder.rglob("*"):
        if path.suffix in suffixes and path.is_file():
            names |= set(pattern.findall(path.read_text(encoding="utf-8", errors="replace")))
    return sorted(names)


# -- DeepSpeed config keys ------------------------------------------------------------------

def deepspeed_keys(root: Path) -> list[str]:
    """Keys of a ds_config: module-level string constants (`NAME = "key"`) of its `constants.py`
    and `config.py` files and the fields (and field aliases) of every pydantic
    `DeepSpeedConfigModel`, outside the inference engine."""
    keys: set[str] = set()
    package = root / "deepspeed"
    for path in package.rglob("*.py"):
        if "inference" in path.parts or "ops" in path.parts:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
        if path.name in ("constants.py", "config.py"):
            for stmt in tree.body:
                if (isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant)
                        and isinstance(stmt.value.value, str)
                        and re.fullmatch(r"[a-z][a-z0-9_]*", stmt.value.value)
                        and all(isinstance(t, ast.Name) and t.id.isupper() for t in stmt.targets)):
                    keys.add(stmt.value.value)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and any(
                    isinstance(b, ast.Name) and b.id == "DeepSpeedConfigModel" for b in node.bases):
                keys |= _model_fields(node)
    return sorted(keys)


def _model_fields(cls: ast.ClassDef) -> set[str]:
    fields: set[str] = set()
    for item in cls.body:
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            if not item.target.id.startswith("_"):
                fields.add(item.target.id)
            if isinstance(item.value, ast.Call):
                for keyword in item.value.keywords:
                    if keyword.arg == "alias" and isinstance(keyword.value, ast.Constant):
                        fields.add(str(keyword.value.value))
    return fields


# -- writing --------------------------------------------------------------------------------

def load(name: str) -> dict:
    path = DATA / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else {"api": name}


def dump(data: dict) -> str:
    """Indented JSON, with short flat lists (a flag's versions) kept on one line."""
    def collapse(match: re.Match[str]) -> str:
        compact = json.dumps(json.loads(match.group(0)))
        return compact if len(compact) <= 80 else match.group(0)

    return re.sub(r"\[[^\[\]{}]*\]", collapse, json.dumps(data, indent=1)) + "\n"


def save(name: str, data: dict) -> None:
    DATA.mkdir(parents=True, exist_ok=True)
    (DATA / f"{name}.json").write_text(dump(data))
    print(f"wrote {DATA / (name + '.json')}", file=sys.stderr)


def source(args: argparse.Namespace, path: str) -> dict[str, str]:
    return {k: v for k, v in {"repo": args.repo, "path": path, "commit": args.commit,
                              "release": getattr(args, "release", None), "read": args.read,
                              "note": args.note}.items() if v}


def cmd_megatron(args: argparse.Namespace) -> None:
    data = load("megatron-lm")
    flags, deprecated = read_flags(Path(args.file))
    flags = [f for f in flags if f not in set(args.exclude)]
    snapshots = [s for s in data.get("snapshots", []) if s["version"] != args.version]
    snapshots.append({"version": args.version,
                      **source(args, args.upstream_path or "megatron/training/arguments.py")})
    snapshots.sort(key=lambda s: tuple(int(p) for p in s["version"].split(".")))
    table: dict[str, list[str]] = {f: [v for v in vs if v != args.version]
                                   for f, vs in data.get("flags", {}).items()}
    for flag in flags:
        table.setdefault(flag, []).append(args.version)
    order = [s["version"] for s in snapshots]
    data["snapshots"] = snapshots
    data["flags"] = {f: sorted(set(vs), key=order.index)
                     for f, vs in sorted(table.items()) if vs}
    data["deprecated"] = {**data.get("deprecated", {}), **deprecated}
    save("megatron-lm", data)


def cmd_megatron_deepspeed(args: argparse.Namespace) -> None:
    data = load("megatron-deepspeed")
    flags, deprecated = read_flags(Path(args.file))
    data["source"] = source(args, args.upstream_path or "megatron/arguments.py")
    data["flags"] = sorted(set(flags) | set(data.get("launcher_flags", [])))
    data["deprecated"] = deprecated
    save("megatron-deepspeed", data)


def cmd_nccl(args: argparse.Namespace) -> None:
    data = load("nccl")
    text = Path(args.file).read_text(encoding="utf-8")
    if args.file.endswith(".rst"):
        documented = nccl_from_env_rst(text)
    else:  # a list: one `NAME [since]` per line
        documented = {}
        for line in text.splitlines():
            words = line.split()
            if words and words[0].startswith("NCCL_"):
                since = words[1] if len(words) > 1 and words[1][0].isdigit() else None
                documented[words[0]] = since
    data["source"] = source(args, "docs/userguide/source/env.rst")
    data["documented"] = {k: documented[k] for k in sorted(documented)}
    if args.binary_names:
        names = [n for n in names_from_file(Path(args.binary_names), "NCCL_")
                 if not NCCL_NOT_VARIABLES.match(n) and n not in documented]
        data["read_by_library"] = {"release": args.binary_release, "names": names}
    save("nccl", data)


def cmd_deepspeed(args: argparse.Namespace) -> None:
    data = load("deepspeed")
    data["source"] = source(args, "deepspeed/ (constants.py files, DeepSpeedConfigModel fields)")
    data["config_keys"] = deepspeed_keys(Path(args.folder))
    save("deepspeed", data)


def cmd_transformer_engine(args: argparse.Namespace) -> None:
    data = load("transformer-engine")
    names = set(names_in_tree(Path(args.folder), "NVTE_", (".py",)))
    if args.binary_names:
        names |= set(names_from_file(Path(args.binary_names), "NVTE_"))
    data["source"] = source(args, "transformer_engine/ (Python sources and libtransformer_engine)")
    data["variables"] = sorted(names)
    save("transformer-engine", data)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="api", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--repo")
        p.add_argument("--commit")
        p.add_argument("--read", help="date the upstream file was read (YYYY-MM-DD)")
        p.add_argument("--note")
        p.add_argument("--upstream-path", help="path of the file in its repository")

    p = sub.add_parser("megatron")
    common(p)
    p.add_argument("--version", required=True, help="core version the snapshot stands for")
    p.add_argument("--exclude", nargs="*", default=[], help="fork-only flags to leave out")
    p.add_argument("file")
    p.set_defaults(run=cmd_megatron)
    p = sub.add_parser("megatron-deepspeed")
    common(p)
    p.add_argument("file")
    p.set_defaults(run=cmd_megatron_deepspeed)
    p = sub.add_parser("nccl")
    common(p)
    p.add_argument("--release")
    p.add_argument("--binary-names", help="output of `strings libnccl.so.2`")
    p.add_argument("--binary-release", help="the nvidia-nccl wheel version the binary came from")
    p.add_argument("file")
    p.set_defaults(run=cmd_nccl)
    p = sub.add_parser("deepspeed")
    common(p)
    p.add_argument("--release")
    p.add_argument("folder")
    p.set_defaults(run=cmd_deepspeed)
    p = sub.add_parser("transformer-engine")
    common(p)
    p.add_argument("--release")
    p.add_argument("--binary-names")
    p.add_argument("folder")
    p.set_defaults(run=cmd_transformer_engine)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()

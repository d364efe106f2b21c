"""The lane's own tokenizer for the bench: fetched from the model snapshot on the node.

The bench cuts its prompts in tokens; with any tokenizer but the served model's, a "65K" depth is
something else in the engine's tokens (the simulator's byte tokenizer made a real MiMo depth a
quarter of its label). The recipe names the model repo and revision and the cluster its model
cache, so the snapshot's tokenizer files are read from the head node over SSH, once per revision,
into the user cache.
"""

from __future__ import annotations

import base64
import binascii
import shlex
from pathlib import Path

from cockpit import paths
from cockpit.errors import InputError
from cockpit.plan import LanePlan
from cockpit.ssh import SshError, SshPool

FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")
"""What `tokenizers` and llama-benchy's `AutoTokenizer` read; tokenizer.json is required."""
MARK = "@@cockpit-file "


def snapshot_dir(plan: LanePlan, model_cache: str) -> str:
    """The lane's snapshot folder on its nodes (the host side of the model-cache mount)."""
    return plan.recipe.model.snapshot_path(model_cache)


def fetch_command(directory: str) -> str:
    """One shell line printing each tokenizer file present as a marker line and its base64."""
    files = " ".join(shlex.quote(f) for f in FILES)
    return (
        f"cd {shlex.quote(directory)} && for f in {files}; do "
        f'if [ -f "$f" ]; then printf \'%s%s\\n\' {shlex.quote(MARK)} "$f"; '
        'base64 -w0 < "$f"; echo; fi; done'
    )


def parse_files(output: str) -> dict[str, bytes]:
    """{name: content} from `fetch_command`'s output (names outside FILES are ignored)."""
    found: dict[str, bytes] = {}
    lines = output.splitlines()
    for i, line in enumerate(lines[:-1]):
        name = line.removeprefix(MARK)
        if line.startswith(MARK) and name in FILES:
            try:
                found[name] = base64.b64decode(lines[i + 1], validate=True)
            except binascii.Error:
                continue
    return found


def cache_dir(plan: LanePlan, root: Path | None = None) -> Path:
    model = plan.recipe.model
    base = root or paths.tokenizer_cache_dir()
    return base / f"{model.repo.replace('/', '--')}@{model.revision}"


async def lane_tokenizer(
    pool: SshPool, plan: LanePlan, model_cache: str, cache_root: Path | None = None
) -> Path:
    """The folder holding the lane's tokenizer files (fetched from the head node if needed)."""
    target = cache_dir(plan, cache_root)
    if (target / "tokenizer.json").is_file():
        return target
    node = plan.ranks[0].node
    directory = snapshot_dir(plan, model_cache)
    try:
        result = await pool.run(node, fetch_command(directory), timeout=60.0)
    except SshError as exc:
        raise InputError(f"cannot read the lane's tokenizer on {node}: {exc}") from exc
    files = parse_files(result.stdout) if result.ok else {}
    if "tokenizer.json" not in files:
        raise InputError(
            f"{node}:{directory} holds no tokenizer.json (is the snapshot there?): pass "
            "--tokenizer DIR with the served model's tokenizer"
        )
    target.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        tmp = target / f".{name}.tmp"
        tmp.write_bytes(data)
        tmp.replace(target / name)
    return target

"""The `docker` client's argument parsing (pflag's): options and positionals, bundled short
flags, the flags of `docker run` that take a value, `-e`/`--label`/`--env-file` entries."""

from __future__ import annotations

import os
import re

from cockpit_sim.tools.docker.output import DockerError
from cockpit_sim.tools.envfile import EnvFileError, read_env_file

RUN_VALUE_FLAGS = {
    "--name",
    "--gpus",
    "--network",
    "--net",
    "--ipc",
    "-v",
    "--volume",
    "-e",
    "--env",
    "--env-file",
    "--label",
    "-l",
    "--shm-size",
    "--ulimit",
    "--entrypoint",
    "-w",
    "--workdir",
    "--restart",
    "--pull",
    "-p",
    "--publish",
    "--device",
    "--cap-add",
    "--cap-drop",
    "-u",
    "--user",
    "--hostname",
    "-h",
    "--memory",
    "-m",
    "--cpus",
    "--security-opt",
    "--runtime",
    "--pid",
    "--log-driver",
    "--log-opt",
    "--mount",
    "--add-host",
    "--stop-timeout",
    "--platform",
    "--tmpfs",
    "--group-add",
}


def split_options(
    args: list[str], value_flags: set[str], stop_at_positional: bool
) -> tuple[dict[str, list[str]], list[str]]:
    """Options (`--x v`, `--x=v`, `-x v`, bare flags) and positionals; with `stop_at_positional`
    everything after the first positional is positional (the container's command)."""
    args = list(args)
    options: dict[str, list[str]] = {}
    positionals: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            positionals.extend(args[i + 1 :])
            break
        options_here = not positionals or not stop_at_positional
        if options_here and re.fullmatch(r"-[a-zA-Z]{2,}.*", arg) and arg not in value_flags:
            args[i : i + 1] = bundled(arg, value_flags)  # `-aq`, `-it`, `-eA=1` (pflag)
            continue
        if arg.startswith("-") and arg != "-" and not positionals:
            name, eq, value = arg.partition("=")
            if name in value_flags:
                if not eq:
                    i += 1
                    if i >= len(args):
                        raise DockerError(f"flag needs an argument: {name}", 125)
                    value = args[i]
                options.setdefault(name, []).append(value)
            else:
                options.setdefault(name, []).append(value if eq else "true")
        elif arg.startswith("-") and arg != "-" and not stop_at_positional:
            name, eq, value = arg.partition("=")
            if name in value_flags and not eq:
                i += 1
                value = args[i] if i < len(args) else ""
            options.setdefault(name, []).append(value if (eq or name in value_flags) else "true")
        else:
            positionals.append(arg)
            if stop_at_positional:
                positionals.extend(args[i + 1 :])
                break
        i += 1
    return options, positionals


def bundled(arg: str, value_flags: set[str]) -> list[str]:
    """`-aq` → `-a -q`; a letter that takes a value takes the rest (`-eA=1` → `-e A=1`)."""
    expanded = []
    for index, letter in enumerate(arg[1:], start=1):
        flag = "-" + letter
        if flag in value_flags:
            rest = arg[index + 1 :]
            return [*expanded, flag, *([rest] if rest else [])]
        expanded.append(flag)
    return expanded


def opt(options: dict[str, list[str]], *names: str) -> str | None:
    for name in names:
        if name in options:
            return options[name][-1]
    return None


def opts(options: dict[str, list[str]], *names: str) -> list[str]:
    return [v for name in names for v in options.get(name, [])]


def env_files(paths: list[str]) -> list[str]:
    """The entries of every `--env-file`, in order (read here, as the docker client does)."""
    try:
        return [entry for path in paths for entry in read_env_file(path)]
    except EnvFileError as exc:
        raise DockerError(f"docker: {exc}.\nSee 'docker run --help'.", 125) from None


def key_values(items: list[str]) -> dict[str, str]:
    result = {}
    for item in items:
        key, _, value = item.partition("=")
        result[key] = value if _ else os.environ.get(key, "")
    return result

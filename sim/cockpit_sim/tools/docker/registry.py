"""The simulated registry (manifests only, in the fleet's registry.json) and `docker pull`."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from cockpit_sim.tools.docker.options import split_options
from cockpit_sim.tools.docker.output import DockerError, out
from cockpit_sim.tools.nodestate import REGISTRY_DOWN, NodeState, digest_matches, parse_ref


class RegistryError(Exception):
    """The registry could not give the manifest; the message is the daemon's reason."""


def fleet_dir() -> Path:
    return Path(os.environ["COCKPIT_SIM_FLEET_DIR"])


def registry_entries() -> dict[str, str]:
    """The simulated registry: `repo@sha256:…` (and `repo:tag`) → the image id it names."""
    try:
        return json.loads((fleet_dir() / "registry.json").read_text())
    except (KeyError, FileNotFoundError):
        return {}


def registry_host(repo: str) -> str:
    head = repo.split("/", 1)[0]
    named = "/" in repo and ("." in head or ":" in head or head == "localhost")
    return head if named else "registry-1.docker.io"


def unreachable(repo: str) -> str:
    """What the daemon says when the registry does not answer: a loopback or ip:port registry
    refuses the connection (plain http, insecure by default on 127.0.0.0/8); a named one cannot
    be looked up, as on a node cut off from it."""
    host = registry_host(repo)
    if re.fullmatch(r"[\d.]+(:\d+)?|localhost(:\d+)?", host):
        return f'Get "http://{host}/v2/": dial tcp {host}: connect: connection refused'
    return f'Get "https://{host}/v2/": dial tcp: lookup {host}: no such host'


def pull(state: NodeState, ref: str) -> list[str]:
    """Pull `ref` (by digest or tag) from the simulated registry; return the progress lines.

    The registry holds manifests only: a pull succeeds when the image id its manifest names is
    already on the node (as after `docker load`), and re-attaches the digest (and the tag),
    moving no layers. Raises RegistryError with the daemon's reason otherwise."""
    repo, tag, digest = parse_ref(ref)
    if os.environ.get("COCKPIT_SIM_FLEET_DIR") is None or (fleet_dir() / REGISTRY_DOWN).exists():
        raise RegistryError(unreachable(repo))
    entries = registry_entries()
    wanted = f"{repo}:{tag or 'latest'}"
    if digest is not None:
        full, image_id = next(
            ((k, v) for k, v in entries.items() if digest_matches(k, repo, digest)), ("", None)
        )
    else:
        image_id = entries.get(wanted)
        full = next(
            (
                k
                for k, v in entries.items()
                if v == image_id and "@" in k and k.partition("@")[0] == repo
            ),
            "",
        )
    if image_id is None:
        raise RegistryError(f"manifest for {ref} not found: manifest unknown: manifest unknown")
    with state.locked():
        images = state.images()
        image = next((i for i in images if i["Id"] == image_id), None)
        if image is None:
            raise RegistryError(
                f"the simulated registry holds manifests only: the layers of {ref} "
                f"({image_id[:19]}) are not on this node"
            )
        before = (list(image["RepoDigests"]), list(image["RepoTags"]))
        if full and full not in image["RepoDigests"]:
            image["RepoDigests"].append(full)
        if digest is None:
            for other in images:
                other["RepoTags"] = [t for t in other["RepoTags"] if t != wanted]
            image["RepoTags"].append(wanted)
        changed = (image["RepoDigests"], image["RepoTags"]) != before
        if changed:
            state.write("images.json", images)
    path = repo.split("/", 1)[1] if registry_host(repo) != "registry-1.docker.io" else repo
    status = "Downloaded newer image for" if changed else "Image is up to date for"
    return [
        f"{ref if digest else tag or 'latest'}: Pulling from {path}\n",
        f"Digest: {full.partition('@')[2] or digest}\n",
        f"Status: {status} {ref}\n",
    ]


def cmd_pull(state: NodeState, args: list[str]) -> int:
    options, refs = split_options(args, {"--platform"}, False)
    if len(refs) != 1:
        raise DockerError(
            "\"docker pull\" requires exactly 1 argument.\nSee 'docker pull --help'.\n\n"
            "Usage:  docker pull [OPTIONS] NAME[:TAG|@DIGEST]\n\n"
            "Pull an image or a repository from a registry"
        )
    try:
        lines = pull(state, refs[0])
    except RegistryError as exc:
        raise DockerError(f"Error response from daemon: {exc}") from None
    if "-q" not in options and "--quiet" not in options:
        out("".join(lines))
    out(f"{refs[0]}\n")
    return 0

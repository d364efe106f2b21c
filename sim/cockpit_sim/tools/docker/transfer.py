"""Moving an image without a registry: `docker save` streams a tar archive of the image's size
(config, one deterministic layer, manifest), `docker load` verifies and records one."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import IO

from cockpit_sim.tools.docker.options import opt, split_options
from cockpit_sim.tools.docker.output import DockerError, out
from cockpit_sim.tools.nodestate import NodeState, Record, find_image, parse_ref

CHUNK = 1 << 20


def public(record: Record) -> Record:
    """A record as `docker inspect` prints it (the simulator's own keys removed)."""
    return {k: v for k, v in record.items() if not k.startswith("Sim")}


def layer_bytes(image_id: str, size: int) -> Iterator[bytes]:
    """Deterministic filler standing for the image's layers (same id, same bytes)."""
    import hashlib

    block = b"".join(hashlib.sha256(f"{image_id}:{i}".encode()).digest() for i in range(2048))
    while size > 0:
        piece = block[: min(size, len(block))]
        size -= len(piece)
        yield piece


def _tar_header(name: str, size: int) -> bytes:
    import tarfile

    info = tarfile.TarInfo(name)
    info.size = size
    info.mtime = 0
    info.mode = 0o644
    return info.tobuf(format=tarfile.USTAR_FORMAT)


def _padded(data_len: int) -> int:
    return -data_len % 512


def save_stream(image: Record, tags: list[str]) -> Iterator[bytes]:
    """A `docker save` archive of exactly SimBytes bytes: config blob, one layer, manifest."""
    import hashlib

    image_id = image["Id"].removeprefix("sha256:")
    config = json.dumps(
        {
            **public(image),
            "RepoDigests": [],
            "SimEngine": image.get("SimEngine"),
            "SimRepo": image.get("SimRepo"),
        }
    ).encode()
    config_name = f"blobs/sha256/{image_id}"

    def manifest_for(layer):
        return json.dumps(
            [{"Config": config_name, "RepoTags": tags or None, "Layers": [f"blobs/sha256/{layer}"]}]
        ).encode()

    manifest_len = len(manifest_for("0" * 64))
    fixed = 512 * 3 + len(config) + _padded(len(config)) + manifest_len + _padded(manifest_len)
    layer_size = max(0, image["SimBytes"] - fixed - 1024)
    layer_size -= layer_size % 512
    digest = hashlib.sha256()
    for piece in layer_bytes(image_id, layer_size):
        digest.update(piece)
    layer = digest.hexdigest()
    manifest = manifest_for(layer)
    yield _tar_header(config_name, len(config)) + config + b"\0" * _padded(len(config))
    yield _tar_header(f"blobs/sha256/{layer}", layer_size)
    yield from layer_bytes(image_id, layer_size)
    yield _tar_header("manifest.json", len(manifest)) + manifest + b"\0" * _padded(len(manifest))
    yield b"\0" * 1024


def cmd_save(state: NodeState, args: list[str]) -> int:
    options, refs = split_options(args, {"-o", "--output"}, False)
    target = opt(options, "-o", "--output")
    if target is None and sys.stdout.isatty():
        raise DockerError("cowardly refusing to save to a terminal. Use the -o flag or redirect")
    images = state.images()
    chosen: dict[str, Record] = {}
    tags: list[str] = []  # only the references given as tags travel in the archive
    for ref in refs:
        image = find_image(images, ref)
        if image is None:
            raise DockerError("Error response from daemon: reference does not exist")
        chosen[image["Id"]] = image
        repo, tag, digest = parse_ref(ref)
        named = f"{repo}:{tag or 'latest'}"
        if digest is None and named in image["RepoTags"] and named not in tags:
            tags.append(named)
    if len(chosen) != 1:
        raise DockerError("docker save: this simulator saves exactly one image per archive")
    sink: IO[bytes] = open(target, "wb") if target else sys.stdout.buffer  # noqa: SIM115
    try:
        for piece in save_stream(next(iter(chosen.values())), tags):
            sink.write(piece)
        sink.flush()
    except BrokenPipeError:
        raise DockerError("write /dev/stdout: broken pipe") from None
    finally:
        if target:
            sink.close()
    return 0


def read_archive(source: IO[bytes]) -> tuple[Record, list[str]]:
    """Parse and verify a `docker save` stream: the image config and its tags."""
    import hashlib
    import tarfile

    config: Record | None = None
    manifest: list[Record] | None = None
    hashes: dict[str, str] = {}
    try:
        with tarfile.open(fileobj=source, mode="r|") as archive:
            for member in archive:
                handle = archive.extractfile(member)
                if handle is None:
                    continue
                if member.name == "manifest.json":
                    manifest = json.loads(handle.read())
                elif member.size < 1 << 20:
                    data = handle.read()
                    hashes[member.name] = hashlib.sha256(data).hexdigest()
                    config = json.loads(data) if config is None else config
                else:
                    digest = hashlib.sha256()
                    while piece := handle.read(CHUNK):
                        digest.update(piece)
                    hashes[member.name] = digest.hexdigest()
    except (tarfile.TarError, EOFError, json.JSONDecodeError, OSError):
        raise DockerError("Error processing tar file(exit status 1): unexpected EOF") from None
    if manifest is None or config is None:
        raise DockerError("Error processing tar file(exit status 1): unexpected EOF")
    for layer in manifest[0]["Layers"]:
        if hashes.get(layer) != layer.rsplit("/", 1)[-1]:
            raise DockerError(f"Error processing tar file: layer {layer} digest mismatch")
    return config, list(manifest[0]["RepoTags"] or [])


def cmd_load(state: NodeState, args: list[str]) -> int:
    options, _ = split_options(args, {"-i", "--input"}, False)
    source = opt(options, "-i", "--input")
    if source is None and sys.stdin.isatty():
        raise DockerError("requested load from stdin, but stdin is empty")
    with open(source, "rb") if source else sys.stdin.buffer as stream:
        config, tags = read_archive(stream)
    with state.locked():
        images = state.images()
        for image in images:
            image["RepoTags"] = [t for t in image["RepoTags"] if t not in tags]
        existing = next((i for i in images if i["Id"] == config["Id"]), None)
        if existing is not None:
            existing["RepoTags"] = sorted(set(existing["RepoTags"]) | set(tags))
        else:
            from cockpit_sim.tools.nodestate import sim_bytes

            config["RepoTags"] = tags
            config["RepoDigests"] = []
            config["SimBytes"] = sim_bytes(config["Size"])
            images.append(config)
        state.write("images.json", images)
    quiet = "-q" in options or "--quiet" in options
    if not quiet:
        out("".join(f"Loaded image: {t}\n" for t in tags) or f"Loaded image ID: {config['Id']}\n")
    return 0

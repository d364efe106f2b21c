"""Images: `docker images`, `docker inspect` (containers too), `docker tag`, `docker rmi` (the
daemon's ImageDelete: untagging, conflicts with containers, deleted layers)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

from cockpit_sim.tools import dockerfmt, dockerinfo, dockerinspect
from cockpit_sim.tools.docker.containers import container_state, docker_root, find_container
from cockpit_sim.tools.docker.options import opt, split_options
from cockpit_sim.tools.docker.output import DockerError, err, out
from cockpit_sim.tools.nodestate import NodeState, Record, digest_matches, find_image, parse_ref


def image_rows(images: list[Record], digests: bool, now: datetime) -> list[dict[str, Any]]:
    rows = []
    for image in reversed(images):
        repo_digests = {d.split("@")[0]: d.split("@")[1] for d in image["RepoDigests"]}
        pairs = [parse_ref(t)[:2] for t in image["RepoTags"]]
        pairs += [(r, None) for r in repo_digests if r not in {p[0] for p in pairs}]
        for repo, tag in pairs or [(None, None)]:
            rows.append(
                {
                    "Containers": "N/A",
                    "CreatedAt": dockerfmt.docker_time(image["Created"]),
                    "CreatedSince": dockerfmt.human_duration(
                        dockerfmt.since_now(image["Created"], now)
                    )
                    + " ago",
                    "Digest": repo_digests.get(repo or "", "<none>"),
                    "ID": image["Id"].removeprefix("sha256:")[:12],
                    "Repository": repo or "<none>",
                    "SharedSize": "N/A",
                    "Size": dockerfmt.human_size(image["Size"]),
                    "Tag": tag or "<none>",
                    "UniqueSize": "N/A",
                    "VirtualSize": dockerfmt.human_size(image["Size"], 4),
                }
            )
    return rows


def cmd_images(state: NodeState, args: list[str]) -> int:
    options, positionals = split_options(args, {"--format", "--filter", "-f"}, False)
    digests = "--digests" in options
    rows = image_rows(state.images(), digests, datetime.now(UTC))
    if positionals:
        repo, tag, _ = parse_ref(positionals[0])
        rows = [r for r in rows if r["Repository"] == repo and (tag is None or r["Tag"] == tag)]
    if "--no-trunc" in options:
        full = {i["Id"].removeprefix("sha256:")[:12]: i["Id"] for i in state.images()}
        for row in rows:
            row["ID"] = full[row["ID"]]
    if "-q" in options or "--quiet" in options:
        seen: list[str] = []
        for row in rows:
            if row["ID"] not in seen:
                seen.append(row["ID"])
        out("".join(i + "\n" for i in seen))
        return 0
    default = "table {{.Repository}}\t{{.Tag}}\t"
    default += "{{.Digest}}\t" if digests else ""
    default += "{{.ID}}\t{{.CreatedSince}}\t{{.Size}}"
    out(dockerfmt.render_rows(opt(options, "--format") or default, rows, dockerfmt.IMAGE_HEADERS))
    return 0


EXEC_ROOT = "/var/run/docker"


def print_inspect(objects: list[Record], template: str | None) -> None:
    """JSON as the daemon's (indent 4, no ASCII escapes), or the template once per object (a
    template with nothing found still prints its empty line, as Docker 20.10 does)."""
    if template:
        out("".join(dockerfmt.render_template(template, o) + "\n" for o in objects) or "\n")
    else:
        out(json.dumps(objects, indent=4, ensure_ascii=False) + "\n")


def container_inspect(state: NodeState, record: Record) -> Record:
    root = str(docker_root(state))
    return dockerinspect.container_shape(record, container_state(record), root, EXEC_ROOT)


def image_inspect(state: NodeState, image: Record) -> Record:
    version = image.get("DockerVersion") or dockerinfo.SERVER_VERSION
    return dockerinspect.image_shape(image, str(docker_root(state)), version)


def cmd_inspect(state: NodeState, args: list[str], kind: str) -> int:
    options, names = split_options(args, {"--format", "-f", "--type"}, False)
    template = opt(options, "--format", "-f")
    kind = opt(options, "--type") or kind
    found: list[Record] = []
    missing: list[str] = []
    images = state.images()
    for name in names:
        record = None if kind == "image" else find_container(state, name)
        if record is not None:
            found.append(container_inspect(state, record))
            continue
        image = None if kind == "container" else find_image(images, name)
        if image is not None:
            found.append(image_inspect(state, image))
        else:
            missing.append(name)
    print_inspect(found, template)
    what = {"image": "image", "container": "container"}.get(kind, "object")
    for name in missing:
        err(f"Error: No such {what}: {name}")
    return 1 if missing else 0


def cmd_tag(state: NodeState, args: list[str]) -> int:
    if len(args) != 2:
        raise DockerError('"docker tag" requires exactly 2 arguments.')
    source, target = args
    repo, tag, _ = parse_ref(target)
    target = f"{repo}:{tag or 'latest'}"
    with state.locked():
        images = state.images()
        image = find_image(images, source)
        if image is None:
            raise DockerError(f"Error response from daemon: No such image: {source}")
        for other in images:
            other["RepoTags"] = [t for t in other["RepoTags"] if t != target]
        image["RepoTags"].append(target)
        state.write("images.json", images)
    return 0


def repo_of(reference: str) -> str:
    return parse_ref(reference)[0]


def single_reference(refs: list[str]) -> bool:
    """The daemon's isSingleReference: every reference in one repository, at most one tag."""
    return len({repo_of(r) for r in refs}) <= 1 and sum("@" not in r for r in refs) <= 1


def untag(image: Record, ref: str) -> list[str]:
    """Remove the reference `ref` names (a tag, or a digest); a tag that was its repository's
    last takes that repository's digests along. Returns the Untagged lines."""
    repo, tag, digest = parse_ref(ref)
    if digest is None:
        name = f"{repo}:{tag or 'latest'}"
        image["RepoTags"].remove(name)
        removed = [name]
        if not any(repo_of(t) == repo for t in image["RepoTags"]):
            removed += [d for d in image["RepoDigests"] if repo_of(d) == repo]
            image["RepoDigests"] = [d for d in image["RepoDigests"] if repo_of(d) != repo]
    else:
        full = next(d for d in image["RepoDigests"] if digest_matches(d, repo, digest))
        image["RepoDigests"].remove(full)
        removed = [full]
    return [f"Untagged: {r}" for r in removed]


def delete_conflict(image: Record, users: list[Record], force: bool) -> str | None:
    """Why the image may not go: a running container's (even forced), a stopped one's."""
    short = image["Id"].removeprefix("sha256:")[:12]
    running = [c for c in users if container_state(c).get("Running")]
    if running:
        return (
            f"conflict: unable to delete {short} (cannot be forced) - image is being used by "
            f"running container {running[0]['Id'][:12]}"
        )
    if users and not force:
        return (
            f"conflict: unable to delete {short} (must be forced) - image is being used by "
            f"stopped container {users[0]['Id'][:12]}"
        )
    return None


def remove_image(state: NodeState, ref: str, force: bool) -> list[str]:
    """`docker rmi REF` as the daemon's ImageDelete decides it; the lines it prints, or a
    DockerError with the daemon's conflict."""
    images = state.images()
    image = find_image(images, ref)
    if image is None:
        raise DockerError(f"Error: No such image: {ref}")
    users = [c for c in state.containers() if c["Image"] == image["Id"]]
    refs = image["RepoTags"] + image["RepoDigests"]
    bare = ref.removeprefix("sha256:")
    by_id = bool(re.fullmatch(r"[0-9a-f]{4,64}", bare)) and image["Id"][7:].startswith(bare)
    lines: list[str] = []
    if not by_id:
        if not force and single_reference(refs) and users:
            raise DockerError(
                f'Error response from daemon: conflict: unable to remove repository reference "'
                f'{ref}" (must force) - container {users[0]["Id"][:12]} is using its referenced '
                f"image {image['Id'].removeprefix('sha256:')[:12]}"
            )
        lines = untag(image, ref)
        if image["RepoTags"] or image["RepoDigests"]:
            state.write("images.json", images)
            return lines
    elif single_reference(refs) or force:
        conflict = delete_conflict(image, users, force)
        if conflict:
            raise DockerError(f"Error response from daemon: {conflict}")
        lines = [f"Untagged: {r}" for r in refs]
    else:
        short = image["Id"].removeprefix("sha256:")[:12]
        raise DockerError(
            f"Error response from daemon: conflict: unable to delete {short} (must be forced) - "
            "image is referenced in multiple repositories"
        )
    conflict = delete_conflict(image, users, force)
    if conflict:
        raise DockerError(f"Error response from daemon: {conflict}")
    state.write("images.json", [i for i in images if i["Id"] != image["Id"]])
    kept = bool(users)  # a (stopped) container's layer still stands on the image's layers
    layers = [] if kept else [f"Deleted: {layer}" for layer in dockerinspect.layer_ids(image)]
    return [*lines, f"Deleted: {image['Id']}", *layers]


def cmd_rmi(state: NodeState, args: list[str]) -> int:
    options, refs = split_options(args, set(), False)
    force = "-f" in options or "--force" in options
    status = 0
    for ref in refs:
        try:
            with state.locked():
                lines = remove_image(state, ref, force)
        except DockerError as exc:
            err(str(exc))  # a missing image is no failure when forced, as with `rm -f`
            status = status if force and "No such image" in str(exc) else 1
            continue
        out("".join(line + "\n" for line in lines))
    return status

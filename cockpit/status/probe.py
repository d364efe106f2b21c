"""The telemetry probe of one node: one long-lived remote bash loop, its framed output, its parser.

Polling by exec costs an SSH session, a login shell and the tool's process per sample, on nodes
that are shared. The probe instead keeps `nvidia-smi -lms` running for GPU samples and, in the
same channel, a bash loop that reads /proc/meminfo with builtins and runs the docker / compute-app
queries at a slower pace. Every output line is tagged (`gpu\t…`, `mem\t…`),
so the background GPU lines may interleave with a section; a section ends with
`TAG.\t<exit status>`.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from cockpit.ops.locks import LOCK_LINE_SH
from cockpit.ops.op_records import LIST_SH as OPS_LIST_SH
from cockpit.telemetry.docker_out import (
    LANE_LABEL,
    ContainerRow,
    ImageInfo,
    parse_image_inspect,
    parse_ps,
)
from cockpit.telemetry.gpu import (
    GPU_QUERY_FIELDS,
    ComputeApp,
    GpuCsvStream,
    GpuSample,
    MemInfo,
    parse_compute_apps,
    parse_meminfo,
)
from cockpit.telemetry.host import HostLoad, HostSample, host_load, parse_host

GPU_QUERY = [
    "nvidia-smi",
    "--query-gpu=" + ",".join(GPU_QUERY_FIELDS),
    "--format=csv,noheader,nounits",
]
APPS_QUERY = [
    "nvidia-smi",
    "--query-compute-apps=pid,process_name,used_gpu_memory",
    "--format=csv,noheader,nounits",
]
PS_QUERY = ["docker", "ps", "-a", "--format", "{{json .}}"]
"""Every container: the running ones are the node's containers, the exited ones of the cockpit's
lanes say how a rank ended (its exit code) until they are removed."""
_NOT_RUNNING = ("exited", "dead", "created")
MEMINFO_QUERY = ["cat", "/proc/meminfo"]
IMAGES_QUERY = 'ids=$(docker images -q) && { [ -z "$ids" ] || docker image inspect $ids; }'
"""Every local image in full (RepoDigests included): recipe refs may be known by prefix only."""

FIRST_GPU_WAIT_S = 1.0
"""The first round's slower queries wait (at most this long) for the node's first GPU line: on a
busy node the GPU sample and meminfo, what a first look needs, come before the inventory."""
PROBE_NICE = 10
"""The probe lowers its own priority on the node (its tools inherit it): telemetry must never take
CPU from the engine it watches. With the kernel's autogroups on (each SSH session is a group, and
groups share the CPU evenly whatever their members' nice), the session's group is lowered too.
On a simulated fleet, whose nodes share the cockpit's cores, this also keeps the node tools from
starving the cockpit itself."""
SECTION_MAX_LINES = 5000  # a section longer than this is cut: bounded memory per node


@dataclass(frozen=True)
class Pace:
    """How often each fact is refreshed (the same cadence whichever way it is collected)."""

    gpu_ms: int = 1000
    slow_s: float = 5.0  # meminfo, containers, compute apps
    images_every: int = 6  # slow cycles between two image inventories
    stagger: bool = True
    """The second slow cycle comes at a random point within `slow_s` of the first (never
    later), so nodes whose probes started together (every node at the TUI's start) look at
    different moments from then on: the cockpit gets their sections spread over the cycle, not
    all of them in one burst every `slow_s` (and a simulated fleet, whose nodes share the
    cockpit's cores, does not run every node's tools at once)."""

    @property
    def stale_after_s(self) -> float:
        """No line for this long from a connected node means its data is STALE."""
        return max(3 * self.gpu_ms / 1000, self.slow_s + 2.0)


def probe_script(pace: Pace) -> str:
    """The bash loop streamed by the poller (run under the stream supervisor)."""
    gpu = shlex.join([*GPU_QUERY, "-lms", str(pace.gpu_ms)])
    slow_ms = max(round(pace.slow_s * 1000), 1)
    stagger = (
        f"\n  if (( n == 1 )); then  # the first wait ends at a random point of the cycle (Pace)"
        f"\n    r=$(( (RANDOM << 15 | RANDOM) % {slow_ms} + 1 ))"
        f"\n    printf -v wait '%d.%03d' $(( r / 1000 )) $(( r % 1000 ))"
        f"\n  fi"
        if pace.stagger
        else ""
    )
    return f"""\
renice -n {PROBE_NICE} -p $$ >/dev/null 2>&1
{{ echo {PROBE_NICE} >/proc/self/autogroup; }} 2>/dev/null
shopt -s lastpipe
emit() {{
  local l
  while IFS= read -r l || [ -n "$l" ]; do printf '%s\\t%s\\n' "$1" "$l"; done
}}
section() {{
  local tag=$1 out status
  shift
  out=$("$@" 2>/dev/null </dev/null)  # stdin is the cockpit's: see the slow wait below
  status=$?
  [ -z "$out" ] || printf '%s\\t%s\\n' "$tag" "${{out//$'\\n'/$'\\n'$tag$'\\t'}}"
  printf '%s.\\t%s\\n' "$tag" "$status"
}}
images() {{ {IMAGES_QUERY}; }}
{LOCK_LINE_SH}own() {{
  local f l
  for f in "$HOME"/.cockpit/locks/*.lock; do
    [ -f "$f" ] && l=$(lock_line "$f") && printf '%s\t%s\n' "${{f##*/}}" "$l"
  done
  for f in "$HOME"/.cockpit/lanes/*.json; do
    [ -f "$f" ] || continue
    IFS= read -r l <"$f"
    printf '%s\t%s\n' "${{f##*/}}" "$l"
  done
  return 0
}}
{OPS_LIST_SH}host() {{
  local l
  IFS= read -r l </proc/stat && printf '%s\\n' "$l"
  while IFS= read -r l; do printf '%s\\n' "$l"; done </proc/net/dev
}}
first_gpu() {{
  local l
  IFS= read -r l && printf 'gpu\\t%s\\n' "$l"
  printf x >&3
  emit gpu
}}
exec 3<> <(:)
{{ {gpu} 2>/dev/null </dev/null | first_gpu; printf 'gpu.\\t%s\\n' "${{PIPESTATUS[0]}}"; }} &
n=0
while :; do
  emit mem </proc/meminfo
  printf 'mem.\\t%s\\n' $?
  (( n )) || read -t {FIRST_GPU_WAIT_S:g} -N 1 -u 3 _
  section ps {shlex.join(PS_QUERY)}
  section own own
  section ops ops
  section apps {shlex.join(APPS_QUERY)}
  section host host
  if (( n % {max(pace.images_every, 1)} == 0 )); then section img images; fi
  n=$((n + 1))
  wait={pace.slow_s:g}{stagger}
  if read -t "$wait" ask; then  # a line on stdin: the cockpit asks for a new look now
    while read -t 0 _ && read -r l; do ask=${{l:-$ask}}; done  # several asks, one look
    [ -z "$ask" ] || printf 'ask\t%s\n' "$ask"  # what follows was read after that ask came
  elif (( $? <= 128 )); then  # stdin at its end (run without the stream supervisor)
    read -t "$wait" -u 3 _
  fi
done
"""


@dataclass(frozen=True)
class GpuLine:
    sample: GpuSample


@dataclass(frozen=True)
class Section:
    """A complete section: the tool's output and its exit status."""

    tag: str
    text: str
    status: int


@dataclass(frozen=True)
class GpuEnded:
    """The GPU loop stopped (nvidia-smi missing or dead): no more GPU samples on this channel."""

    status: int


@dataclass(frozen=True)
class Asked:
    """The node received the cockpit's ask number `seq` (`FleetPoller.refresh`): every section
    after this line was read on the node after the ask was sent."""

    seq: int


Frame = GpuLine | Section | GpuEnded | Asked


class ProbeParser:
    """Turns the probe's tagged lines back into frames; one per node channel."""

    def __init__(self) -> None:
        self._gpu = GpuCsvStream(GPU_QUERY_FIELDS)
        self._open: dict[str, list[str]] = {}

    def feed(self, line: str) -> Frame | None:
        tag, sep, body = line.partition("\t")
        if not sep:
            return None
        if tag == "ask":
            return Asked(int(body)) if body.isdigit() else None
        if tag == "gpu":
            sample = self._gpu.feed(body)
            return GpuLine(sample) if sample is not None else None
        if tag.endswith("."):
            name = tag[:-1]
            status = int(body) if body.strip().lstrip("-").isdigit() else -1
            if name == "gpu":
                return GpuEnded(status)
            lines = self._open.pop(name, [])
            return Section(name, "\n".join(lines), status)
        lines = self._open.setdefault(tag, [])
        if len(lines) < SECTION_MAX_LINES:
            lines.append(body)
        return None


@dataclass(frozen=True)
class OwnRound:
    """One consistent look at who looks after a node's containers: its container list and the
    locks and lane markers read on the node right after it, in the same round (a container
    listed was started after its launch wrote its marker, so the marker read next is there)."""

    containers: tuple[ContainerRow, ...]  # the running ones
    ownership: str  # `name<TAB>content` of the node's locks and lane markers
    asked: int  # the last ask the node received before the round: it was read after that
    at: float  # when its `own` section came


@dataclass(frozen=True)
class NodeFacts:
    """What is known about one node, each fact with the wall time it was last refreshed.

    None means "not known yet"; `failed` maps a fact to the exit status of its failing tool.
    """

    gpus: Mapping[int, GpuSample] = field(default_factory=dict)
    gpu_at: float | None = None
    gpu_samples: int = 0  # received so far
    meminfo: MemInfo | None = None
    meminfo_at: float | None = None
    apps: tuple[ComputeApp, ...] = ()
    containers: tuple[ContainerRow, ...] | None = None  # those `docker ps` lists (running)
    containers_at: float | None = None
    exited: tuple[ContainerRow, ...] = ()  # lane containers (cockpit.* labels) that ended
    images: tuple[ImageInfo, ...] | None = None
    images_at: float | None = None
    listed: tuple[ContainerRow, ...] | None = None  # this round's list, until its `own` comes
    owned: OwnRound | None = None  # the last round's list with its locks and lane markers
    asked: int = 0  # the last ask number the node received (0: none yet)
    ops: str | None = None  # the operations in flight recorded there (`ops.op_records`)
    ops_at: float | None = None
    host: HostSample | None = None  # CPU and link counters (`telemetry.host`), and the one
    host_at: float | None = None
    host_before: HostSample | None = None  # before it: two samples give the rates
    host_before_at: float | None = None
    failed: Mapping[str, int] = field(default_factory=dict)
    heard_at: float | None = None
    probe_error: str | None = None  # why the node's probe stream last stopped

    def host_load(self) -> HostLoad | None:
        """CPU and link rates between the last two host samples, and swap in use now."""
        swap = self.meminfo.swap_used_bytes if self.meminfo else None
        return host_load(self.host_before, self.host_before_at, self.host, self.host_at, swap)

    def unknown(self) -> tuple[str, ...]:
        """The kinds of fact that neither arrived nor failed yet (gpu, mem, ps, img)."""
        known = {"gpu": self.gpu_at, "mem": self.meminfo_at, "ps": self.containers_at}
        known["img"] = self.images_at
        return tuple(tag for tag, at in known.items() if at is None and tag not in self.failed)

    def known_kinds(self) -> int:
        return 4 - len(self.unknown())

    @property
    def complete(self) -> bool:
        """Every kind of fact arrived (or failed) once: enough for a one-shot status."""
        return not self.unknown()

    def with_frame(self, frame: Frame, now: float) -> NodeFacts:
        """These facts updated by one frame received at wall time `now`."""
        heard = replace(self, heard_at=now, probe_error=None)
        match frame:
            case GpuLine(sample):
                gpus = {**heard.gpus, sample.index if sample.index is not None else 0: sample}
                return replace(
                    heard,
                    gpus=gpus,
                    gpu_at=now,
                    gpu_samples=heard.gpu_samples + 1,
                    failed=_without(heard.failed, "gpu"),
                )
            case GpuEnded(status):
                return replace(heard, failed={**heard.failed, "gpu": status})
            case Asked(seq):
                return replace(heard, asked=max(heard.asked, seq))
            case Section(tag, _, status) if status != 0:
                return replace(heard, failed={**heard.failed, tag: status}, listed=None)
            case Section("mem", text, _):
                changes = {"meminfo": parse_meminfo(text), "meminfo_at": now}
            case Section("ps", text, _):
                rows = parse_ps(text)
                running = tuple(r for r in rows if r.state not in _NOT_RUNNING)
                changes = {
                    "containers": running,
                    "listed": running,
                    "containers_at": now,
                    "exited": tuple(
                        r for r in rows if r.state in _NOT_RUNNING and LANE_LABEL in r.labels
                    ),
                }
            case Section("apps", text, _):
                changes = {"apps": tuple(parse_compute_apps(text))}
            case Section("own", text, _) if heard.listed is not None:
                changes = {"owned": OwnRound(heard.listed, text, heard.asked, now), "listed": None}
            case Section("ops", text, _):
                changes = {"ops": text, "ops_at": now}
            case Section("host", text, _):
                changes = {
                    "host": parse_host(text),
                    "host_at": now,
                    "host_before": heard.host,
                    "host_before_at": heard.host_at,
                }
            case Section("img", text, _):
                changes = {"images": tuple(parse_image_inspect(text)), "images_at": now}
            case _:
                return heard
        assert isinstance(frame, Section)
        return replace(heard, failed=_without(heard.failed, frame.tag), **changes)


def _without(failed: Mapping[str, int], tag: str) -> Mapping[str, int]:
    return {k: v for k, v in failed.items() if k != tag} if tag in failed else failed

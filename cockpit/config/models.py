"""Typed inventory: nodes, clusters and recipes, validated field by field (unknown keys refused)."""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import PurePosixPath
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
)

NAME_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,62}$"
Name = Annotated[str, StringConstraints(pattern=NAME_PATTERN)]
USER_PATTERN = r"^[a-z_][a-z0-9_.-]{0,31}$"
UserName = Annotated[str, StringConstraints(pattern=USER_PATTERN)]
"""A login name as useradd takes it; never an option (`-oProxyCommand=…`) nor shell text."""
EnvKey = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]


def _one_line(value: str) -> str:
    if "\n" in value or "\r" in value:
        raise ValueError(
            "an env value is one line: it goes into the env file of `docker run --env-file`, "
            "which has no quoting (a line break would start another variable)"
        )
    return value


EnvValue = Annotated[str, AfterValidator(_one_line)]
HexPrefix = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{8,64}$")]
JsonTable = dict[str, Any]


def _absolute(path: str | None) -> str | None:
    """A cache path is a path ON THE NODE and must be absolute: Docker reads a relative
    `-v hf-cache:…` as a named volume (an empty one: the model would be missing) and refuses one
    with a slash (`vllm-cache/x` "includes invalid characters for a local volume name")."""
    if path is not None and not path.startswith("/"):
        raise ValueError(
            "must be an absolute path on the node: docker reads a relative -v source as a named "
            "volume (empty, the model would be missing) and refuses one that holds a '/'"
        )
    return path


AbsolutePath = Annotated[str, AfterValidator(_absolute)]


class Strict(BaseModel):
    """Base: frozen, and every key not declared is an error (typos must not pass silently)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


# --------------------------------------------------------------------------- clusters.toml


class Node(Strict):
    """One DGX Spark as the cockpit reaches it over SSH."""

    name: Name = ""
    host: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9._:-]+$")]
    port: int = Field(default=0, ge=0, le=65535, description="0: the inventory default")
    user: UserName | None = None
    addr: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9._:-]+$")] | None = Field(
        default=None, description="address peers and clients use for its services (default: host)"
    )
    model_cache: AbsolutePath | None = Field(
        default=None, description="this node's model cache (default: the cluster's, else defaults)"
    )
    compile_cache: AbsolutePath | None = Field(
        default=None, description="this node's compile cache (default: defaults.compile_cache)"
    )

    @property
    def service_addr(self) -> str:
        return self.addr or self.host


class SshSettings(Strict):
    """How the cockpit authenticates and how long it waits; paths relative to the inventory."""

    known_hosts: str | None = None
    identity_files: list[str] = Field(default_factory=list)
    connect_timeout: float = Field(default=3.0, gt=0, le=120)
    config_file: str | None = None


class Defaults(Strict):
    ssh_user: UserName = "operator"
    ssh_port: int = Field(default=22, ge=1, le=65535)
    serve_port: int = Field(default=30000, ge=1, le=65535)
    master_port: int = Field(default=29501, ge=1, le=65535)
    model_cache: AbsolutePath = "/srv/hf-cache"
    container_model_cache: AbsolutePath = "/root/.cache/huggingface"
    compile_cache: AbsolutePath = "/srv/vllm-cache"


class Fabric(StrEnum):
    SWITCH = "switch"
    DIRECT_PAIR = "direct-pair"
    DIRECT_CYCLE = "direct-cycle"


class NcclBlock(Strict):
    """The cluster's RDMA wiring: which HCAs, GID index and socket interface NCCL must use."""

    hcas: list[Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_:.-]+$")]] = Field(
        min_length=1
    )
    gid_index: int = Field(ge=0, le=255)
    socket_ifname: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.-]+$")]
    env: dict[EnvKey, EnvValue] = Field(default_factory=dict)

    def to_env(self) -> dict[str, str]:
        """NCCL/Gloo environment for every rank of a lane on this cluster."""
        return {
            "NCCL_IB_HCA": ",".join(self.hcas),
            "NCCL_IB_GID_INDEX": str(self.gid_index),
            "NCCL_SOCKET_IFNAME": self.socket_ifname,
            "GLOO_SOCKET_IFNAME": self.socket_ifname,
            **self.env,
        }


class Cluster(Strict):
    """A named set of nodes with one fabric; rank 0 (the head) is the first node."""

    name: Name = ""
    nodes: list[Name] = Field(min_length=1)
    fabric: Fabric
    production: bool = False
    description: str = ""
    serve_port: int | None = Field(default=None, ge=1, le=65535)
    master_port: int | None = Field(default=None, ge=1, le=65535)
    model_cache: AbsolutePath | None = None
    nccl: NcclBlock

    @field_validator("nodes")
    @classmethod
    def _unique(cls, nodes: list[str]) -> list[str]:
        duplicates = sorted({n for n in nodes if nodes.count(n) > 1})
        if duplicates:
            raise ValueError(f"node listed twice: {', '.join(duplicates)}")
        return nodes


class ClustersFile(Strict):
    defaults: Defaults = Field(default_factory=Defaults)
    ssh: SshSettings = Field(default_factory=SshSettings)
    nodes: dict[Name, Node]
    clusters: dict[Name, Cluster]


# --------------------------------------------------------------------------- recipes/*.toml


class Lane(Strict):
    name: Name
    description: str = ""
    nodes: int = Field(ge=1, le=64, description="nodes the lane spans")
    gpus_per_node: int = Field(default=1, ge=1, le=8)
    clusters: list[Name] = Field(
        min_length=1, description="clusters it may run on; first = default"
    )

    @property
    def tensor_parallel_size(self) -> int:
        return self.nodes * self.gpus_per_node


class Image(Strict):
    """The container image, always by digest: tags move, digests do not."""

    ref: str
    publication: str = ""
    image_id: str = ""
    base: str = ""
    size_gib: float = Field(default=0.0, ge=0)
    compressed_gib: float = Field(default=0.0, ge=0)
    versions: dict[str, str] = Field(default_factory=dict)

    @property
    def repository(self) -> str:
        return self.ref.split("@", 1)[0]

    @property
    def digest(self) -> str:
        """The `sha256:…` part of the reference (possibly a known prefix only)."""
        return self.ref.split("@", 1)[1] if "@" in self.ref else ""


class Launcher(Strict):
    """The image's launcher contract: the cockpit fills model path, rendezvous, rank, port."""

    entrypoint: list[str] = Field(default_factory=list, description="the image ENTRYPOINT (info)")
    command: list[str] = Field(default_factory=list, description="words before the model path")
    headless_workers: bool = True


class ModelFacts(Strict):
    repo: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9._-]+/[A-Za-z0-9._-]+$")]
    revision: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{7,40}$")]
    config_sha256: HexPrefix | None = None
    index_sha256: HexPrefix | None = None
    architecture: str = ""
    num_attention_heads: int = Field(ge=1)
    num_kv_heads: int = Field(ge=1)
    quantization: str = ""
    size_gb: float = Field(default=0.0, ge=0)
    max_model_len: int = Field(ge=1)
    draft: str | None = None
    cache_namespace: Name
    kv_bytes_per_token: int | None = Field(
        default=None,
        ge=1,
        description="KV cache bytes per token (2 x layers x KV heads x head dim x dtype bytes): "
        "the KV pane's pool GiB when the engine does not report kv_cache_memory_bytes",
    )

    @property
    def cache_dir_name(self) -> str:
        return "models--" + self.repo.replace("/", "--")

    def snapshot_path(self, cache_root: str) -> str:
        return str(
            PurePosixPath(cache_root, "hub", self.cache_dir_name, "snapshots", self.revision)
        )


class ServeContract(Strict):
    """vLLM serve flags of the lane; typed where the cockpit reasons about them."""

    served_model_name: str
    max_model_len: int = Field(ge=1)
    max_num_seqs: int = Field(ge=1)
    max_num_batched_tokens: int = Field(ge=1)
    gpu_memory_utilization: float = Field(gt=0, le=1)
    kv_cache_dtype: str = "auto"
    enable_prefix_caching: bool = True
    trust_remote_code: bool = False
    enable_flashinfer_autotune: bool | None = None
    speculative_config: JsonTable | None = None
    model_loader_extra_config: JsonTable | None = None
    compilation_config: JsonTable | None = None
    kernel_config: JsonTable | None = None
    hf_overrides: JsonTable | None = None
    extra_args: dict[Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9-]*$")], Any] = (
        Field(default_factory=dict, description="any other flag: name -> value (true = bare)")
    )

    @property
    def num_speculative_tokens(self) -> int:
        return int((self.speculative_config or {}).get("num_speculative_tokens", 0))


class DeviationKind(StrEnum):
    ENV = "env"
    FLAG = "flag"
    SETTING = "setting"


class DeviationAction(StrEnum):
    DROP = "drop"
    CHANGE = "change"
    KEEP = "keep"


class Deviation(Strict):
    """Where our recipe departs from the upstream qualified config, and why."""

    kind: DeviationKind
    key: str
    action: DeviationAction
    upstream: str = ""
    ours: str = ""
    why: str


class Recipe(Strict):
    lane: Lane
    image: Image
    launcher: Launcher = Field(default_factory=Launcher)
    model: ModelFacts
    serve: ServeContract
    env: dict[EnvKey, EnvValue] = Field(default_factory=dict)
    deviations: list[Deviation] = Field(default_factory=list)

    @property
    def name(self) -> str:
        return self.lane.name


_DIGEST = re.compile(r"^[a-z0-9][a-z0-9._/:-]*@sha256:[0-9a-f]{8,64}$")


def is_digest_ref(ref: str) -> bool:
    """True for `repo@sha256:HEX` (a known prefix of at least 8 hex digits counts)."""
    return bool(_DIGEST.match(ref))

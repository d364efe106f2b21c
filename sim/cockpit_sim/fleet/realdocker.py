"""Real Docker parts under a simulated fleet: a Docker daemon per node and a registry on loopback.

What was checked on these machines (shared reference `real-parts.md`): Debian's `dockerd` runs one
instance per node with its own data-root, exec-root, socket and pid file, with no bridge and no
iptables (containers use `--network host`); `--gpus all` works once an executable named
`nvidia-container-runtime-hook` is on the daemon's PATH (Docker 20.10 then registers its `nvidia`
device driver), so the stand-in written here only drains its stdin. Debian's `docker-registry`
(the CNCF distribution registry) serves images by digest on a loopback port.

The exec-root holds containerd's socket, and a unix socket path may not exceed 107 bytes, so the
sockets live under a short folder in the system's temp dir; the data (images, containers) lives
wherever the caller says. Each daemon puts its containers under a cgroup parent named after that
folder: a daemon killed outright leaves its containers running (their shims outlive it), and
`stop` finds and kills them there.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from cockpit.pids import pid_exists

DOCKERD = "/usr/sbin/dockerd"
DOCKER = "/usr/bin/docker"  # Debian's client, matching the daemon (another may be first on PATH)
REGISTRY = "/usr/bin/docker-registry"
HOOK = "nvidia-container-runtime-hook"
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 20.0
CGROUPS = Path("/sys/fs/cgroup")


class RealDockerError(RuntimeError):
    """A daemon or registry that would not start (the message carries its log's last lines)."""


def missing_parts() -> list[str]:
    """The Debian binaries a real-Docker fleet needs that this machine lacks."""
    return [path for path in (DOCKERD, DOCKER, REGISTRY) if not os.access(path, os.X_OK)]


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def write_hook(bin_dir: Path) -> Path:
    """The stand-in for NVIDIA's OCI hook: reads the container state on stdin, succeeds."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    hook = bin_dir / HOOK
    hook.write_text("#!/bin/sh\ncat >/dev/null\nexit 0\n")
    hook.chmod(0o755)
    return hook


def _tail(path: Path, lines: int = 8) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _pid_alive(pid: int) -> bool:
    if not pid_exists(pid):
        return False
    try:  # a zombie (exited, not yet reaped by its parent) is gone for our purposes
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _terminate(pid: int, timeout_s: float) -> None:
    """SIGTERM, wait, then SIGKILL the process group the process leads."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while _pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if _pid_alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        while _pid_alive(pid) and time.monotonic() < deadline + 5:
            time.sleep(0.05)


def _unmount_below(root: Path) -> None:
    """Lazily unmount whatever a killed daemon left mounted under `root` (overlay, shm)."""
    prefix = str(root.resolve()) + "/"
    with contextlib.suppress(OSError):
        mounts = [line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines()]
        for point in sorted((m for m in mounts if m.startswith(prefix)), key=len, reverse=True):
            subprocess.run(["umount", "-l", point], capture_output=True, check=False)


def _kill_cgroup(parent: str) -> None:
    """SIGKILL every process left in the cgroup `parent` (any controller), then remove it."""
    name = parent.lstrip("/")
    folders = [c / name for c in CGROUPS.iterdir() if (c / name).is_dir()]
    for folder in folders:
        for procs in folder.rglob("cgroup.procs"):
            with contextlib.suppress(OSError, ValueError):
                for pid in procs.read_text().split():
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(int(pid), signal.SIGKILL)
    deadline = time.monotonic() + 5
    for folder in folders:
        for child in sorted(
            (p for p in folder.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True
        ):
            while child.exists() and time.monotonic() < deadline:
                try:
                    child.rmdir()
                except OSError:  # its last process is still exiting
                    time.sleep(0.05)
        with contextlib.suppress(OSError):
            folder.rmdir()


class _UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self._path)
        self.sock = sock


def _ping_unix(path: Path) -> bool:
    connection = _UnixHTTPConnection(str(path), timeout=2.0)
    try:
        connection.request("GET", "/_ping")
        return connection.getresponse().status == 200
    except OSError:
        return False
    finally:
        connection.close()


def _ping_tcp(host: str, port: int, path: str) -> bool:
    connection = http.client.HTTPConnection(host, port, timeout=2.0)
    try:
        connection.request("GET", path)
        return connection.getresponse().status == 200
    except OSError:
        return False
    finally:
        connection.close()


@dataclass
class Dockerd:
    """One Docker daemon: data under `data_dir`, sockets under a short temp folder.

    `daemon_env` is added to the daemon's environment, which its OCI hooks inherit (the GPU hook
    reads the node's identity there)."""

    data_dir: Path
    extra_path: tuple[Path, ...] = ()  # folders put first on the daemon's PATH (the hook's)
    daemon_env: Mapping[str, str] = field(default_factory=dict)
    runtime: Path | None = None  # the default OCI runtime instead of runc (a wrapper around it)
    run_dir: Path = field(init=False)

    def __post_init__(self) -> None:
        self.data_dir = Path(self.data_dir).resolve()
        marker = self.data_dir / "run-dir"
        self.run_dir = (
            Path(marker.read_text().strip()) if marker.is_file() else Path("/nonexistent")
        )

    @property
    def socket(self) -> Path:
        return self.run_dir / "docker.sock"

    @property
    def cgroup_parent(self) -> str:
        """Where the daemon's containers live in every cgroup controller (one per daemon)."""
        return "/" + self.run_dir.name

    @property
    def host(self) -> str:
        """The value of DOCKER_HOST that reaches this daemon."""
        return f"unix://{self.socket}"

    @property
    def pid_file(self) -> Path:
        return self.run_dir / "dockerd.pid"

    @property
    def log(self) -> Path:
        return self.data_dir / "dockerd.log"

    @property
    def pid(self) -> int | None:
        return _read_pid(self.pid_file)

    def env(self) -> dict[str, str]:
        return {"DOCKER_HOST": self.host}

    def running(self) -> bool:
        pid = self.pid
        return pid is not None and _pid_alive(pid) and _ping_unix(self.socket)

    def prepare(self) -> str:
        """Choose the socket folder (once) and return DOCKER_HOST, before the daemon starts:
        a node's session environment names the socket before its daemon runs."""
        if not self.run_dir.is_dir():
            self.data_dir.mkdir(parents=True, exist_ok=True)
            self.run_dir = Path(tempfile.mkdtemp(prefix="ckd-"))
            (self.data_dir / "run-dir").write_text(str(self.run_dir) + "\n")
        return self.host

    def start(self, timeout_s: float = START_TIMEOUT_S) -> None:
        """Start the daemon (detached, in its own session) and wait until it answers."""
        if self.running():
            return
        self.prepare()
        env = {**os.environ, **self.daemon_env}
        env["PATH"] = os.pathsep.join([*map(str, self.extra_path), env.get("PATH", "")])
        env.pop("DOCKER_HOST", None)
        argv = [
            DOCKERD,
            "--data-root", str(self.data_dir / "root"),
            "--exec-root", str(self.run_dir / "exec"),
            "-H", self.host,
            "--pidfile", str(self.pid_file),
            "--cgroup-parent", self.cgroup_parent,
            "--iptables=false", "--ip-forward=false", "--bridge=none",
        ]  # fmt: skip
        if self.runtime is not None:
            argv += [f"--add-runtime={self.runtime.name}={self.runtime}",
                     f"--default-runtime={self.runtime.name}"]  # fmt: skip
        with self.log.open("ab") as log:
            subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env=env,
                start_new_session=True,
                close_fds=True,
            )
        deadline = time.monotonic() + timeout_s
        while not _ping_unix(self.socket):
            if time.monotonic() > deadline:
                self.stop()
                raise RealDockerError(
                    f"dockerd did not answer within {timeout_s:.0f} s:\n{_tail(self.log)}"
                )
            time.sleep(0.1)

    def remove_containers(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """`docker rm -f` every container (a daemon stopping them itself waits out their grace
        periods); quiet when the daemon is not running."""
        if not self.running():
            return
        with contextlib.suppress(RealDockerError, subprocess.TimeoutExpired):
            ids = self.docker("ps", "-aq", timeout=timeout_s).split()
            if ids:
                self.docker("rm", "-f", *ids, timeout=timeout_s)

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """Stop the daemon (its containers stop with it) and remove every file it made; also
        after the daemon was killed: what its containers left runs in its cgroup parent."""
        pid = self.pid
        if pid is not None:
            _terminate(pid, timeout_s)
        if self.run_dir.name.startswith("ckd-"):
            _kill_cgroup(self.cgroup_parent)
        _unmount_below(self.run_dir)
        _unmount_below(self.data_dir)
        if self.run_dir.name.startswith("ckd-"):
            shutil.rmtree(self.run_dir, ignore_errors=True)
        shutil.rmtree(self.data_dir / "root", ignore_errors=True)
        with contextlib.suppress(FileNotFoundError):
            (self.data_dir / "run-dir").unlink()

    def docker(self, *args: str, input: bytes | None = None, timeout: float = 120.0) -> str:
        """Run Debian's `docker` client against this daemon; stdout, or RealDockerError."""
        done = subprocess.run(
            [DOCKER, *args],
            input=input,
            capture_output=True,
            env={**os.environ, **self.env()},
            timeout=timeout,
            check=False,
        )
        if done.returncode != 0:
            raise RealDockerError(
                f"docker {' '.join(args[:2])}: {done.stderr.decode(errors='replace').strip()}"
            )
        return done.stdout.decode(errors="replace")


@dataclass
class Registry:
    """Debian's `docker-registry` on a loopback port, its storage under `data_dir`."""

    data_dir: Path
    host: str = "127.0.0.1"
    port: int = 0
    env: Mapping[str, str] = field(default_factory=dict)  # added to the registry's environment

    def __post_init__(self) -> None:
        self.data_dir = Path(self.data_dir).resolve()
        saved = self.data_dir / "port"
        if not self.port and saved.is_file():
            self.port = int(saved.read_text())

    @property
    def address(self) -> str:
        """`127.0.0.1:PORT`: the registry part of an image reference."""
        return f"{self.host}:{self.port}"

    @property
    def pid_file(self) -> Path:
        return self.data_dir / "registry.pid"

    @property
    def log(self) -> Path:
        return self.data_dir / "registry.log"

    @property
    def pid(self) -> int | None:
        return _read_pid(self.pid_file)

    def running(self) -> bool:
        pid = self.pid
        return pid is not None and _pid_alive(pid) and _ping_tcp(self.host, self.port, "/v2/")

    def start(self, timeout_s: float = START_TIMEOUT_S) -> None:
        if self.running():
            return
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.port = self.port or free_port(self.host)
        (self.data_dir / "port").write_text(str(self.port))
        config = self.data_dir / "config.yml"
        config.write_text(
            "version: 0.1\n"
            "log: { level: warn }\n"
            f"storage: {{ filesystem: {{ rootdirectory: {self.data_dir / 'data'} }} }}\n"
            f"http: {{ addr: {self.address} }}\n"
        )
        with self.log.open("ab") as log:
            process = subprocess.Popen(
                [REGISTRY, "serve", str(config)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env={**os.environ, **self.env},
                start_new_session=True,
                close_fds=True,
            )
        self.pid_file.write_text(f"{process.pid}\n")
        deadline = time.monotonic() + timeout_s
        while not _ping_tcp(self.host, self.port, "/v2/"):
            if process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RealDockerError(f"docker-registry did not start:\n{_tail(self.log)}")
            time.sleep(0.05)

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """Stop the registry and remove its storage."""
        pid = self.pid
        if pid is not None:
            _terminate(pid, timeout_s)
        shutil.rmtree(self.data_dir / "data", ignore_errors=True)
        for name in ("registry.pid", "port", "config.yml"):
            with contextlib.suppress(FileNotFoundError):
                (self.data_dir / name).unlink()


BUSYBOX = "/bin/busybox"  # Debian's busybox-static: one static binary, no libraries needed
BUSYBOX_APPLETS = ("sh", "cat", "ls", "sleep", "echo", "env", "mkdir", "rm", "true", "false")


def import_busybox(
    daemon: Dockerd,
    ref: str,
    work_dir: Path,
    labels: dict[str, str] | None = None,
    changes: tuple[str, ...] = (),
    files: Mapping[str, tuple[str | bytes, int]] | None = None,
    links: Mapping[str, str] | None = None,
) -> str:
    """Make a ~2 MB image `ref` from a static busybox (no registry needed); returns its id.

    `changes` are Dockerfile instructions applied at import (`ENTRYPOINT ["vllm", "serve"]`);
    `files` (absolute path -> text or bytes, mode) and `links` (absolute path -> target) are
    added to the root file system."""
    rootfs = Path(tempfile.mkdtemp(prefix="rootfs-", dir=work_dir))
    try:
        for folder in ("bin", "etc", "tmp", "proc", "sys", "dev", "root"):
            (rootfs / folder).mkdir()
        shutil.copy2(BUSYBOX, rootfs / "bin" / "busybox")
        for applet in BUSYBOX_APPLETS:
            (rootfs / "bin" / applet).symlink_to("busybox")
        for path, (text, mode) in (files or {}).items():
            target = rootfs / path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(text, bytes):
                target.write_bytes(text)
            else:
                target.write_text(text)
            target.chmod(mode)
        for path, pointee in (links or {}).items():
            link = rootfs / path.lstrip("/")
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(pointee)
        tar = subprocess.run(["tar", "-C", str(rootfs), "-c", "."], capture_output=True, check=True)
        args = ["import"]
        for key, value in (labels or {}).items():
            args += ["--change", f"LABEL {key}={value}"]
        for change in changes:
            args += ["--change", change]
        return daemon.docker(*args, "-", ref, input=tar.stdout).strip()
    finally:
        shutil.rmtree(rootfs, ignore_errors=True)

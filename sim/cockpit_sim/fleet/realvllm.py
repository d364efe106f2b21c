"""A real vLLM on a simulated node: the lane `real-vllm-cpu-1x` on cluster `real-1`.

The simulated `docker run` of an image that is not the simulated engine runs the image's
entrypoint and command under bash on the node, with the bind mounts read as their host folders.
So an image record whose entrypoint is the `vllm serve` of a vLLM CPU venv (installed by
`tools/real-vllm-cpu/install.sh`), and the model snapshot in the node's model cache, are all it
takes: the cockpit launches, watches, benches and stops it like any lane, over SSH.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from cockpit.assets import asset_dir
from cockpit.config import load_inventory
from cockpit_sim.fleet.control import FleetError, SimFleet

INVENTORY = asset_dir("recipes") / "real-vllm-cpu"
"""clusters.toml (cluster `real-1`, one node) and the recipe `real-vllm-cpu-1x`."""
RECIPE = "real-vllm-cpu-1x"
CLUSTER = "real-1"


def install_real_vllm(fleet: SimFleet, venv: Path, model_dir: Path) -> None:
    """Make the lane's image run `VENV/bin/vllm serve` and put the model on its nodes.

    `fleet` must have been started on `INVENTORY`; `model_dir` holds the model files
    (tools/real-vllm-cpu/make_model.py), copied into each node's cache at the recipe's revision.
    """
    vllm = venv / "bin" / "vllm"
    if not vllm.is_file():
        raise FleetError(f"{vllm} not found: run tools/real-vllm-cpu/install.sh first")
    inventory = load_inventory(fleet.inventory_dir)
    recipe = inventory.recipe(RECIPE)
    for node in inventory.cluster(CLUSTER).nodes:
        seeded = [i for i in fleet.images(node) if i.get("SimRepo") == recipe.image.repository]
        if not seeded:
            raise FleetError(f"{node} holds no {recipe.image.repository} image to run vLLM")
        image = seeded[0]
        config = {**image["Config"], "Entrypoint": [str(vllm), "serve"]}
        fleet.add_image(node, {**image, "Config": config, "SimEngine": False})
        model = fleet.node_dir(node) / "hf-cache" / "hub" / recipe.model.cache_dir_name
        shutil.copytree(model_dir, model / "snapshots" / recipe.model.revision, dirs_exist_ok=True)
        (model / "refs").mkdir(exist_ok=True)
        (model / "refs" / "main").write_text(recipe.model.revision)

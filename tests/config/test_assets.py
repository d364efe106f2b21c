"""Recipes and themes are found in a checkout and, once installed from a wheel, in share/cockpit."""

from __future__ import annotations

from pathlib import Path

from cockpit.assets import SOURCE_ROOT, asset_dir


def test_a_checkout_reads_its_own_folders() -> None:
    assert asset_dir("recipes") == SOURCE_ROOT / "recipes"
    assert (asset_dir("themes") / "cockpit-dark.toml").is_file()


def test_an_install_reads_the_wheels_data_files(tmp_path: Path) -> None:
    site = tmp_path / "lib" / "site-packages"  # no pyproject.toml beside the package
    (site / "recipes").mkdir(parents=True)
    assert asset_dir("recipes", site, str(tmp_path)) == tmp_path / "share" / "cockpit" / "recipes"

"""The package's PEP 517 build backend: writes the pure-Python wheel with the standard library
alone, so `pip install ./python` needs no network and no build tools (Debian 12's venvs have
setuptools but not wheel, which setuptools before 70.1 needs to build any wheel). The metadata
is pyproject.toml's [project] strings; the wheel holds edgelm/*.py and its dist-info."""

import base64
import hashlib
import pathlib
import re
import zipfile

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _project() -> dict:
    """The `key = "value"` lines of pyproject.toml's [project] table."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    table = text.split("[project]", 1)[1].split("\n[", 1)[0]
    return dict(re.findall(r'^([a-z-]+) = "([^"]*)"$', table, re.M))


def _metadata(p: dict) -> str:
    """The dist-info METADATA (core metadata 2.1) of project p."""
    return (f"Metadata-Version: 2.1\nName: {p['name']}\nVersion: {p['version']}\n"
            f"Summary: {p['description']}\nRequires-Python: {p['requires-python']}\n"
            'Provides-Extra: numpy\nRequires-Dist: numpy; extra == "numpy"\n')


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}\n"


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None) -> str:
    """PEP 517: writes NAME-VERSION-py3-none-any.whl into wheel_directory, returns its name."""
    p = _project()
    dist_info = f"{p['name']}-{p['version']}.dist-info"
    files = {f"edgelm/{f.name}": f.read_bytes() for f in sorted((ROOT / "edgelm").glob("*.py"))}
    files[f"{dist_info}/METADATA"] = _metadata(p).encode()
    files[f"{dist_info}/WHEEL"] = (b"Wheel-Version: 1.0\nGenerator: edgelm_build\n"
                                   b"Root-Is-Purelib: true\nTag: py3-none-any\n")
    record = "".join(_record_line(name, data) for name, data in files.items())
    files[f"{dist_info}/RECORD"] = (record + f"{dist_info}/RECORD,,\n").encode()
    wheel = f"{p['name']}-{p['version']}-py3-none-any.whl"
    with zipfile.ZipFile(pathlib.Path(wheel_directory) / wheel, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            z.writestr(name, data)
    return wheel

"""Regenerate the committed Lance protobuf modules (``plugins/lakecore_lance/proto/*_pb2.py``).

Run ``make lance-protos`` (or ``python tools/lance_protos.py``) after editing a ``.proto``
there. It needs ``grpcio-tools`` (protoc for Python), which is NOT a dependency of lakecore:
the target installs it into a scratch directory (``$LANCE_PROTOC_DIR``, default
``/tmp/lakecore-protoc``) and runs it from there, so the venv is left as it was. The protoc
bundled with grpcio-tools must be of the same major version as the ``protobuf`` runtime the
project installs (generated code checks this at import); ``tests/lance/test_protos.py``
checks that the committed modules agree with the ``.proto`` files without protoc.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PLUGINS = ROOT / "plugins"
PROTOS = ("file.proto", "table.proto", "transaction.proto")


def main() -> int:
    """Run protoc on every Lance ``.proto``; returns protoc's exit status."""
    scratch = os.environ.get("LANCE_PROTOC_DIR", "/tmp/lakecore-protoc")
    if not (Path(scratch) / "grpc_tools").is_dir():
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--quiet",
                "--target",
                scratch,
                "grpcio-tools",
            ],
            check=True,
        )
    env = dict(os.environ, PYTHONPATH=scratch)
    sources = [f"lakecore_lance/proto/{name}" for name in PROTOS]
    # grpc_tools.protoc ships the well-known types (google/protobuf/*.proto) itself.
    command = [sys.executable, "-m", "grpc_tools.protoc", f"-I{PLUGINS}"]
    command += [f"--python_out={PLUGINS}", f"--pyi_out={PLUGINS}", *sources]
    return subprocess.run(
        command,
        cwd=PLUGINS,
        env=env,
        check=False,
    ).returncode


if __name__ == "__main__":
    raise SystemExit(main())
